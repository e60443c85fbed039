"""A small rosbridge v2 protocol server (asyncio + :mod:`websockets`) for rehearsals and tests.

It speaks the rosbridge v2 protocol as rosbridge_suite's ``rosbridge_server`` does for every op
that roslibjs and roslibpy send, checked with both real clients
(``tests/test_rosbridge_conformance.py``; the differences that remain are listed in
``docs/deployment.md``):

* topics: ``advertise`` / ``unadvertise`` / ``publish`` / ``subscribe`` / ``unsubscribe``,
  with ``throttle_rate`` [ms] and ``queue_length`` (rosbridge's throttle and queue handlers,
  :class:`_Delivery`), ``latch`` (a new subscriber gets the last message of a latched topic)
  and relative names (``chatter`` is ``/chatter``, ``~x`` is ``/rosbridge_websocket/x``; a
  subscriber gets messages under the name it subscribed with, as rosbridge sends them);
* services: ``call_service`` answered by services registered in-process
  (:meth:`RosBridgeServer.add_service`), by the ``/rosapi/*`` services
  (:mod:`hardware.rosbridge.rosapi`: topics, types, services, parameters, time) or by another
  client that offered it with ``advertise_service`` (the server forwards the request, the
  provider's ``service_response`` goes back to the caller; ``unadvertise_service``);
* ``fragment``: a client may send any message cut into fragments (reassembled in ``num``
  order, bounded in count, bytes and time); a client that sets ``fragment_size`` (in any
  message, as rosbridge reads it) gets messages longer than that as ``fragment`` ops;
* ``auth`` (rosauth MAC), ``set_level`` (which ``status`` levels a client gets: ``none``,
  ``error`` — the default —, ``warning``, ``info``).

Messages are routed between websocket clients and in-process endpoints: the simulated robot
registers ``on_publish`` handlers for the command topics and publishes its state with
:meth:`RosBridgeServer.publish`.

Security and robustness (:class:`ServerOptions`):

* binds 127.0.0.1 by default; the websocket handshake's ``Origin`` header must be absent
  (non-browser clients) or in ``allowed_origins`` (default: none), else HTTP 403;
* with a shared secret (``auth_secret``), every client must first send a rosauth-compatible
  ``auth`` op (:mod:`hardware.rosbridge.auth`); until then every other op is refused with a
  ``status`` error (nothing can be read or commanded); ``max_auth_failures`` wrong attempts
  close the connection (1008); a MAC is accepted once (replays refused);
* every malformed or refused message is answered with a ``status`` op (level ``error``, a
  ``msg`` naming the problem, the request's ``id`` echoed), counted and logged (sparsely under
  a flood); a handler exception is caught and answered too, never a dropped connection
  (rosbridge_suite only logs these: its clients hear nothing);
* memory is bounded: frames above ``max_frame_bytes`` close the connection (1009, by
  websockets), messages above ``max_message_bytes`` (reassembled fragments included) are
  refused, topic names are at most ``max_topic_length`` characters, a client holds at most
  ``max_topics_per_client`` subscriptions + advertisements + services, the server knows at
  most ``max_topics`` topic types (a client's topics are forgotten when it leaves), at most
  ``max_clients`` connections; outgoing data are bounded per client (drop-oldest) and replies
  (status, service responses) too — the server stops reading a client whose replies it does
  not read; partial fragmented messages, pending service calls and the parameter tree are
  bounded too;
* ``advertise`` needs a type, ``publish`` needs a topic whose type is known (advertised by
  someone, or an in-process endpoint), as rosbridge, which cannot infer an unknown type;
* non-finite floats are sent as JSON ``null`` (as rosbridge does; ``NaN`` is not JSON);
* an in-process publish handler that raises :class:`~hardware.errors.MessageError` makes
  the server answer the publishing client with a ``status`` error (the robot-side guard's
  rejections are not silent); client-offered services cannot replace in-process ones.

Each client has its own writer task, so a slow client never stalls the simulation or other
clients. ``pause_reading`` stops reading from clients, to rehearse a slow consumer.

All methods that mutate state run on the server's event loop; use ``ServerThread.call`` from
other threads.
"""

from __future__ import annotations

import asyncio
import collections
import json
import logging
import math
import re
import threading
import time
from dataclasses import dataclass
from typing import Any, Awaitable, Callable

from c3mpc._json import finite_or_none

from ..config import LoadableOptions
from ..errors import BridgeError, HardwareValueError, MessageError
from . import auth as _auth
from .rosapi import ParamServer, install_rosapi, resolve_name

__all__ = ["ClientStats", "ServerOptions", "RosBridgeServer", "ServerThread", "encode"]

LOGGER = logging.getLogger("hardware.rosbridge.server")

PublishHandler = Callable[[dict[str, Any], float], None]
ServiceHandler = Callable[[dict[str, Any]], dict[str, Any]]

_TOPIC_RE = re.compile(r"^/?[A-Za-z_~][A-Za-z0-9_/~]*$")
_TYPE_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_]*/(msg/|srv/)?[A-Za-z][A-Za-z0-9_]*$")
_LEVELS = ("none", "error", "warning", "info")


@dataclass(frozen=True)
class ServerOptions(LoadableOptions):
    """Security and resource limits of :class:`RosBridgeServer` (the shared secret itself is
    passed separately, never stored in options that get logged)."""

    allowed_origins: tuple[str, ...] = ()
    """Browser origins allowed to connect (e.g. ``"http://localhost:8080"``); clients that
    send no ``Origin`` header (roslibpy, scripts) are always allowed. Default: none."""
    auth_time_tolerance: float = 5.0
    """Largest |t − server clock| of an ``auth`` request [s] (rosauth's allowed_time_delta)."""
    max_auth_failures: int = 3
    """Wrong ``auth`` attempts after which the connection is closed (1008)."""
    max_message_bytes: int = 1 << 20
    """Largest accepted message [bytes]; larger ones are refused with a status."""
    max_frame_bytes: int = 2 << 20
    """Largest websocket frame [bytes]; larger ones close the connection (1009)."""
    max_client_buffer_bytes: int = 16 << 20
    """Outgoing data buffered for one client [bytes] (its queue and throttle queues); the
    oldest is dropped beyond it. A client's memory is bounded by about
    ``max_incoming_queue × max_frame_bytes + max_client_buffer_bytes`` plus its replies."""
    max_topic_length: int = 256
    """Longest topic (or service) name [characters]."""
    max_topics_per_client: int = 64
    """Subscriptions + advertisements one client may hold."""
    max_topics: int = 1024
    """Topic types the server keeps at most (in-process ones included)."""
    max_clients: int = 32
    """Simultaneous connections; more are closed at once (1013, try again later)."""
    reply_queue_size: int = 256
    """Replies (status, service responses) waiting for one client before the server stops
    reading from it."""
    fragment_timeout: float = 600.0
    """Seconds after its last fragment that an incomplete fragmented message is dropped
    (rosbridge's ``fragment_timeout``)."""
    max_fragmented_messages: int = 16
    """Fragmented messages one client may have in reassembly at once."""
    min_fragment_size: int = 64
    """Smallest ``fragment_size`` a client may ask for [characters] (smaller ones would cost
    more in fragment headers than they carry)."""
    service_timeout: float = 10.0
    """Seconds a call to a client-offered service waits for the provider's answer (unless the
    call gives its own ``timeout``); then the caller gets ``result: false``."""
    max_pending_calls: int = 64
    """Calls to client-offered services one client may have waiting."""
    max_param_bytes: int = 1 << 20
    """Largest JSON size of the parameter tree behind ``/rosapi/set_param`` [bytes]."""
    rosapi: bool = True
    """Serve the ``/rosapi/*`` services (:mod:`hardware.rosbridge.rosapi`), as rosbridge's
    launch file starts the rosapi node next to the server."""

    def __post_init__(self) -> None:
        if isinstance(self.allowed_origins, list):
            object.__setattr__(self, "allowed_origins", tuple(self.allowed_origins))
        if not isinstance(self.allowed_origins, tuple) or not all(
                isinstance(o, str) and o for o in self.allowed_origins):
            raise HardwareValueError(f"ServerOptions.allowed_origins must be a list of origin "
                                     f"strings, got {self.allowed_origins!r}")
        v = self.auth_time_tolerance
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not (
                math.isfinite(v) and v > 0):
            raise HardwareValueError(f"ServerOptions.auth_time_tolerance must be a positive "
                                     f"number of seconds, got {v!r}")
        for name in ("fragment_timeout", "service_timeout"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not (
                    math.isfinite(v) and v > 0):
                raise HardwareValueError(f"ServerOptions.{name} must be a positive number of "
                                         f"seconds, got {v!r}")
        if not isinstance(self.rosapi, bool):
            raise HardwareValueError(f"ServerOptions.rosapi must be a boolean, got "
                                     f"{self.rosapi!r}")
        for name in ("max_auth_failures", "max_message_bytes", "max_frame_bytes",
                     "max_client_buffer_bytes",
                     "max_topic_length", "max_topics_per_client", "max_topics", "max_clients",
                     "reply_queue_size", "max_fragmented_messages", "min_fragment_size",
                     "max_pending_calls", "max_param_bytes"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise HardwareValueError(f"ServerOptions.{name} must be an int >= 1, got {v!r}")


def encode(obj: Any) -> str:
    """Strict JSON text of ``obj``: non-finite floats become ``null``, as rosbridge sends
    them (Python's default ``NaN``/``Infinity`` tokens are not JSON: roslibjs cannot parse
    them)."""
    try:
        return json.dumps(obj, allow_nan=False)
    except ValueError:
        return json.dumps(finite_or_none(obj), allow_nan=False)


@dataclass(frozen=True)
class ClientStats:
    """Traffic of one connected client."""

    peer: str
    received: int
    sent: int
    dropped: int
    subscriptions: tuple[str, ...]
    authenticated: bool = True
    statuses: int = 0
    """Status errors/warnings sent to this client."""


class _Partial:
    """A fragmented message in reassembly."""

    __slots__ = ("total", "parts", "nbytes", "cost", "t_last")

    def __init__(self, total: int, now: float):
        self.total = total
        self.parts: dict[int, str] = {}
        self.nbytes = 0  # characters of data received
        self.cost = 0  # bytes charged to the client's budget (data + per-fragment overhead)
        self.t_last = now


class _Client:
    def __init__(self, ws: Any, queue_size: int, authenticated: bool,
                 budget: int = 16 << 20):
        self.ws = ws
        self.peer = str(getattr(ws, "remote_address", "?"))
        self.queue: collections.deque[str] = collections.deque()  # data (publish), drop-oldest
        self.replies: collections.deque[str] = collections.deque()  # status, service responses
        self.queue_size = queue_size
        self.budget = budget  # bytes of outgoing data (queue + throttle queues)
        self.buffered = 0
        self.ready = asyncio.Event()
        self.drained = asyncio.Event()
        self.drained.set()
        # resolved topic -> name as the client spelled it -> subscription id -> (throttle
        # [ms], queue_length); messages go out under the spelled name, as rosbridge sends them
        self.subs: dict[str, dict[str, dict[Any, tuple[int, int]]]] = {}
        self.delivery: dict[str, _Delivery] = {}  # per spelled name
        self.advertised: set[str] = set()
        self.services: set[str] = set()  # resolved names of services this client offers
        self.pending_calls = 0  # its calls waiting for a client-offered service
        self.partial: dict[Any, _Partial] = {}  # fragmented messages in reassembly, by id
        self.partial_bytes = 0
        self.fragment_size: int | None = None  # fragment outgoing messages longer than this
        self.fragment_seq = 0
        self.level = "error"  # set_level: the least severe status level sent
        self.authenticated = authenticated
        self.auth_failures = 0
        self.received = 0
        self.sent = 0
        self.dropped = 0
        self.statuses = 0
        self.closing = False

    def enqueue(self, text: str) -> None:
        """Queue outgoing data; drop the oldest beyond ``queue_size`` messages or
        ``budget`` bytes (data waiting in throttle queues included)."""
        self.queue.append(text)
        self.buffered += len(text)
        while len(self.queue) > self.queue_size or (self.buffered > self.budget
                                                    and len(self.queue) > 1):
            self.buffered -= len(self.queue.popleft())
            self.dropped += 1
        self.ready.set()

    def take(self) -> str:
        """The next message for the writer: replies first."""
        if self.replies:
            return self.replies.popleft()
        text = self.queue.popleft()
        self.buffered -= len(text)
        return text

    def reply(self, text: str) -> None:
        self.replies.append(text)
        self.ready.set()

    def n_topics(self) -> int:
        return len(self.subs.keys() | self.advertised) + len(self.services)

    def fragments(self, text: str) -> list[str]:
        """``text`` as rosbridge ``fragment`` ops of at most :attr:`fragment_size` characters
        of data each (``[text]`` when it fits)."""
        size = self.fragment_size
        if size is None or len(text) <= size:
            return [text]
        self.fragment_seq += 1
        total = -(-len(text) // size)
        return [json.dumps({"op": "fragment", "id": self.fragment_seq,
                            "data": text[i * size:(i + 1) * size], "num": i, "total": total})
                for i in range(total)]


_LEVEL_RANK = {"none": 0, "error": 1, "warning": 2, "info": 3}


@dataclass
class _Call:
    """A call to a client-offered service, waiting for the provider's ``service_response``."""

    caller: _Client
    caller_id: Any
    spelled: str  # the service name as the caller spelled it (echoed in the response)
    service: str  # resolved name
    provider: _Client
    timer: asyncio.TimerHandle | None = None


class _Delivery:
    """rosbridge's per-topic delivery to one client: with ``throttle`` [s] > 0, at most one
    message per ``throttle``; ``queue_length`` 0 drops the messages inside the interval
    (rosbridge's ThrottleMessageHandler), > 0 keeps the newest ``queue_length`` and sends them
    one per interval (its QueueMessageHandler). Of several subscriptions of one client to a
    topic, the smallest throttle and the smallest queue apply, as in rosbridge
    (``Subscription.update_params``)."""

    def __init__(self) -> None:
        self.throttle = 0.0
        self.queue_length = 0
        self.pending: collections.deque[str] = collections.deque(maxlen=1)
        self.last = -math.inf
        self.timer: asyncio.TimerHandle | None = None

    def configure(self, subs: dict[Any, tuple[int, int]]) -> None:
        self.throttle = min(t for t, _ in subs.values()) / 1000.0
        q = min(n for _, n in subs.values())
        if q != self.pending.maxlen:
            self.pending = collections.deque(self.pending, maxlen=max(q, 1))
        self.queue_length = q

    def offer(self, c: _Client, text: str, loop: asyncio.AbstractEventLoop | None) -> None:
        now = time.monotonic()
        if self.throttle <= 0 or (now - self.last >= self.throttle and not self.pending):
            self.last = now
            c.enqueue(text)
            return
        if self.queue_length == 0 or loop is None:
            c.dropped += 1  # inside the throttle interval: rosbridge drops it
            return
        if len(self.pending) == self.pending.maxlen:
            c.buffered -= len(self.pending[0])
            c.dropped += 1
        if c.buffered + len(text) > c.budget:  # over the client's byte budget: drop it
            c.dropped += 1
            return
        self.pending.append(text)
        c.buffered += len(text)
        if self.timer is None:
            self.timer = loop.call_at(loop.time() + max(0.0, self.last + self.throttle - now),
                                      self._flush, c, loop)

    def _flush(self, c: _Client, loop: asyncio.AbstractEventLoop) -> None:
        self.timer = None
        if not self.pending:
            return
        self.last = time.monotonic()
        text = self.pending.popleft()
        c.buffered -= len(text)
        c.enqueue(text)
        if self.pending:
            self.timer = loop.call_at(loop.time() + self.throttle, self._flush, c, loop)

    def cancel(self, c: _Client | None = None) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        if c is not None:
            c.buffered -= sum(len(x) for x in self.pending)
        self.pending.clear()


class RosBridgeServer:
    """rosbridge v2 server on ``ws://host:port`` (port 0 picks a free port).

    Args:
        host: Interface to bind; loopback by default (this is a rehearsal tool).
        port: TCP port; 0 lets the OS pick one (read it back from :attr:`port`).
        client_queue_size: Bound of each client's outgoing data queue [messages].
        max_incoming_queue: Frames websockets buffers per client before it stops reading the
            socket (its ``max_queue``).
        options: Security and resource limits (:class:`ServerOptions`).
        auth_secret: Shared secret of the rosauth MAC (:mod:`hardware.rosbridge.auth`);
            None: no authentication (any local client may read and command).
    """

    def __init__(self, host: str = "127.0.0.1", port: int = 0, *, client_queue_size: int = 64,
                 max_incoming_queue: int = 16, options: ServerOptions | None = None,
                 auth_secret: str | None = None):
        if not isinstance(port, int) or isinstance(port, bool) or not 0 <= port < 65536:
            raise HardwareValueError(f"port must be an int in [0, 65535], got {port!r}")
        if auth_secret is not None and (not isinstance(auth_secret, str)
                                        or len(auth_secret) < _auth.MIN_SECRET_LENGTH):
            raise HardwareValueError(f"auth_secret must be a string of at least "
                                     f"{_auth.MIN_SECRET_LENGTH} characters")
        self.host = host
        self._requested_port = port
        self.client_queue_size = client_queue_size
        self.max_incoming_queue = max_incoming_queue
        self.options = options or ServerOptions()
        self._secret = auth_secret
        self._used_macs: collections.OrderedDict[str, float] = collections.OrderedDict()
        self._server: Any = None
        self._clients: set[_Client] = set()
        self._types: dict[str, str] = {}
        self._inprocess: set[str] = set()  # topics advertised or handled in-process
        self._latch_topics: set[str] = set()  # advertised with latch: true
        self._latched: dict[str, str] = {}  # topic -> last message (JSON), latched topics
        self._handlers: dict[str, list[PublishHandler]] = collections.defaultdict(list)
        self._services: dict[str, ServiceHandler] = {}
        self._service_types: dict[str, str] = {}
        # client-offered services: resolved name -> (provider, type, name as it spelled it)
        self._client_services: dict[str, tuple[_Client, str, str]] = {}
        self._calls: dict[str, _Call] = {}  # forwarded calls waiting for a service_response
        self._call_seq = 0
        self._inprocess_pub: set[str] = set()  # topics advertised in-process
        self._reading = asyncio.Event()
        self._reading.set()
        self.received_by_topic: collections.Counter[str] = collections.Counter()
        self.errors: collections.deque[str] = collections.deque(maxlen=200)
        """The newest 200 status messages sent (all clients)."""
        self.status_count = 0
        """Status errors/warnings raised since the start (sent, or muted by the client's
        ``set_level``)."""
        self.rejected_handshakes = 0
        """Connections refused before or at the handshake (Origin, too many clients)."""
        self.port: int = 0
        self.loop: asyncio.AbstractEventLoop | None = None
        self.params = ParamServer(self.options.max_param_bytes)
        """The parameter server behind ``/rosapi/get_param`` etc. (read and set it
        in-process too)."""
        if self.options.rosapi:
            install_rosapi(self)

    @property
    def url(self) -> str:
        """``ws://host:port`` of the running server."""
        return f"ws://{self.host}:{self.port}"

    @property
    def auth_required(self) -> bool:
        """True when clients must authenticate."""
        return self._secret is not None

    # -- lifecycle ----------------------------------------------------------------------
    async def start(self) -> None:
        """Bind and start accepting clients."""
        from websockets.asyncio.server import serve

        self.loop = asyncio.get_running_loop()
        o = self.options
        self._server = await serve(self._handle, self.host, self._requested_port,
                                   max_queue=self.max_incoming_queue, compression=None,
                                   ping_interval=None, max_size=o.max_frame_bytes,
                                   origins=[None, *o.allowed_origins],
                                   process_response=self._on_handshake_response)
        self.port = self._server.sockets[0].getsockname()[1]
        LOGGER.info("rosbridge server listening on %s (auth %s, origins %s)", self.url,
                    "on" if self.auth_required else "off", list(o.allowed_origins) or "none")

    def _on_handshake_response(self, _conn: Any, request: Any, response: Any) -> None:
        if response.status_code != 101:
            self.rejected_handshakes += 1
            LOGGER.warning("refused a websocket handshake (HTTP %d, Origin %r)",
                           response.status_code, request.headers.get("Origin"))

    async def stop(self) -> None:
        """Close every connection (code 1001) and stop listening."""
        if self._server is None:
            return
        self._reading.set()
        self._server.close()
        await self._server.wait_closed()
        self._server = None
        self._clients.clear()
        LOGGER.info("rosbridge server on %s stopped", self.url)

    # -- in-process endpoints -----------------------------------------------------------
    def advertise(self, topic: str, message_type: str) -> None:
        """Declare an in-process publisher of ``topic``."""
        self._types[topic] = message_type
        self._inprocess.add(topic)
        self._inprocess_pub.add(topic)

    def publish(self, topic: str, msg: dict[str, Any]) -> int:
        """Send ``msg`` to every client subscribed to ``topic`` and to in-process handlers.

        Returns:
            The number of client subscriptions it was queued for.
        """
        return self._route(topic, msg, time.monotonic())

    def on_publish(self, topic: str, message_type: str, handler: PublishHandler) -> None:
        """Call ``handler(msg, t_receive)`` (on the loop) for every message on ``topic``; a
        :class:`~hardware.errors.MessageError` it raises is answered to the publishing client
        with a status error."""
        self._types[topic] = message_type
        self._inprocess.add(topic)
        self._handlers[topic].append(handler)

    def add_service(self, name: str, handler: ServiceHandler, service_type: str = "") -> None:
        """Serve ``call_service`` requests for ``name``: ``handler(args) -> values``
        (``service_type``, e.g. ``"std_srvs/Trigger"``, is what ``/rosapi/service_type``
        reports). An exception in ``handler`` answers the caller with ``result: false`` and
        its message."""
        self._services[name] = handler
        self._service_types[name] = service_type

    def pause_reading(self, paused: bool) -> None:
        """Stop (True) or resume (False) reading messages from clients."""
        if paused:
            self._reading.clear()
        else:
            self._reading.set()

    def client_stats(self) -> list[ClientStats]:
        """Per-client traffic counters."""
        return [ClientStats(c.peer, c.received, c.sent, c.dropped, tuple(sorted(c.subs)),
                            c.authenticated, c.statuses) for c in self._clients]

    @property
    def n_clients(self) -> int:
        """Number of connected clients."""
        return len(self._clients)

    @property
    def n_topics(self) -> int:
        """Topic types the server currently keeps (bounded by ``max_topics``)."""
        return len(self._types)

    # -- the graph, as rosapi reports it ------------------------------------------------
    def topic_types(self) -> dict[str, str]:
        """Every topic with a publisher or a subscriber (in-process or a client) and its type
        (``""`` while unknown: subscribed before anyone advertised it)."""
        out = dict(self._types)
        for c in self._clients:
            for topic in c.subs:
                out.setdefault(topic, "")
        return out

    def service_types(self) -> dict[str, str]:
        """Every service (in-process, rosapi and client-offered) and its type."""
        out = dict(self._service_types)
        out.update({name: ty for name, (_, ty, _) in self._client_services.items()})
        return out

    def published_topics(self) -> set[str]:
        """Topics that an in-process endpoint or a client advertised."""
        out = set(self._inprocess_pub)
        for c in self._clients:
            out |= c.advertised
        return out

    def subscribed_topics(self) -> set[str]:
        """Topics that an in-process handler or a client subscribed to."""
        out = {t for t, hs in self._handlers.items() if hs}
        for c in self._clients:
            out |= c.subs.keys()
        return out

    # -- protocol -----------------------------------------------------------------------
    def _route(self, topic: str, msg: dict[str, Any], t: float,
               sender: _Client | None = None, op_id: Any = None) -> int:
        self.received_by_topic[topic] += 1
        for h in self._handlers.get(topic, ()):
            try:
                h(msg, t)
            except MessageError as e:  # the robot-side guard refused it: tell the sender
                if sender is not None:
                    self._status(sender, "error", f"publish {topic}: rejected by the robot: "
                                 f"{e.reason}", op_id)
            except Exception as e:  # a faulty handler must not kill the connection
                LOGGER.exception("handler of %s failed", topic)
                if sender is not None:
                    self._status(sender, "error", f"publish {topic}: handler failed: "
                                 f"{type(e).__name__}", op_id)
        if topic in self._latch_topics:
            self._latched[topic] = encode(msg)
        n = 0
        texts: dict[str, str] = {}  # one encoding per spelling of the topic
        for c in self._clients:
            names = c.subs.get(topic)
            if not c.authenticated or not names:
                continue
            for name in names:
                text = texts.get(name)
                if text is None:
                    text = texts[name] = encode({"op": "publish", "topic": name, "msg": msg})
                d = c.delivery.get(name)
                if d is None:
                    c.enqueue(text)
                else:
                    d.offer(c, text, self.loop)
                n += 1
        return n

    def _status(self, c: _Client, level: str, msg: str, op_id: Any = None) -> None:
        """Answer ``c`` with a ``status`` op if its ``set_level`` lets ``level`` through;
        errors and warnings are counted and logged whether sent or not."""
        if level != "info":
            self.errors.append(msg)
            self.status_count += 1
            c.statuses += 1
            if c.statuses <= 10 or c.statuses % 100 == 0:  # a flood is logged sparsely
                LOGGER.warning("client %s (status #%d): %s", c.peer, c.statuses, msg)
        if _LEVEL_RANK[level] > _LEVEL_RANK[c.level]:
            return
        out: dict[str, Any] = {"op": "status", "level": level, "msg": msg}
        if op_id is not None:
            out["id"] = op_id
        c.reply(encode(out))

    def _topic(self, c: _Client, m: dict[str, Any], op: str, op_id: Any,
               key: str = "topic") -> tuple[str, str] | None:
        """The request's valid name as given and resolved (``chatter`` → ``/chatter``), or
        None (status sent)."""
        topic = m.get(key)
        if not isinstance(topic, str) or not topic:
            self._status(c, "error", f"{op}: missing or non-string {key!r}", op_id)
            return None
        if len(topic) > self.options.max_topic_length:
            self._status(c, "error", f"{op}: {key} name of {len(topic)} characters (limit "
                         f"{self.options.max_topic_length})", op_id)
            return None
        if not _TOPIC_RE.match(topic) or "//" in topic:
            self._status(c, "error", f"{op}: invalid {key} name {topic[:80]!r}", op_id)
            return None
        return topic, resolve_name(topic)

    def _register_type(self, c: _Client, topic: str, mtype: Any, op: str, op_id: Any) -> bool:
        """Check ``mtype`` against the topic's known type, remembering it; status if not."""
        known = self._types.get(topic)
        if mtype in (None, ""):
            if op == "advertise":
                self._status(c, "error", f"advertise {topic}: missing 'type'", op_id)
                return False
            return True  # subscribe without a type: take the topic's
        if not isinstance(mtype, str) or len(mtype) > 256 or not _TYPE_RE.match(mtype):
            self._status(c, "error", f"{op} {topic}: invalid type {str(mtype)[:80]!r}", op_id)
            return False
        if known is not None and known != mtype:
            verb = "cannot advertise" if op == "advertise" else "cannot subscribe"
            self._status(c, "error", f"{topic} is already {known}, {verb} as {mtype}", op_id)
            return False
        if known is None:
            if len(self._types) >= self.options.max_topics:
                self._status(c, "error", f"{op} {topic}: the server's topic table is full "
                             f"({self.options.max_topics})", op_id)
                return False
            self._types[topic] = mtype
        return True

    def _release(self, topic: str) -> None:
        """Forget ``topic``'s type when no client and no in-process endpoint uses it."""
        if topic in self._inprocess:
            return
        if any(topic in c.subs or topic in c.advertised for c in self._clients):
            return
        self._types.pop(topic, None)
        self.received_by_topic.pop(topic, None)
        self._latch_topics.discard(topic)
        self._latched.pop(topic, None)

    def _dispatch(self, c: _Client, text: str | bytes) -> None:
        try:
            self._dispatch_unsafe(c, text)
        except Exception as e:  # a bug or an unforeseen input: answer, log, keep serving
            LOGGER.exception("client %s: handling a message failed", c.peer)
            self._status(c, "error", f"internal error handling the message: "
                         f"{type(e).__name__}: {e}"[:200])

    def _dispatch_unsafe(self, c: _Client, text: str | bytes, reassembled: bool = False
                         ) -> None:
        o = self.options
        if len(text) > o.max_message_bytes:
            self._status(c, "error", f"message of {len(text)} bytes refused (limit "
                         f"{o.max_message_bytes})")
            return
        try:
            m = json.loads(text)
        except (ValueError, TypeError, RecursionError):
            self._status(c, "error", f"malformed rosbridge message (not JSON): "
                         f"{str(text)[:80]!r}")
            return
        if not isinstance(m, dict) or not isinstance(m.get("op"), str):
            self._status(c, "error", f"malformed rosbridge message (no 'op' string): "
                         f"{str(text)[:80]!r}")
            return
        op = m["op"]
        op_id = m.get("id")
        if op_id is not None and (isinstance(op_id, bool) or not isinstance(op_id, (str, int))
                                  or len(str(op_id)) > 256):
            self._status(c, "error", f"{op}: 'id' must be a string or an integer of at most "
                         "256 characters")
            return
        if not c.authenticated:
            if op == "auth":
                self._authenticate(c, m, op_id)
            elif op == "fragment" and not reassembled:
                self._status(c, "error", "fragment: not authenticated (send the 'auth' op "
                             "first, unfragmented)", op_id)
            else:
                self._status(c, "error", f"{op}: not authenticated (send the 'auth' op "
                             "first)", op_id)
            return
        if "fragment_size" in m:  # rosbridge reads it from any message
            fs = m["fragment_size"]
            if fs is not None and (isinstance(fs, bool) or not isinstance(fs, int)
                                   or not o.min_fragment_size <= fs <= o.max_message_bytes):
                self._status(c, "error", f"{op}: 'fragment_size' must be null or an integer in "
                             f"[{o.min_fragment_size}, {o.max_message_bytes}]", op_id)
                return
            c.fragment_size = fs
        if op == "auth":
            self._status(c, "warning", "auth: " + ("already authenticated" if self.auth_required
                                                   else "authentication is not enabled on "
                                                   "this server; ignored"), op_id)
        elif op in ("advertise", "subscribe"):
            names = self._topic(c, m, op, op_id)
            if names is None:
                return
            spelled, topic = names
            new = topic not in c.subs and topic not in c.advertised
            if new and c.n_topics() >= o.max_topics_per_client:
                self._status(c, "error", f"{op} {topic}: this client already holds "
                             f"{o.max_topics_per_client} topics", op_id)
                return
            if op == "advertise":
                latch = m.get("latch", False)
                if not isinstance(latch, bool):
                    self._status(c, "error", f"advertise {topic}: 'latch' must be a boolean",
                                 op_id)
                    return
                if not self._register_type(c, topic, m.get("type"), op, op_id):
                    return
                c.advertised.add(topic)
                if latch:
                    self._latch_topics.add(topic)
                self._status(c, "info", f"advertised {topic}", op_id)
            else:
                self._subscribe(c, m, spelled, topic, op_id)
        elif op == "unadvertise":
            names = self._topic(c, m, op, op_id)
            if names is not None:
                c.advertised.discard(names[1])
                self._release(names[1])
                self._status(c, "info", f"unadvertised {names[1]}", op_id)
        elif op == "unsubscribe":
            names = self._topic(c, m, op, op_id)
            if names is None:
                return
            spelled, topic = names
            spellings = c.subs.get(topic, {})
            ids = spellings.get(spelled, {})
            ids.pop(op_id if op_id is not None else spelled, None)
            if not ids or op_id is None:
                spellings.pop(spelled, None)
            self._configure_delivery(c, spelled, ids if spelled in spellings else None)
            if not spellings:
                c.subs.pop(topic, None)
                self._release(topic)
            self._status(c, "info", f"unsubscribed from {spelled}", op_id)
        elif op == "publish":
            names = self._topic(c, m, op, op_id)
            if names is None:
                return
            topic = names[1]
            msg = m.get("msg", {})  # rosbridge publishes a default message without 'msg'
            if not isinstance(msg, dict):
                self._status(c, "error", f"publish {topic}: 'msg' must be an object", op_id)
                return
            if topic not in self._types:
                self._status(c, "error", f"publish {topic}: unknown topic (cannot infer its "
                             "type: advertise it first)", op_id)
                return
            if m.get("latch") is True:  # rosbridge: the publish op may latch its publisher
                self._latch_topics.add(topic)
            self._route(topic, msg, time.monotonic(), c, op_id)
        elif op == "call_service":
            self._call_service(c, m, op_id)
        elif op == "advertise_service":
            self._advertise_service(c, m, op_id)
        elif op == "unadvertise_service":
            names = self._topic(c, m, op, op_id, key="service")
            if names is None:
                return
            if names[1] not in c.services:
                self._status(c, "error", f"unadvertise_service {names[1]}: this client does "
                             "not offer it", op_id)
                return
            self._drop_service(names[1])
            self._status(c, "info", f"unadvertised service {names[1]}", op_id)
        elif op == "service_response":
            self._service_response(c, m, op_id)
        elif op == "fragment":
            if reassembled:
                self._status(c, "error", "fragment: a reassembled message cannot itself be a "
                             "fragment", op_id)
            else:
                self._fragment(c, m, op_id)
        elif op == "set_level":
            level = m.get("level")
            if not isinstance(level, str) or level not in _LEVEL_RANK:
                self._status(c, "error", f"set_level: level must be one of {list(_LEVELS)}",
                             op_id)
            else:
                c.level = level
        else:
            self._status(c, "error", f"unsupported op {op[:40]!r}", op_id)

    def _subscribe(self, c: _Client, m: dict[str, Any], spelled: str, topic: str,
                   op_id: Any) -> None:
        o = self.options
        qos = {}
        for key in ("throttle_rate", "queue_length"):
            v = m.get(key, 0)
            if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v <= 3_600_000:
                self._status(c, "error", f"subscribe {topic}: {key!r} must be an "
                             "integer >= 0", op_id)
                return
            qos[key] = v
        if qos["queue_length"] > 1000:
            self._status(c, "error", f"subscribe {topic}: queue_length above 1000", op_id)
            return
        compression = m.get("compression", "none")
        if not isinstance(compression, str):
            self._status(c, "error", f"subscribe {topic}: 'compression' must be a string",
                         op_id)
            return
        if not self._register_type(c, topic, m.get("type"), "subscribe", op_id):
            return
        spellings = c.subs.setdefault(topic, {})
        new_name = spelled not in spellings
        ids = spellings.setdefault(spelled, {})
        key = op_id if op_id is not None else spelled
        if key not in ids and len(ids) >= o.max_topics_per_client:
            self._status(c, "error", f"subscribe {topic}: too many subscriptions", op_id)
            if not ids:
                spellings.pop(spelled)
            return
        ids[key] = (qos["throttle_rate"], qos["queue_length"])
        self._configure_delivery(c, spelled, ids)
        latched = self._latched.get(topic)
        if latched is not None and new_name:
            c.enqueue(f'{{"op": "publish", "topic": {json.dumps(spelled)}, "msg": {latched}}}')
        if topic not in self._types:
            self._status(c, "warning", f"subscribe {topic}: unknown topic without a type; "
                         "waiting for it to be advertised", op_id)
        elif compression not in ("none", ""):
            self._status(c, "warning", f"subscribe {topic}: compression {compression[:20]!r} "
                         "is not supported; sending JSON", op_id)
        else:
            self._status(c, "info", f"subscribed to {spelled}", op_id)

    @staticmethod
    def _configure_delivery(c: _Client, name: str,
                            ids: dict[Any, tuple[int, int]] | None) -> None:
        d = c.delivery.get(name)
        if not ids or all(t == 0 for t, _ in ids.values()):
            if d is not None:
                d.cancel(c)
                del c.delivery[name]
            return
        if d is None:
            d = c.delivery[name] = _Delivery()
        d.configure(ids)

    def _fragment(self, c: _Client, m: dict[str, Any], op_id: Any) -> None:
        """One ``fragment`` op: store its data; dispatch the message once all arrived."""
        o = self.options
        num, total, data = m.get("num"), m.get("total"), m.get("data")
        if (op_id is None or not isinstance(data, str)
                or any(isinstance(v, bool) or not isinstance(v, int) for v in (num, total))):
            self._status(c, "error", "fragment: needs an 'id', integer 'num' and 'total' and "
                         "string 'data'", op_id)
            return
        if not 1 <= total <= o.max_message_bytes or not 0 <= num < total:
            self._status(c, "error", f"fragment: num {num} of total {total} is out of range",
                         op_id)
            return
        now = time.monotonic()
        for pid in [k for k, p in c.partial.items() if now - p.t_last > o.fragment_timeout]:
            self._drop_partial(c, pid)
            self._status(c, "warning", f"fragment: message {str(pid)[:40]} timed out after "
                         f"{o.fragment_timeout} s; dropped", pid)
        p = c.partial.get(op_id)
        if p is None:
            if len(c.partial) >= o.max_fragmented_messages:
                self._status(c, "error", f"fragment: this client already has "
                             f"{o.max_fragmented_messages} fragmented messages in "
                             "reassembly", op_id)
                return
            p = c.partial[op_id] = _Partial(total, now)
        if total != p.total or num in p.parts:
            why = (f"total {total} differs from the first fragment's {p.total}"
                   if total != p.total else f"fragment {num} was already received")
            self._status(c, "error", f"fragment: {why}", op_id)
            return
        cost = len(data) + 64  # a dict entry costs about this much beyond its data
        if (p.nbytes + len(data) > o.max_message_bytes
                or c.partial_bytes + cost > o.max_client_buffer_bytes):
            self._drop_partial(c, op_id)
            self._status(c, "error", f"fragment: message {str(op_id)[:40]} exceeds "
                         f"{o.max_message_bytes} bytes (or this client's reassembly "
                         "buffer); dropped", op_id)
            return
        p.parts[num] = data
        p.nbytes += len(data)
        p.cost += cost
        p.t_last = now
        c.partial_bytes += cost
        if len(p.parts) == p.total:
            self._drop_partial(c, op_id)
            self._dispatch_unsafe(c, "".join(p.parts[i] for i in range(p.total)),
                                  reassembled=True)

    @staticmethod
    def _drop_partial(c: _Client, pid: Any) -> None:
        p = c.partial.pop(pid, None)
        if p is not None:
            c.partial_bytes -= p.cost

    def _authenticate(self, c: _Client, m: dict[str, Any], op_id: Any) -> None:
        assert self._secret is not None
        now = time.time()
        why = _auth.check_auth(self._secret, m, now, self.options.auth_time_tolerance)
        if why is None and m["mac"] in self._used_macs:
            why = "auth: this MAC was already used (replay)"
        if why is not None:
            c.auth_failures += 1
            self._status(c, "error", f"{why} (attempt {c.auth_failures} of "
                         f"{self.options.max_auth_failures})", op_id)
            if c.auth_failures >= self.options.max_auth_failures:
                c.closing = True
            return
        # remember MACs while their t is within the tolerance (older ones fail the time check)
        self._used_macs[m["mac"]] = now
        while self._used_macs and (next(iter(self._used_macs.values()))
                                   < now - 2 * self.options.auth_time_tolerance
                                   or len(self._used_macs) > 4096):
            self._used_macs.popitem(last=False)
        c.authenticated = True
        LOGGER.info("client %s authenticated (client %r, level %r)", c.peer, m["client"],
                    m["level"])

    # -- services -----------------------------------------------------------------------
    def _call_service(self, c: _Client, m: dict[str, Any], op_id: Any) -> None:
        service = m.get("service")
        if op_id is None and isinstance(service, str) and "#" in service:
            service, op_id = service.split("#", 1)  # rosbridge: "name#id" names the call
            m = {**m, "service": service}
        names = self._topic(c, m, "call_service", op_id, key="service")
        if names is None:
            return
        spelled, name = names
        args = m.get("args")
        if args is not None and not isinstance(args, (dict, list)):
            self._status(c, "error", f"call_service {name}: 'args' must be an object", op_id)
            return
        timeout = m.get("timeout")
        if timeout is not None and (isinstance(timeout, bool)
                                    or not isinstance(timeout, (int, float))
                                    or not math.isfinite(timeout)):
            self._status(c, "error", f"call_service {name}: 'timeout' must be a number of "
                         "seconds", op_id)
            return
        reply: dict[str, Any] = {"op": "service_response", "service": spelled}
        if op_id is not None:
            reply["id"] = op_id
        handler = self._services.get(name)
        provided = self._client_services.get(name)
        if handler is not None:
            try:
                reply.update(values=handler(args or {}), result=True)
            except Exception as e:
                reply.update(values=f"{type(e).__name__}: {e}", result=False)
        elif provided is not None:
            if c.pending_calls >= self.options.max_pending_calls:
                reply.update(values=f"this client already has {self.options.max_pending_calls}"
                             " service calls waiting", result=False)
            else:
                self._forward_call(c, op_id, spelled, name, args, timeout)
                return
        else:
            reply.update(values=f"service {name!r} does not exist", result=False)
        c.reply(encode(reply))

    def _forward_call(self, c: _Client, op_id: Any, spelled: str, name: str, args: Any,
                      timeout: float | None) -> None:
        provider, _, provider_name = self._client_services[name]
        self._call_seq += 1
        request_id = f"service_request:{name}:{self._call_seq}"
        call = _Call(c, op_id, spelled, name, provider)
        self._calls[request_id] = call
        c.pending_calls += 1
        wait = self.options.service_timeout if timeout is None or timeout <= 0 else timeout
        if self.loop is not None:
            call.timer = self.loop.call_later(min(wait, 3600.0), self._end_call, request_id,
                                              False, f"service {name!r} did not answer "
                                              f"within {wait:g} s")
        # as data, not a reply: bounded by the provider's byte budget (a dropped request
        # times out for its caller) however many clients call it
        provider.enqueue(encode({"op": "call_service", "id": request_id,
                                 "service": provider_name, "args": args or {}}))

    def _end_call(self, request_id: str, result: bool, values: Any) -> None:
        """Answer the caller of a forwarded call (if still connected) and forget the call."""
        call = self._calls.pop(request_id, None)
        if call is None:
            return
        if call.timer is not None:
            call.timer.cancel()
        call.caller.pending_calls -= 1
        if call.caller.closing or (call.caller.ws is not None
                                   and call.caller not in self._clients):
            return
        reply: dict[str, Any] = {"op": "service_response", "service": call.spelled,
                                 "values": values, "result": result}
        if call.caller_id is not None:
            reply["id"] = call.caller_id
        call.caller.reply(encode(reply))

    def _advertise_service(self, c: _Client, m: dict[str, Any], op_id: Any) -> None:
        names = self._topic(c, m, "advertise_service", op_id, key="service")
        if names is None:
            return
        spelled, name = names
        stype = m.get("type")
        if not isinstance(stype, str) or len(stype) > 256 or not _TYPE_RE.match(stype):
            self._status(c, "error", f"advertise_service {name}: missing or invalid 'type' "
                         f"{str(stype)[:80]!r}", op_id)
            return
        if name in self._services:
            self._status(c, "error", f"advertise_service {name}: served by the server itself; "
                         "cannot be replaced", op_id)
            return
        if name not in c.services and c.n_topics() >= self.options.max_topics_per_client:
            self._status(c, "error", f"advertise_service {name}: this client already holds "
                         f"{self.options.max_topics_per_client} topics and services", op_id)
            return
        old = self._client_services.get(name)
        if old is not None and old[0] is not c:  # rosbridge: the newer advertiser wins
            self._drop_service(name)
            self._status(c, "warning", f"advertise_service {name}: another client offered "
                         "it; replaced", op_id)
        else:
            self._status(c, "info", f"advertised service {name}", op_id)
        self._client_services[name] = (c, stype, spelled)
        c.services.add(name)

    def _drop_service(self, name: str) -> None:
        """Withdraw a client-offered service; its waiting callers get ``result: false``."""
        entry = self._client_services.pop(name, None)
        if entry is None:
            return
        entry[0].services.discard(name)
        for rid in [r for r, call in self._calls.items() if call.service == name]:
            self._end_call(rid, False, f"service {name!r} was withdrawn by its provider")

    def _service_response(self, c: _Client, m: dict[str, Any], op_id: Any) -> None:
        names = self._topic(c, m, "service_response", op_id, key="service")
        if names is None:
            return
        name = names[1]
        call = self._calls.get(op_id) if isinstance(op_id, str) else None
        if call is None or call.provider is not c or call.service != name:
            self._status(c, "error", f"service_response {name}: no call with id "
                         f"{str(op_id)[:80]!r} is waiting for this client", op_id)
            return
        result = m.get("result")
        values = m.get("values")
        if not isinstance(result, bool):
            self._status(c, "error", f"service_response {name}: 'result' must be a boolean",
                         op_id)
            return
        if result and values is None:
            values = {}
        if result and not isinstance(values, dict):
            self._status(c, "error", f"service_response {name}: 'values' must be an object",
                         op_id)
            return
        if not result and values is None:
            values = f"service {name!r} failed"
        self._end_call(op_id, result, values)

    def _forget_client(self, c: _Client) -> None:
        """Release everything a departing client held (topics, services, calls)."""
        for d in c.delivery.values():
            d.cancel()
        for name in list(c.services):
            self._drop_service(name)
        for rid in [r for r, call in self._calls.items() if call.caller is c]:
            call = self._calls.pop(rid)
            if call.timer is not None:
                call.timer.cancel()
        c.partial.clear()
        for topic in set(c.subs) | c.advertised:
            self._release(topic)

    async def _writer(self, c: _Client) -> None:
        try:
            while True:
                await c.ready.wait()
                c.ready.clear()
                while c.replies or c.queue:
                    text = c.take()
                    if len(c.replies) < self.options.reply_queue_size:
                        c.drained.set()
                    for part in c.fragments(text):
                        await c.ws.send(part)
                    c.sent += 1
        except Exception:  # connection closed: the reader ends the handler
            c.drained.set()

    async def _handle(self, ws: Any) -> None:
        if len(self._clients) >= self.options.max_clients:
            self.rejected_handshakes += 1
            LOGGER.warning("refused a client: %d clients already connected", len(self._clients))
            await ws.close(1013, "too many clients")
            return
        c = _Client(ws, self.client_queue_size, authenticated=not self.auth_required,
                    budget=self.options.max_client_buffer_bytes)
        self._clients.add(c)
        writer = asyncio.create_task(self._writer(c))
        LOGGER.info("client %s connected", c.peer)
        try:
            while not c.closing:
                await self._reading.wait()
                if len(c.replies) >= self.options.reply_queue_size:
                    c.drained.clear()  # the client does not read its replies: stop reading
                    await c.drained.wait()
                try:
                    text = await ws.recv()
                except Exception:  # ConnectionClosed (clean or not)
                    break
                c.received += 1
                self._dispatch(c, text)
            if c.closing:
                await asyncio.sleep(0.05)  # let the writer send the last status
                await ws.close(1008, "authentication failed")
        finally:
            writer.cancel()
            self._clients.discard(c)
            self._forget_client(c)
            LOGGER.info("client %s disconnected", c.peer)


class ServerThread:
    """Run a :class:`RosBridgeServer` (plus optional coroutines on its loop) in a background
    thread; for tests and for embedding the simulated robot in a process.

    Example::

        with ServerThread(RosBridgeServer()) as st:
            url = st.server.url
            st.call(lambda: st.server.publish("/x", {"data": 1}))
    """

    def __init__(self, server: RosBridgeServer,
                 tasks: list[Callable[[], Awaitable[Any]]] | None = None):
        self.server = server
        self._tasks = tasks or []
        self._thread: threading.Thread | None = None
        self._started = threading.Event()
        self._error: BaseException | None = None
        self.loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None

    def start(self, timeout: float = 5.0) -> ServerThread:
        """Start the loop thread and the server; returns once it listens."""
        self._thread = threading.Thread(target=self._run, name="rosbridge-server", daemon=True)
        self._thread.start()
        if not self._started.wait(timeout):
            raise BridgeError("rosbridge server did not start")
        if self._error is not None:
            raise BridgeError(f"rosbridge server failed to start: {self._error}") from self._error
        return self

    def _run(self) -> None:
        self.loop = asyncio.new_event_loop()
        asyncio.set_event_loop(self.loop)
        try:
            self.loop.run_until_complete(self._main())
        finally:
            self.loop.close()

    async def _main(self) -> None:
        self._stop = asyncio.Event()
        try:
            await self.server.start()
        except BaseException as e:
            self._error = e
            self._started.set()
            return
        running = [asyncio.create_task(t()) for t in self._tasks]
        self._started.set()
        await self._stop.wait()
        for t in running:
            t.cancel()
        await asyncio.gather(*running, return_exceptions=True)
        await self.server.stop()

    def call(self, fn: Callable[[], Any], timeout: float = 5.0) -> Any:
        """Run ``fn()`` on the server loop and return its result."""
        assert self.loop is not None

        async def wrapper() -> Any:
            return fn()

        return asyncio.run_coroutine_threadsafe(wrapper(), self.loop).result(timeout)

    def stop(self, timeout: float = 5.0) -> None:
        """Stop the tasks and the server, then join the thread."""
        if self.loop is not None and self._stop is not None and self.loop.is_running():
            self.loop.call_soon_threadsafe(self._stop.set)
        if self._thread is not None:
            self._thread.join(timeout)

    def __enter__(self) -> ServerThread:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()
