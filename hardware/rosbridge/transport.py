"""A ROS-bridge client on :mod:`roslibpy` with bounded, flow-controlled publishing.

roslibpy speaks the rosbridge v2 JSON protocol over a websocket (Autobahn on the Twisted
reactor, which runs in a background thread). On top of it this module adds what a control loop
needs from a transport:

* **connect with a timeout** (:class:`~hardware.errors.BridgeConnectionError` when the bridge
  does not answer) and **reconnect with jittered exponential backoff** (roslibpy's
  ``ReconnectingClientFactory``, tuned per connection from :class:`BridgeOptions`); roslibpy
  re-sends advertise/subscribe requests after a reconnect.
* **back-pressure**: every :class:`Publisher` owns a bounded queue. A single sender thread hands
  messages to the websocket only while (a) the connection is up, (b) the socket's write buffer
  is below ``write_buffer_bytes`` (a Twisted push-producer registered on the TCP transport is
  paused/resumed by the reactor) and (c) fewer than ``max_in_flight`` messages are waiting in
  the reactor's call queue. When a queue is full, ``drop_oldest`` publishers (setpoints: only
  the newest matters) discard the oldest message and ``drop_newest`` publishers refuse the new
  one. Nothing is queued inside roslibpy while disconnected, so a reconnect never replays stale
  setpoints. Counters (:class:`PublisherStats`) say what happened to every message.
* **subscriptions with latest-value buffers**: :class:`Subscription` keeps the newest message,
  its receive time (``time.monotonic()``, the clock the watchdog uses) and a count.
* **authentication**: with a shared secret (``auth_secret_file``, or the environment variable
  named by ``auth_secret_env``), the rosauth-compatible ``auth`` op
  (:mod:`hardware.rosbridge.auth`) is the first message on every connection, reconnects
  included, with a fresh time stamp and random string.
* **status messages** from the bridge (rosbridge's ``status`` op: refused requests) are logged
  and kept (:meth:`RosBridgeTransport.statuses`).

Thread model: callbacks of subscriptions run in the reactor thread; ``publish`` is callable
from any thread and never blocks.
"""

from __future__ import annotations

import collections
import itertools
import logging
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Literal

from ..errors import BridgeClosedError, BridgeConnectionError, HardwareValueError

__all__ = [
    "BridgeOptions",
    "DropPolicy",
    "Publisher",
    "PublisherStats",
    "Received",
    "RosBridgeTransport",
    "Subscription",
    "TransportStats",
]

LOGGER = logging.getLogger("hardware.rosbridge")

DropPolicy = Literal["drop_oldest", "drop_newest"]
_POLICIES = ("drop_oldest", "drop_newest")


@dataclass(frozen=True)
class BridgeOptions:
    """Connection and flow-control settings of :class:`RosBridgeTransport`."""

    url: str = "ws://127.0.0.1:9090"
    """Websocket URL of the rosbridge server (rosbridge_server's default port is 9090)."""

    connect_timeout: float = 5.0
    """Seconds to wait for the first connection before raising BridgeConnectionError."""

    reconnect_initial_delay: float = 0.25
    """First reconnect delay [s] after the connection drops; reset on every successful
    connect."""

    reconnect_max_delay: float = 5.0
    """Upper bound [s] of the reconnect delay."""

    reconnect_factor: float = 2.0
    """Growth of the reconnect delay per failed attempt (jittered by ±12% as in Twisted)."""

    queue_size: int = 8
    """Default bound of each publisher's outgoing queue [messages]."""

    write_buffer_bytes: int = 65536
    """Bytes buffered in the socket's user-space write buffer above which sending pauses
    (Twisted's producer threshold, ``transport.bufferSize``)."""

    max_in_flight: int = 16
    """Messages handed to the reactor but not yet written to the socket buffer."""

    auth_secret_file: str = ""
    """File whose first line is the rosauth shared secret ("" : use ``auth_secret_env``)."""

    auth_secret_env: str = "C3MPC_BRIDGE_SECRET"
    """Environment variable holding the secret when no file is given; unset or empty (and no
    file): the transport does not authenticate."""

    def __post_init__(self) -> None:
        if not isinstance(self.url, str) or not self.url.startswith(("ws://", "wss://")):
            raise HardwareValueError(f"BridgeOptions.url must start with ws:// or wss://, got "
                                     f"{self.url!r}")
        for name in ("connect_timeout", "reconnect_initial_delay", "reconnect_max_delay"):
            if not getattr(self, name) > 0:
                raise HardwareValueError(f"BridgeOptions.{name} must be > 0 [s], got "
                                         f"{getattr(self, name)!r}")
        if not self.reconnect_factor >= 1:
            raise HardwareValueError(f"BridgeOptions.reconnect_factor must be >= 1, got "
                                     f"{self.reconnect_factor!r}")
        for name in ("queue_size", "write_buffer_bytes", "max_in_flight"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise HardwareValueError(f"BridgeOptions.{name} must be an int >= 1, got {v!r}")
        for name in ("auth_secret_file", "auth_secret_env"):
            if not isinstance(getattr(self, name), str):
                raise HardwareValueError(f"BridgeOptions.{name} must be a string, got "
                                         f"{getattr(self, name)!r}")


@dataclass(frozen=True)
class PublisherStats:
    """What happened to the messages given to one :class:`Publisher`.

    ``enqueued == sent + dropped + queued`` at all times (``queued`` counts the messages still
    waiting in the queue or in flight to the socket)."""

    topic: str
    enqueued: int
    sent: int
    dropped: int
    queued: int
    max_depth: int


@dataclass(frozen=True)
class TransportStats:
    """Connection history of a :class:`RosBridgeTransport`."""

    connected: bool
    connects: int
    """Successful websocket handshakes (1 + number of reconnects)."""
    disconnects: int
    flow_pauses: int
    """Times the socket write buffer filled and sending paused."""
    publishers: tuple[PublisherStats, ...]


@dataclass(frozen=True)
class Received:
    """The newest message of a subscription."""

    msg: dict[str, Any]
    """The message as decoded from JSON."""
    t_receive: float
    """Receive time, ``time.monotonic()`` [s]."""
    count: int
    """Number of messages received on this subscription so far."""


class Publisher:
    """A bounded outgoing queue for one topic. Create with :meth:`RosBridgeTransport.publisher`.
    """

    def __init__(self, transport: RosBridgeTransport, topic: Any, queue_size: int,
                 policy: DropPolicy):
        self._transport = transport
        self._topic = topic
        self.name: str = topic.name
        self.message_type: str = topic.message_type
        self.queue_size = queue_size
        self.policy = policy
        self._queue: collections.deque[tuple[int, dict[str, Any]]] = collections.deque()
        self._enqueued = 0
        self._sent = 0
        self._dropped = 0
        self._in_flight = 0
        self._max_depth = 0

    def publish(self, msg: dict[str, Any]) -> bool:
        """Queue ``msg`` for sending; never blocks.

        Returns:
            False if the message was refused (full queue, ``drop_newest`` policy), else True
            (with ``drop_oldest`` a full queue loses its oldest message instead).

        Raises:
            BridgeClosedError: after the transport was closed.
        """
        return self._transport._enqueue(self, msg)

    def stats(self) -> PublisherStats:
        """Counters of this publisher (a consistent snapshot)."""
        with self._transport._cond:
            return PublisherStats(self.name, self._enqueued, self._sent, self._dropped,
                                  len(self._queue) + self._in_flight, self._max_depth)


class Subscription:
    """Latest-value buffer of one subscribed topic. Create with
    :meth:`RosBridgeTransport.subscribe`."""

    def __init__(self, topic: Any, callback: Callable[[dict[str, Any], float], None] | None):
        self._topic = topic
        self.name: str = topic.name
        self.message_type: str = topic.message_type
        self._callback = callback
        self._lock = threading.Lock()
        self._new = threading.Condition(self._lock)
        self._latest: Received | None = None
        self._count = 0

    def _on_message(self, msg: dict[str, Any]) -> None:  # reactor thread
        t = time.monotonic()
        with self._lock:
            self._count += 1
            self._latest = Received(msg, t, self._count)
            self._new.notify_all()
        if self._callback is not None:
            try:
                self._callback(msg, t)
            except Exception:  # a user callback must not kill the reactor thread
                LOGGER.exception("subscription callback of %s failed", self.name)

    def latest(self) -> Received | None:
        """The newest message with its receive time, or None before the first one."""
        with self._lock:
            return self._latest

    @property
    def count(self) -> int:
        """Messages received so far."""
        with self._lock:
            return self._count

    def age(self, now: float | None = None) -> float:
        """Seconds since the newest message arrived (``inf`` before the first one)."""
        latest = self.latest()
        if latest is None:
            return float("inf")
        return (time.monotonic() if now is None else now) - latest.t_receive

    def wait(self, timeout: float, after_count: int = 0) -> Received | None:
        """Block until more than ``after_count`` messages arrived or ``timeout`` [s] passed."""
        deadline = time.monotonic() + timeout
        with self._new:
            while self._count <= after_count:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return None
                self._new.wait(remaining)
            return self._latest


class _FlowControl:
    """Twisted IPushProducer registered on the TCP transport: the reactor pauses it when the
    socket's write buffer passes ``bufferSize`` and resumes it when the buffer drains."""

    def __init__(self, owner: RosBridgeTransport):
        self._owner = owner

    def pauseProducing(self) -> None:  # noqa: N802 (Twisted interface)
        self._owner._set_writable(False)

    def resumeProducing(self) -> None:  # noqa: N802
        self._owner._set_writable(True)

    def stopProducing(self) -> None:  # noqa: N802
        self._owner._set_writable(True)


class RosBridgeTransport:
    """Connection to a rosbridge v2 server through roslibpy.

    Example::

        bridge = RosBridgeTransport(BridgeOptions(url="ws://127.0.0.1:9090"))
        bridge.connect()                       # BridgeConnectionError after connect_timeout
        pub = bridge.publisher("/cmd", "geometry_msgs/PoseStamped")
        sub = bridge.subscribe("/state", "franka_msgs/FrankaState")
        pub.publish({...}); sub.latest()
        bridge.close()
    """

    def __init__(self, options: BridgeOptions | None = None):
        self.options = options or BridgeOptions()
        self._ros: Any = None
        self._cond = threading.Condition()
        self._publishers: list[Publisher] = []
        self._subscriptions: list[Subscription] = []
        self._seq = itertools.count()
        self._connected = threading.Event()
        self._writable = True
        self._closed = False
        self._connects = 0
        self._disconnects = 0
        self._flow_pauses = 0
        self._in_flight = 0
        self._sender: threading.Thread | None = None
        self._proto: Any = None
        self._publish_id = 0
        self._secret: str | None = None
        self._auth_proto: Any = None
        self._statuses: collections.deque[str] = collections.deque(maxlen=50)

    # -- connection ---------------------------------------------------------------------
    def connect(self) -> None:
        """Open the websocket; return once the handshake completed.

        Raises:
            BridgeConnectionError: no connection within ``options.connect_timeout``.
            BridgeClosedError: the transport was closed.
        """
        if self._closed:
            raise BridgeClosedError("transport is closed")
        if self._ros is not None:
            return
        import roslibpy

        from .auth import load_secret

        o = self.options
        self._secret = load_secret(o.auth_secret_file or None, o.auth_secret_env or None)
        ros = roslibpy.Ros(o.url, transport="twisted")
        f = ros.factory
        # Per-connection backoff (instance attributes shadow the class-wide defaults).
        f.initialDelay = f.delay = o.reconnect_initial_delay
        f.maxDelay = o.reconnect_max_delay
        f.factor = o.reconnect_factor
        # First listener: the auth op goes out before anything else on every connection.
        ros.on("ready", self._authenticate)
        f.on_ready(lambda proto: self._authenticate(proto))
        ros.on("ready", self._on_ready)
        ros.on("close", self._on_close)
        # Ros() starts connecting at once: if the handshake already finished before the
        # listener above was registered, on_ready fires now (duplicates are ignored).
        # (A distinct function: roslibpy keys listeners by function, and a one-shot listener
        # keyed like the permanent one would replace it.)
        f.on_ready(lambda proto: self._on_ready(proto))
        self._ros = ros
        try:
            ros.run(timeout=o.connect_timeout)
        except Exception as e:  # roslibpy raises RosTimeoutError
            self._stop_trying()
            self._ros = None
            raise BridgeConnectionError(f"no rosbridge server answered at {o.url} within "
                                        f"{o.connect_timeout} s", o.url,
                                        o.connect_timeout) from e
        if not self._connected.wait(o.connect_timeout):  # pragma: no cover - defensive
            self._stop_trying()
            raise BridgeConnectionError(f"handshake with {o.url} did not complete", o.url,
                                        o.connect_timeout)
        self._sender = threading.Thread(target=self._send_loop, name="rosbridge-sender",
                                        daemon=True)
        self._sender.start()
        LOGGER.info("connected to %s", o.url)

    @property
    def is_connected(self) -> bool:
        """True while the websocket is open."""
        return self._connected.is_set()

    def wait_connected(self, timeout: float) -> bool:
        """Block until connected (e.g. after a reconnect) or ``timeout`` [s] passed."""
        return self._connected.wait(timeout)

    def _authenticate(self, proto: Any) -> None:  # reactor thread
        """Install the status handler and send the auth op (once per connection)."""
        with self._cond:
            if proto is self._auth_proto:
                return
            self._auth_proto = proto
        # roslibpy has no handler for the 'status' op (it logs an exception per message)
        handlers = getattr(proto, "_message_handlers", None)
        if isinstance(handlers, dict):
            handlers["status"] = self._on_status
        if self._secret is None:
            return
        import roslibpy
        from urllib.parse import urlparse

        from .auth import auth_message

        dest = urlparse(self.options.url).hostname or ""
        proto.send_ros_message(roslibpy.Message(auth_message(self._secret, dest)))

    def _on_status(self, message: Any) -> None:  # reactor thread
        text = f"{message.get('level', '?')}: {message.get('msg', '')}"
        if message.get("id") is not None:
            text += f" (id {message.get('id')})"
        with self._cond:
            self._statuses.append(text)
        LOGGER.warning("bridge status %s", text)

    def statuses(self) -> list[str]:
        """The newest 50 status messages the bridge sent ("level: msg (id ...)")."""
        with self._cond:
            return list(self._statuses)

    def _on_ready(self, proto: Any) -> None:  # reactor thread
        with self._cond:
            if proto is self._proto:
                return
            self._proto = proto
        try:
            proto.transport.bufferSize = self.options.write_buffer_bytes
            proto.registerProducer(_FlowControl(self), True)
        except Exception:  # pragma: no cover - transport without producer support
            LOGGER.exception("could not register flow control on the websocket transport")
        with self._cond:
            self._connects += 1
            self._writable = True
            self._connected.set()
            self._cond.notify_all()
        if self._connects > 1:
            LOGGER.warning("reconnected to %s (connection %d)", self.options.url, self._connects)

    def _on_close(self, _proto: Any) -> None:  # reactor thread
        with self._cond:
            was = self._connected.is_set()
            self._connected.clear()
            self._proto = None
            self._writable = True
            self._in_flight_reset()
            if was:
                self._disconnects += 1
            self._cond.notify_all()
        if was and not self._closed:
            LOGGER.warning("connection to %s lost; reconnecting with backoff", self.options.url)

    def _set_writable(self, writable: bool) -> None:  # reactor thread
        with self._cond:
            if not writable and self._writable:
                self._flow_pauses += 1
            self._writable = writable
            self._cond.notify_all()

    def _stop_trying(self) -> None:
        ros = self._ros
        if ros is None:
            return
        try:
            from twisted.internet import reactor

            reactor.callFromThread(ros.factory.stopTrying)
        except Exception:  # pragma: no cover
            LOGGER.exception("could not stop reconnecting")

    # -- topics -------------------------------------------------------------------------
    def publisher(self, topic: str, message_type: str, *, queue_size: int | None = None,
                  policy: DropPolicy = "drop_oldest", latch: bool = False) -> Publisher:
        """Advertise ``topic`` and return its bounded publisher.

        Args:
            topic: Topic name, e.g. ``/cartesian_impedance_example_controller/equilibrium_pose``.
            message_type: ROS type, e.g. ``geometry_msgs/PoseStamped``.
            queue_size: Bound of the outgoing queue (default ``options.queue_size``).
            policy: ``"drop_oldest"`` (setpoints) or ``"drop_newest"`` when the queue is full.
            latch: Ask the bridge to latch the topic.
        """
        import roslibpy

        self._require_open()
        if policy not in _POLICIES:
            raise HardwareValueError(f"policy must be one of {list(_POLICIES)}, got {policy!r}")
        size = self.options.queue_size if queue_size is None else queue_size
        if isinstance(size, bool) or not isinstance(size, int) or size < 1:
            raise HardwareValueError(f"queue_size must be an int >= 1, got {size!r}")
        t = roslibpy.Topic(self._ros, topic, message_type, latch=latch, queue_size=1)
        t.advertise()
        pub = Publisher(self, t, size, policy)
        with self._cond:
            self._publishers.append(pub)
        return pub

    def subscribe(self, topic: str, message_type: str,
                  callback: Callable[[dict[str, Any], float], None] | None = None, *,
                  throttle_rate_ms: int = 0) -> Subscription:
        """Subscribe to ``topic``; the returned buffer always holds the newest message.

        Args:
            topic: Topic name.
            message_type: ROS type.
            callback: Optional ``callback(msg, t_receive)`` run in the reactor thread.
            throttle_rate_ms: Minimum interval between messages the bridge forwards [ms].
        """
        import roslibpy

        self._require_open()
        # queue_length=1: the bridge keeps only the newest message for a slow client.
        t = roslibpy.Topic(self._ros, topic, message_type, throttle_rate=throttle_rate_ms,
                           queue_length=1)
        sub = Subscription(t, callback)
        t.subscribe(sub._on_message)
        with self._cond:
            self._subscriptions.append(sub)
        return sub

    def _require_open(self) -> None:
        if self._closed:
            raise BridgeClosedError("transport is closed")
        if self._ros is None:
            raise BridgeClosedError("call connect() first")

    # -- sending ------------------------------------------------------------------------
    def _enqueue(self, pub: Publisher, msg: dict[str, Any]) -> bool:
        if self._closed:
            raise BridgeClosedError(f"cannot publish on {pub.name}: transport is closed")
        with self._cond:
            pub._enqueued += 1
            if len(pub._queue) >= pub.queue_size:
                pub._dropped += 1
                if pub.policy == "drop_newest":
                    return False
                pub._queue.popleft()
            pub._queue.append((next(self._seq), msg))
            pub._max_depth = max(pub._max_depth, len(pub._queue))
            self._cond.notify_all()
        return True

    def _in_flight_reset(self) -> None:
        # Messages handed to a connection that is gone were lost with it: count them as
        # dropped so the enqueued = sent + dropped + queued identity keeps holding.
        for p in self._publishers:
            p._dropped += p._in_flight
            p._in_flight = 0
        self._in_flight = 0

    def _ready_to_send(self) -> Publisher | None:
        """The publisher holding the globally oldest message, if sending is allowed now."""
        if not (self._connected.is_set() and self._writable and self._proto is not None
                and self._in_flight < self.options.max_in_flight):
            return None
        best: Publisher | None = None
        for p in self._publishers:
            if p._queue and (best is None or p._queue[0][0] < best._queue[0][0]):
                best = p
        return best

    def _send_loop(self) -> None:
        import roslibpy

        while True:
            with self._cond:
                pub = self._ready_to_send()
                while pub is None and not self._closed:
                    self._cond.wait(0.1)
                    pub = self._ready_to_send()
                if pub is None:  # closed
                    return
                _, msg = pub._queue.popleft()
                pub._in_flight += 1
                self._in_flight += 1
                proto, epoch = self._proto, self._connects
                self._publish_id += 1
                pid = self._publish_id
            # Straight to the current connection's protocol (not Topic.publish, which would
            # queue inside roslibpy while disconnected and replay stale setpoints later).
            proto.send_ros_message(roslibpy.Message({
                "op": "publish", "id": f"publish:{pub.name}:{pid}", "topic": pub.name,
                "msg": msg, "latch": pub._topic.latch}))
            # FIFO after that send on the reactor: runs once the frame is in the socket buffer.
            self._ros.call_later(0, lambda p=pub, e=epoch: self._on_written(p, e))

    def _on_written(self, pub: Publisher, epoch: int) -> None:  # reactor thread
        with self._cond:
            # after a reconnect the in-flight messages of the old connection were already
            # counted as dropped
            if epoch == self._connects and pub._in_flight > 0:
                pub._in_flight -= 1
                pub._sent += 1
                self._in_flight -= 1
            self._cond.notify_all()

    def flush(self, timeout: float) -> bool:
        """Wait until every queue is empty and nothing is in flight; False on timeout."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while any(p._queue or p._in_flight for p in self._publishers):
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self._cond.wait(min(remaining, 0.05))
        return True

    # -- observation and shutdown -------------------------------------------------------
    def stats(self) -> TransportStats:
        """Connection counters and per-publisher counters."""
        pubs = tuple(p.stats() for p in self._publishers)
        with self._cond:
            return TransportStats(self._connected.is_set(), self._connects, self._disconnects,
                                  self._flow_pauses, pubs)

    def close(self, flush_timeout: float = 0.5) -> None:
        """Send what is queued (up to ``flush_timeout`` [s]), unsubscribe, unadvertise and
        close the websocket without reconnecting. Idempotent."""
        if self._closed:
            return
        if self._ros is not None and self._connected.is_set():
            self.flush(flush_timeout)
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        if self._sender is not None:
            self._sender.join(timeout=1.0)
        ros = self._ros
        if ros is None:
            return
        self._stop_trying()
        if self._connected.is_set():
            for s in self._subscriptions:
                s._topic.unsubscribe()
            for p in self._publishers:
                p._topic.unadvertise()
            try:
                ros.close(timeout=2.0)
            except Exception:  # the peer may already be gone
                LOGGER.debug("close handshake did not complete", exc_info=True)
        else:
            # Not connected: drop roslibpy's pending 'ready' listeners so nothing is sent later.
            ros.off("ready")
        LOGGER.info("transport to %s closed", self.options.url)

    def __enter__(self) -> RosBridgeTransport:
        self.connect()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
