"""ROS-bridge transport (roslibpy client), a small rosbridge v2 server for rehearsals, and
rosauth-compatible authentication (:mod:`hardware.rosbridge.auth`)."""

from .server import ClientStats, RosBridgeServer, ServerOptions, ServerThread
from .transport import (
    BridgeOptions,
    Publisher,
    PublisherStats,
    Received,
    RosBridgeTransport,
    Subscription,
    TransportStats,
)

__all__ = [
    "BridgeOptions",
    "ClientStats",
    "Publisher",
    "PublisherStats",
    "Received",
    "RosBridgeServer",
    "RosBridgeTransport",
    "ServerOptions",
    "ServerThread",
    "Subscription",
    "TransportStats",
]
