"""The ``/rosapi/*`` services of rosbridge_suite's ``rosapi`` node, served in-process by
:class:`~hardware.rosbridge.server.RosBridgeServer`, and the parameter server behind them.

roslibjs and roslibpy reach the ROS graph only through these services: ``Ros.getTopics`` calls
``/rosapi/topics``, ``Param.get``/``set`` call ``/rosapi/get_param``/``set_param`` (values are
JSON *strings*, as rosapi's ``GetParam``/``SetParam`` messages carry them), and so on. The
answers follow rosapi's service definitions (ROS 1 ``rosapi/srv/*.srv``; field names shared
with ROS 2):

============================  ===========================  ==================================
service                       request                      response
============================  ===========================  ==================================
``/rosapi/topics``            —                            ``topics``, ``types``
``/rosapi/topic_type``        ``topic``                    ``type`` (``""`` if unknown)
``/rosapi/topics_for_type``   ``type``                     ``topics``
``/rosapi/services``          —                            ``services``
``/rosapi/service_type``      ``service``                  ``type`` (``""`` if unknown)
``/rosapi/services_for_type`` ``type``                     ``services``
``/rosapi/publishers``        ``topic``                    ``publishers`` (node names)
``/rosapi/subscribers``       ``topic``                    ``subscribers``
``/rosapi/nodes``             —                            ``nodes``
``/rosapi/get_time``          —                            ``time`` (``secs``, ``nsecs``)
``/rosapi/get_param``         ``name``, ``default``        ``value`` (JSON text)
``/rosapi/set_param``         ``name``, ``value`` (JSON)   —
``/rosapi/has_param``         ``name``                     ``exists``
``/rosapi/delete_param``      ``name``                     —
``/rosapi/search_param``      ``name``                     ``global_name``
``/rosapi/get_param_names``   —                            ``names`` (every leaf)
============================  ===========================  ==================================

Names resolve as in rosapi's node (namespace ``/``): ``a/b`` is ``/a/b``. The parameter tree is
ROS's: setting ``/a/b`` creates the namespace ``/a``; getting ``/a`` returns the dictionary of
its children; deleting ``/a`` removes its subtree. Its size is bounded
(:attr:`ParamServer.max_bytes` of JSON), since any authenticated client may write it.
Message-definition services (``message_details``, ``service_request_details``, ...) need
message definitions this server does not have; they are not offered (a call gets
``result: false``).
"""

from __future__ import annotations

import copy
import json
import time
from typing import TYPE_CHECKING, Any, Callable

from ..errors import HardwareValueError

if TYPE_CHECKING:  # pragma: no cover
    from .server import RosBridgeServer

__all__ = ["ParamServer", "install_rosapi", "NODE_NAME", "ROSAPI_NODE", "resolve_name"]

#: Node name that rosbridge clients' topics and services are registered under (the node name of
#: rosbridge_suite's launch file).
NODE_NAME = "/rosbridge_websocket"
#: Node name of the rosapi services.
ROSAPI_NODE = "/rosapi"


def resolve_name(name: str, node: str = NODE_NAME) -> str:
    """A ROS graph name made global as a node ``node`` in the root namespace resolves it:
    ``x`` → ``/x``, ``~x`` → ``node/x``, ``/x`` unchanged."""
    if name.startswith("/"):
        return name
    if name.startswith("~"):
        return node + "/" + name[1:].lstrip("/")
    return "/" + name


def _arg(args: Any, name: str, pos: int, default: Any = "") -> Any:
    """Field ``name`` of a request (rosbridge accepts args as an object or a positional
    list)."""
    if isinstance(args, dict):
        return args.get(name, default)
    if isinstance(args, list) and len(args) > pos:
        return args[pos]
    return default


def _str_arg(args: Any, name: str, pos: int, default: str = "") -> str:
    v = _arg(args, name, pos, default)
    if not isinstance(v, str):
        raise HardwareValueError(f"field {name!r} must be a string, got {type(v).__name__}")
    return v


def _param_name(args: Any) -> str:
    name = _str_arg(args, "name", 0)
    if not name or "//" in name or any(ch.isspace() for ch in name):
        raise HardwareValueError(f"invalid parameter name {name[:80]!r}")
    return resolve_name(name, ROSAPI_NODE).rstrip("/") or "/"


class ParamServer:
    """ROS's parameter tree (nested dictionaries keyed by namespace), bounded in size.

    Args:
        max_bytes: Largest JSON size of the whole tree [bytes]; a ``set`` that would exceed it
            is refused with :class:`~hardware.errors.HardwareValueError`.
    """

    def __init__(self, max_bytes: int = 1 << 20):
        self.max_bytes = max_bytes
        self._root: dict[str, Any] = {}

    @staticmethod
    def _parts(name: str) -> list[str]:
        return [p for p in resolve_name(name, ROSAPI_NODE).split("/") if p]

    def get(self, name: str, default: Any = None) -> Any:
        """The value (a deep copy) at ``name``, or ``default`` when it does not exist; the
        root ``/`` is the whole tree."""
        node: Any = self._root
        for p in self._parts(name):
            if not isinstance(node, dict) or p not in node:
                return default
            node = node[p]
        return copy.deepcopy(node)

    def has(self, name: str) -> bool:
        """True when ``name`` is a parameter or a namespace holding parameters."""
        sentinel = object()
        return self.get(name, sentinel) is not sentinel

    def set(self, name: str, value: Any) -> None:
        """Set ``name`` to ``value`` (a JSON value; a dict makes a namespace).

        Raises:
            HardwareValueError: the tree would exceed :attr:`max_bytes` of JSON.
        """
        parts = self._parts(name)
        if not parts:
            if not isinstance(value, dict):
                raise HardwareValueError("the root namespace '/' can only be set to a dict")
            new_root = copy.deepcopy(value)
        else:
            new_root = dict(self._root)
            node = new_root
            for p in parts[:-1]:
                child = node.get(p)
                node[p] = dict(child) if isinstance(child, dict) else {}
                node = node[p]
            node[parts[-1]] = copy.deepcopy(value)
        size = len(json.dumps(new_root, allow_nan=True))
        if size > self.max_bytes:
            raise HardwareValueError(f"the parameter server would hold {size} bytes of JSON "
                                     f"(limit {self.max_bytes})")
        self._root = new_root

    def delete(self, name: str) -> None:
        """Remove ``name`` and its subtree (nothing if it does not exist)."""
        parts = self._parts(name)
        if not parts:
            self._root = {}
            return
        node: Any = self._root
        for p in parts[:-1]:
            if not isinstance(node, dict) or p not in node:
                return
            node = node[p]
        if isinstance(node, dict):
            node.pop(parts[-1], None)

    def names(self) -> list[str]:
        """Every leaf parameter's global name, sorted (ROS's ``getParamNames``)."""
        out: list[str] = []

        def walk(prefix: str, node: Any) -> None:
            if isinstance(node, dict) and node:
                for k, v in node.items():
                    walk(f"{prefix}/{k}", v)
            elif prefix:
                out.append(prefix)

        walk("", self._root)
        return sorted(out)


def install_rosapi(server: RosBridgeServer) -> None:
    """Register the ``/rosapi/*`` services of the module docstring on ``server``."""
    params = server.params

    def topics(_args: Any) -> dict[str, Any]:
        table = server.topic_types()
        names = sorted(table)
        return {"topics": names, "types": [table[n] for n in names]}

    def topic_type(args: Any) -> dict[str, Any]:
        topic = resolve_name(_str_arg(args, "topic", 0)) if _arg(args, "topic", 0) else ""
        return {"type": server.topic_types().get(topic, "")}

    def topics_for_type(args: Any) -> dict[str, Any]:
        want = _str_arg(args, "type", 0)
        return {"topics": sorted(t for t, ty in server.topic_types().items() if ty == want)}

    def services(_args: Any) -> dict[str, Any]:
        return {"services": sorted(server.service_types())}

    def service_type(args: Any) -> dict[str, Any]:
        name = _str_arg(args, "service", 0)
        return {"type": server.service_types().get(resolve_name(name), "") if name else ""}

    def services_for_type(args: Any) -> dict[str, Any]:
        want = _str_arg(args, "type", 0)
        return {"services": sorted(s for s, ty in server.service_types().items()
                                   if ty == want)}

    def publishers(args: Any) -> dict[str, Any]:
        topic = resolve_name(_str_arg(args, "topic", 0) or "/")
        return {"publishers": [NODE_NAME] if topic in server.published_topics() else []}

    def subscribers(args: Any) -> dict[str, Any]:
        topic = resolve_name(_str_arg(args, "topic", 0) or "/")
        return {"subscribers": [NODE_NAME] if topic in server.subscribed_topics() else []}

    def nodes(_args: Any) -> dict[str, Any]:
        return {"nodes": sorted([NODE_NAME, ROSAPI_NODE])}

    def get_time(_args: Any) -> dict[str, Any]:
        ns = time.time_ns()
        return {"time": {"secs": ns // 1_000_000_000, "nsecs": ns % 1_000_000_000}}

    def get_param(args: Any) -> dict[str, Any]:
        name = _param_name(args)
        default_text = _str_arg(args, "default", 1)
        default: Any = None
        if default_text != "":  # rosapi: a JSON default, else the text itself
            try:
                default = json.loads(default_text)
            except ValueError:
                default = default_text
        return {"value": json.dumps(params.get(name, default))}

    def set_param(args: Any) -> dict[str, Any]:
        name = _param_name(args)
        text = _str_arg(args, "value", 1)
        try:
            value = json.loads(text)
        except ValueError:
            raise HardwareValueError("the value argument to set_param must be a "
                                     "JSON-formatted string") from None
        params.set(name, value)
        return {}

    def has_param(args: Any) -> dict[str, Any]:
        return {"exists": params.has(_param_name(args))}

    def delete_param(args: Any) -> dict[str, Any]:
        params.delete(_param_name(args))
        return {}

    def search_param(args: Any) -> dict[str, Any]:
        name = _param_name(args)
        return {"global_name": name if params.has(name) else ""}

    def get_param_names(_args: Any) -> dict[str, Any]:
        return {"names": params.names()}

    table: dict[str, tuple[str, Callable[[Any], dict[str, Any]]]] = {
        "topics": ("rosapi/Topics", topics),
        "topic_type": ("rosapi/TopicType", topic_type),
        "topics_for_type": ("rosapi/TopicsForType", topics_for_type),
        "services": ("rosapi/Services", services),
        "service_type": ("rosapi/ServiceType", service_type),
        "services_for_type": ("rosapi/ServicesForType", services_for_type),
        "publishers": ("rosapi/Publishers", publishers),
        "subscribers": ("rosapi/Subscribers", subscribers),
        "nodes": ("rosapi/Nodes", nodes),
        "get_time": ("rosapi/GetTime", get_time),
        "get_param": ("rosapi/GetParam", get_param),
        "set_param": ("rosapi/SetParam", set_param),
        "has_param": ("rosapi/HasParam", has_param),
        "delete_param": ("rosapi/DeleteParam", delete_param),
        "search_param": ("rosapi/SearchParam", search_param),
        "get_param_names": ("rosapi/GetParamNames", get_param_names),
    }
    for name, (srv_type, handler) in table.items():
        server.add_service(f"/rosapi/{name}", handler, srv_type)
