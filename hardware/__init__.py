"""Deployment on a Franka through a ROS bridge or libfranka, and simulated robots to rehearse it.

- :mod:`hardware.rosbridge`: roslibpy transport (reconnect, back-pressure, rosauth
  authentication) and a rosbridge v2 server for rehearsals (as rosbridge_suite for roslibjs
  and roslibpy: fragments, rosapi and parameters, client services, QoS, latch; auth, Origin
  allow-list, bounded resources, a status for every refused request).
- :mod:`hardware.franka`: franka_ros adapter (robot state in, equilibrium pose and desired
  wrench out); :mod:`hardware.camera`: ball detections in.
- :mod:`hardware.impedance`: configurable gains of the impedance law of seed 003 eq. (36)
  (the law itself is :mod:`plants.impedance`).
- :mod:`hardware.safety`: workspace box, velocity/step limits, holds, watchdog, intervention
  log; every command sent is a :class:`SafeCommand` it made.
- :mod:`hardware.planner`: the ``Planner`` protocol and the reference circle planner;
  :mod:`hardware.planner_c3`: C3 (``c3mpc.algorithm3``) adapted to the deploy loop.
- :mod:`hardware.deploy`: the deploy loop behind ``c3mpc deploy``.
- :mod:`hardware.franky_transport`: the second transport, libfranka without ROS through
  franky (``c3mpc deploy --franky HOST``; ``pip install c3mpc[libfranka]``).
- :mod:`hardware.twin`: the issue-7 simulation (full Panda + impedance controller + emulated
  cameras) served over rosbridge (``c3mpc twin franka-ball --port 9090``), with the full
  ``FrankaState`` (:mod:`hardware.twin_state`) and an emulation of franka_ros' stock Cartesian
  impedance controller (:mod:`hardware.stock_impedance`).
- :mod:`hardware.lockstep`: the twin and the deploy loop on the simulated clock in one
  process (a deterministic rehearsal, :func:`~hardware.lockstep.run_lockstep`).
- :mod:`hardware.sim_robot`: a simple simulated end effector and ball served over rosbridge
  (``python -m hardware.sim_robot --port 9090``), fast enough for the transport tests.

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
from .safety import (
    Intervention,
    InterventionKind,
    SafeCommand,
    SafetyLayer,
    SafetyOptions,
    Target,
)

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
    "SafeCommand",
    "SafetyLayer",
    "SafetyOptions",
    "Target",
]
