"""A small rosbridge v2 protocol server (asyncio + :mod:`websockets`) for rehearsals and tests.

It implements the part of the protocol a roslibpy client uses for topics and services —
``auth``, ``advertise``, ``unadvertise``, ``publish``, ``subscribe``, ``unsubscribe``,
``call_service`` (answered by services registered in-process), ``set_level`` — and answers
anything else with a ``status`` error. Messages are routed between websocket clients and
in-process endpoints: the simulated robot registers ``on_publish`` handlers for the command
topics and publishes its state with :meth:`RosBridgeServer.publish`.

Security and robustness (:class:`ServerOptions`):

* binds 127.0.0.1 by default; the websocket handshake's ``Origin`` header must be absent
  (non-browser clients) or in ``allowed_origins`` (default: none), else HTTP 403;
* with a shared secret (``auth_secret``), every client must first send a rosauth-compatible
  ``auth`` op (:mod:`hardware.rosbridge.auth`); until then every other op is refused with a
  ``status`` error (nothing can be read or commanded); ``max_auth_failures`` wrong attempts
  close the connection (1008); a MAC is accepted once (replays refused);
* every malformed or refused message is answered with a ``status`` op (level ``error``, a
  ``msg`` naming the problem, the request's ``id`` echoed), counted and logged (sparsely under
  a flood); a handler exception is caught and answered too, never a dropped connection;
* memory is bounded: frames above ``max_frame_bytes`` close the connection (1009, by
  websockets), messages above ``max_message_bytes`` are refused, topic names are at most
  ``max_topic_length`` characters, a client holds at most ``max_topics_per_client``
  subscriptions + advertisements, the server knows at most ``max_topics`` topic types
  (a client's topics are forgotten when it leaves), at most ``max_clients`` connections;
  outgoing data are bounded per client (drop-oldest) and replies (status, service responses)
  too — the server stops reading a client whose replies it does not read;
* ``advertise`` needs a type, ``publish`` needs a topic whose type is known (advertised by
  someone, or an in-process endpoint), as rosbridge, which cannot infer an unknown type;
* non-finite floats are sent as JSON ``null`` (as rosbridge does; ``NaN`` is not JSON);
* ``subscribe`` honours ``throttle_rate`` [ms] and ``queue_length`` as rosbridge does (see
  :class:`_Delivery`), ``advertise``/``publish`` honour ``latch`` (a new subscriber gets the
  last message of a latched topic);
* an in-process publish handler that raises :class:`~hardware.errors.MessageError` makes
  the server answer the publishing client with a ``status`` error (the robot-side guard's
  rejections are not silent).

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
        for name in ("max_auth_failures", "max_message_bytes", "max_frame_bytes",
                     "max_client_buffer_bytes",
                     "max_topic_length", "max_topics_per_client", "max_topics", "max_clients",
                     "reply_queue_size"):
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
        self.subs: dict[str, dict[Any, tuple[int, int]]] = {}  # topic -> id -> (throttle
        # [ms], queue_length) of each subscription
        self.delivery: dict[str, _Delivery] = {}
        self.advertised: set[str] = set()
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
        return len(self.subs) + len(self.advertised - set(self.subs))


class _Delivery:
    """rosbridge's per-topic delivery to one client: with ``throttle`` [s] > 0, at most one
    message per ``throttle``; ``queue_length`` 0 drops the messages inside the interval
    (rosbridge's ThrottleMessageHandler), > 0 keeps the newest ``queue_length`` and sends them
    one per interval (its QueueMessageHandler). Of several subscriptions of one client to a
    topic, the smallest throttle and the largest queue apply, as in rosbridge."""

    def __init__(self) -> None:
        self.throttle = 0.0
        self.queue_length = 0
        self.pending: collections.deque[str] = collections.deque(maxlen=1)
        self.last = -math.inf
        self.timer: asyncio.TimerHandle | None = None

    def configure(self, subs: dict[Any, tuple[int, int]]) -> None:
        self.throttle = min(t for t, _ in subs.values()) / 1000.0
        q = max(n for _, n in subs.values())
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
        self._latched: dict[str, str] = {}  # topic -> last message (encoded), latched topics
        self._handlers: dict[str, list[PublishHandler]] = collections.defaultdict(list)
        self._services: dict[str, ServiceHandler] = {}
        self._reading = asyncio.Event()
        self._reading.set()
        self.received_by_topic: collections.Counter[str] = collections.Counter()
        self.errors: collections.deque[str] = collections.deque(maxlen=200)
        """The newest 200 status messages sent (all clients)."""
        self.status_count = 0
        """Status errors/warnings sent since the start."""
        self.rejected_handshakes = 0
        """Connections refused before or at the handshake (Origin, too many clients)."""
        self.port: int = 0
        self.loop: asyncio.AbstractEventLoop | None = None

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

    def add_service(self, name: str, handler: ServiceHandler) -> None:
        """Serve ``call_service`` requests for ``name``: ``handler(args) -> values``."""
        self._services[name] = handler

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
        n = 0
        text = None
        if topic in self._latch_topics:
            text = encode({"op": "publish", "topic": topic, "msg": msg})
            self._latched[topic] = text
        for c in self._clients:
            if c.authenticated and c.subs.get(topic):
                if text is None:
                    text = encode({"op": "publish", "topic": topic, "msg": msg})
                d = c.delivery.get(topic)
                if d is None:
                    c.enqueue(text)
                else:
                    d.offer(c, text, self.loop)
                n += 1
        return n

    def _status(self, c: _Client, level: str, msg: str, op_id: Any = None) -> None:
        self.errors.append(msg)
        self.status_count += 1
        c.statuses += 1
        if c.statuses <= 10 or c.statuses % 100 == 0:  # a flood is logged sparsely
            LOGGER.warning("client %s (status #%d): %s", c.peer, c.statuses, msg)
        out: dict[str, Any] = {"op": "status", "level": level, "msg": msg}
        if op_id is not None:
            out["id"] = op_id
        c.reply(encode(out))

    def _topic(self, c: _Client, m: dict[str, Any], op: str, op_id: Any,
               key: str = "topic") -> str | None:
        """The request's valid, absolute topic name, or None (status sent)."""
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
        return topic if topic.startswith("/") else "/" + topic  # relative: root namespace

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

    def _dispatch_unsafe(self, c: _Client, text: str | bytes) -> None:
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
            else:
                self._status(c, "error", f"{op}: not authenticated (send the 'auth' op "
                             "first)", op_id)
            return
        if op == "auth":
            self._status(c, "warning", "auth: " + ("already authenticated" if self.auth_required
                                                   else "authentication is not enabled on "
                                                   "this server; ignored"), op_id)
        elif op in ("advertise", "subscribe"):
            topic = self._topic(c, m, op, op_id)
            if topic is None:
                return
            new = topic not in c.subs and topic not in c.advertised
            if new and c.n_topics() >= o.max_topics_per_client:
                self._status(c, "error", f"{op} {topic}: this client already holds "
                             f"{o.max_topics_per_client} topics", op_id)
                return
            if not self._register_type(c, topic, m.get("type"), op, op_id):
                return
            if op == "advertise":
                latch = m.get("latch", False)
                if not isinstance(latch, bool):
                    self._status(c, "error", f"advertise {topic}: 'latch' must be a boolean",
                                 op_id)
                    return
                c.advertised.add(topic)
                if latch:
                    self._latch_topics.add(topic)
            else:
                qos = {}
                for key in ("throttle_rate", "queue_length"):
                    v = m.get(key, 0)
                    if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v <= 3_600_000:
                        self._status(c, "error", f"subscribe {topic}: {key!r} must be an "
                                     "integer >= 0", op_id)
                        return
                    qos[key] = v
                if qos["queue_length"] > 1000:
                    self._status(c, "error", f"subscribe {topic}: queue_length above 1000",
                                 op_id)
                    return
                if topic not in self._types:
                    self._status(c, "warning", f"subscribe {topic}: unknown topic without a "
                                 "type; waiting for it to be advertised", op_id)
                ids = c.subs.setdefault(topic, {})
                key = op_id if op_id is not None else topic
                if key not in ids and len(ids) >= o.max_topics_per_client:
                    self._status(c, "error", f"subscribe {topic}: too many subscriptions",
                                 op_id)
                    return
                ids[key] = (qos["throttle_rate"], qos["queue_length"])
                self._configure_delivery(c, topic)
                latched = self._latched.get(topic)
                if latched is not None and new:
                    c.enqueue(latched)
        elif op == "unadvertise":
            topic = self._topic(c, m, op, op_id)
            if topic is not None:
                c.advertised.discard(topic)
                self._release(topic)
        elif op == "unsubscribe":
            topic = self._topic(c, m, op, op_id)
            if topic is None:
                return
            ids = c.subs.get(topic, {})
            ids.pop(op_id if op_id is not None else topic, None)
            if not ids or op_id is None:
                c.subs.pop(topic, None)
                self._configure_delivery(c, topic)
                self._release(topic)
            else:
                self._configure_delivery(c, topic)
        elif op == "publish":
            topic = self._topic(c, m, op, op_id)
            if topic is None:
                return
            if not isinstance(m.get("msg"), dict):
                self._status(c, "error", f"publish {topic}: 'msg' must be an object", op_id)
                return
            if topic not in self._types:
                self._status(c, "error", f"publish {topic}: unknown topic (cannot infer its "
                             "type: advertise it first)", op_id)
                return
            if m.get("latch") is True:  # rosbridge: the publish op may latch its publisher
                self._latch_topics.add(topic)
            self._route(topic, m["msg"], time.monotonic(), c, op_id)
        elif op == "call_service":
            self._call_service(c, m, op_id)
        elif op == "set_level":
            if m.get("level") not in _LEVELS:
                self._status(c, "error", f"set_level: level must be one of {list(_LEVELS)}",
                             op_id)
        else:
            self._status(c, "error", f"unsupported op {op[:40]!r}", op_id)

    @staticmethod
    def _configure_delivery(c: _Client, topic: str) -> None:
        subs = c.subs.get(topic)
        d = c.delivery.get(topic)
        if not subs or all(t == 0 for t, _ in subs.values()):
            if d is not None:
                d.cancel(c)
                del c.delivery[topic]
            return
        if d is None:
            d = c.delivery[topic] = _Delivery()
        d.configure(subs)

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

    def _call_service(self, c: _Client, m: dict[str, Any], op_id: Any) -> None:
        name = self._topic(c, m, "call_service", op_id, key="service")
        if name is None:
            return
        args = m.get("args")
        if args is not None and not isinstance(args, (dict, list)):
            self._status(c, "error", f"call_service {name}: 'args' must be an object", op_id)
            return
        reply: dict[str, Any] = {"op": "service_response", "service": name}
        if op_id is not None:
            reply["id"] = op_id
        handler = self._services.get(name)
        if handler is None:
            reply.update(result=False, values=f"service {name!r} does not exist")
        else:
            try:
                reply.update(result=True, values=handler(args or {}))
            except Exception as e:
                reply.update(result=False, values=f"{type(e).__name__}: {e}")
        c.reply(encode(reply))

    async def _writer(self, c: _Client) -> None:
        try:
            while True:
                await c.ready.wait()
                c.ready.clear()
                while c.replies or c.queue:
                    text = c.take()
                    if len(c.replies) < self.options.reply_queue_size:
                        c.drained.set()
                    await c.ws.send(text)
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
            for d in c.delivery.values():
                d.cancel()
            self._clients.discard(c)
            for topic in set(c.subs) | c.advertised:
                self._release(topic)
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
