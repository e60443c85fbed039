"""Deployment on a Franka through a ROS bridge, and a simulated robot to rehearse it.

- :mod:`hardware.rosbridge`: roslibpy transport (reconnect, back-pressure) and a rosbridge v2
  server for rehearsals.
- :mod:`hardware.franka`: franka_ros adapter (robot state in, equilibrium pose and desired
  wrench out); :mod:`hardware.camera`: ball detections in.
- :mod:`hardware.impedance`: the impedance law of seed 003 eq. (36) and its gains.
- :mod:`hardware.safety`: workspace box, velocity/step limits, watchdog, intervention log.
- :mod:`hardware.planner`: the ``Planner`` protocol and the reference circle planner.
- :mod:`hardware.deploy`: the deploy loop behind ``c3mpc deploy``.
- :mod:`hardware.sim_robot`: simulated Franka served over rosbridge
  (``python -m hardware.sim_robot --port 9090``).

Submodules import roslibpy/websockets lazily; ``pip install c3mpc[ros]`` provides them.
"""

from .errors import (
    BridgeClosedError,
    BridgeConnectionError,
    BridgeError,
    HardwareError,
    HardwareValueError,
    MessageError,
)
from .impedance import ImpedanceParams
from .safety import Intervention, InterventionKind, SafetyLayer, SafetyOptions, Target

__all__ = [
    "BridgeClosedError",
    "BridgeConnectionError",
    "BridgeError",
    "HardwareError",
    "HardwareValueError",
    "ImpedanceParams",
    "Intervention",
    "InterventionKind",
    "MessageError",
    "SafetyLayer",
    "SafetyOptions",
    "Target",
]
