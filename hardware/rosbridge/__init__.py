"""ROS-bridge transport (roslibpy client) and a small rosbridge v2 server for rehearsals."""

from .server import ClientStats, RosBridgeServer, ServerThread
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
    "ServerThread",
    "Subscription",
    "TransportStats",
]
