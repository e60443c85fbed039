"""ROS-bridge transport (roslibpy client), a rosbridge v2 server for rehearsals that behaves as
rosbridge_suite for what roslibjs and roslibpy send (with the ``/rosapi/*`` services and a
parameter server, :mod:`hardware.rosbridge.rosapi`), and rosauth-compatible authentication
(:mod:`hardware.rosbridge.auth`)."""

from .rosapi import ParamServer
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
    "ParamServer",
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
