"""A small rosbridge v2 protocol server (asyncio + :mod:`websockets`) for rehearsals and tests.

It implements the part of the protocol a roslibpy client uses for topics and services —
``advertise``, ``unadvertise``, ``publish``, ``subscribe``, ``unsubscribe``, ``call_service``
(answered by services registered in-process) — and answers anything else with a ``status``
error. Messages are routed between websocket clients and in-process endpoints: the simulated
robot registers ``on_publish`` handlers for the command topics and publishes its state with
:meth:`RosBridgeServer.publish`.

Each client has a bounded outgoing queue (drop-oldest, counted in ``ClientStats.dropped``) and
its own writer task, so a slow client never stalls the simulation or other clients.
``pause_reading`` stops reading from clients, to rehearse a slow consumer: the websocket's
incoming buffer fills, TCP flow control pushes back, and the client's transport must cope.

All methods that mutate state run on the server's event loop; use the ``*_threadsafe``
variants or :class:`ServerThread` from other threads.
"""

from __future__ import annotations

import asyncio
import collections
import json
import logging
import threading
import time
from dataclasses import dataclass
from typing import Any, Awaitable, Callable

from ..errors import BridgeError, HardwareValueError

__all__ = ["ClientStats", "RosBridgeServer", "ServerThread"]

LOGGER = logging.getLogger("hardware.rosbridge.server")

PublishHandler = Callable[[dict[str, Any], float], None]
ServiceHandler = Callable[[dict[str, Any]], dict[str, Any]]


@dataclass(frozen=True)
class ClientStats:
    """Traffic of one connected client."""

    peer: str
    received: int
    sent: int
    dropped: int
    subscriptions: tuple[str, ...]


class _Client:
    def __init__(self, ws: Any, queue_size: int):
        self.ws = ws
        self.peer = str(getattr(ws, "remote_address", "?"))
        self.queue: collections.deque[str] = collections.deque()
        self.queue_size = queue_size
        self.ready = asyncio.Event()
        self.subs: dict[str, set[str]] = {}  # topic -> subscription ids
        self.advertised: set[str] = set()
        self.received = 0
        self.sent = 0
        self.dropped = 0

    def enqueue(self, text: str) -> None:
        if len(self.queue) >= self.queue_size:
            self.queue.popleft()
            self.dropped += 1
        self.queue.append(text)
        self.ready.set()


class RosBridgeServer:
    """rosbridge v2 server on ``ws://host:port`` (port 0 picks a free port).

    Args:
        host: Interface to bind; loopback by default (this is a rehearsal tool).
        port: TCP port; 0 lets the OS pick one (read it back from :attr:`port`).
        client_queue_size: Bound of each client's outgoing queue [messages].
        max_incoming_queue: Frames websockets buffers per client before it stops reading the
            socket (its ``max_queue``).
    """

    def __init__(self, host: str = "127.0.0.1", port: int = 0, *, client_queue_size: int = 64,
                 max_incoming_queue: int = 16):
        if not isinstance(port, int) or not 0 <= port < 65536:
            raise HardwareValueError(f"port must be an int in [0, 65535], got {port!r}")
        self.host = host
        self._requested_port = port
        self.client_queue_size = client_queue_size
        self.max_incoming_queue = max_incoming_queue
        self._server: Any = None
        self._clients: set[_Client] = set()
        self._types: dict[str, str] = {}
        self._handlers: dict[str, list[PublishHandler]] = collections.defaultdict(list)
        self._services: dict[str, ServiceHandler] = {}
        self._reading = asyncio.Event()
        self._reading.set()
        self.received_by_topic: collections.Counter[str] = collections.Counter()
        self.errors: list[str] = []
        self.port: int = 0
        self.loop: asyncio.AbstractEventLoop | None = None

    @property
    def url(self) -> str:
        """``ws://host:port`` of the running server."""
        return f"ws://{self.host}:{self.port}"

    # -- lifecycle ----------------------------------------------------------------------
    async def start(self) -> None:
        """Bind and start accepting clients."""
        from websockets.asyncio.server import serve

        self.loop = asyncio.get_running_loop()
        self._server = await serve(self._handle, self.host, self._requested_port,
                                   max_queue=self.max_incoming_queue, compression=None,
                                   ping_interval=None)
        self.port = self._server.sockets[0].getsockname()[1]
        LOGGER.info("rosbridge server listening on %s", self.url)

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
        self._check_type(topic, message_type)

    def publish(self, topic: str, msg: dict[str, Any]) -> int:
        """Send ``msg`` to every client subscribed to ``topic`` and to in-process handlers.

        Returns:
            The number of client subscriptions it was queued for.
        """
        return self._route(topic, msg, time.monotonic())

    def on_publish(self, topic: str, message_type: str, handler: PublishHandler) -> None:
        """Call ``handler(msg, t_receive)`` (on the loop) for every message on ``topic``."""
        self._check_type(topic, message_type)
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
        return [ClientStats(c.peer, c.received, c.sent, c.dropped, tuple(sorted(c.subs)))
                for c in self._clients]

    @property
    def n_clients(self) -> int:
        """Number of connected clients."""
        return len(self._clients)

    # -- protocol -----------------------------------------------------------------------
    def _check_type(self, topic: str, message_type: str) -> bool:
        known = self._types.get(topic)
        if known is not None and message_type and known != message_type:
            return False
        if message_type:
            self._types[topic] = message_type
        return True

    def _route(self, topic: str, msg: dict[str, Any], t: float) -> int:
        self.received_by_topic[topic] += 1
        for h in self._handlers.get(topic, ()):
            try:
                h(msg, t)
            except Exception:  # a faulty handler must not kill the connection
                LOGGER.exception("handler of %s failed", topic)
        n = 0
        text = None
        for c in self._clients:
            if c.subs.get(topic):
                if text is None:
                    text = json.dumps({"op": "publish", "topic": topic, "msg": msg})
                c.enqueue(text)
                n += 1
        return n

    def _status(self, c: _Client, level: str, msg: str, op_id: str | None = None) -> None:
        self.errors.append(msg)
        LOGGER.warning("client %s: %s", c.peer, msg)
        out: dict[str, Any] = {"op": "status", "level": level, "msg": msg}
        if op_id is not None:
            out["id"] = op_id
        c.enqueue(json.dumps(out))

    def _dispatch(self, c: _Client, text: str | bytes) -> None:
        try:
            m = json.loads(text)
            op = m["op"]
        except (ValueError, KeyError, TypeError):
            self._status(c, "error", f"malformed rosbridge message: {str(text)[:80]!r}")
            return
        op_id = m.get("id")
        topic = m.get("topic")
        if op in ("advertise", "subscribe") and not (isinstance(topic, str) and topic):
            self._status(c, "error", f"{op} without a topic", op_id)
            return
        if op == "advertise":
            if not self._check_type(topic, m.get("type", "")):
                self._status(c, "error", f"{topic} is already {self._types[topic]}, cannot "
                             f"advertise as {m.get('type')}", op_id)
                return
            c.advertised.add(topic)
        elif op == "unadvertise":
            c.advertised.discard(topic)
        elif op == "publish":
            if not isinstance(topic, str) or not isinstance(m.get("msg"), dict):
                self._status(c, "error", "publish needs a topic and a msg object", op_id)
                return
            self._route(topic, m["msg"], time.monotonic())
        elif op == "subscribe":
            if not self._check_type(topic, m.get("type", "")):
                self._status(c, "error", f"{topic} is {self._types[topic]}, cannot subscribe "
                             f"as {m.get('type')}", op_id)
                return
            c.subs.setdefault(topic, set()).add(op_id or topic)
        elif op == "unsubscribe":
            ids = c.subs.get(topic, set())
            ids.discard(op_id or topic)
            if not ids or op_id is None:
                c.subs.pop(topic, None)
        elif op == "call_service":
            self._call_service(c, m)
        elif op in ("set_level", "auth"):
            pass
        else:
            self._status(c, "error", f"unsupported op {op!r}", op_id)

    def _call_service(self, c: _Client, m: dict[str, Any]) -> None:
        name = m.get("service")
        reply: dict[str, Any] = {"op": "service_response", "service": name, "id": m.get("id")}
        handler = self._services.get(name)
        if handler is None:
            reply.update(result=False, values=f"service {name!r} does not exist")
        else:
            try:
                reply.update(result=True, values=handler(m.get("args") or {}))
            except Exception as e:
                reply.update(result=False, values=f"{type(e).__name__}: {e}")
        c.enqueue(json.dumps(reply))

    async def _writer(self, c: _Client) -> None:
        while True:
            await c.ready.wait()
            while c.queue:
                await c.ws.send(c.queue.popleft())
                c.sent += 1
            c.ready.clear()

    async def _handle(self, ws: Any) -> None:
        c = _Client(ws, self.client_queue_size)
        self._clients.add(c)
        writer = asyncio.create_task(self._writer(c))
        LOGGER.info("client %s connected", c.peer)
        try:
            while True:
                await self._reading.wait()
                try:
                    text = await ws.recv()
                except Exception:  # ConnectionClosed (clean or not)
                    break
                c.received += 1
                self._dispatch(c, text)
        finally:
            writer.cancel()
            self._clients.discard(c)
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
