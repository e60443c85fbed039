"""A second robot transport: libfranka without ROS, through franky (``franky-control``).

Many labs drive the Panda/FR3 directly through libfranka's Python bindings. :class:`FrankyRobot`
puts such a robot behind the same deploy loop as the rosbridge path: it offers what the loop
reads from :class:`~hardware.franka.FrankaAdapter` (``state()`` with the newest
:class:`~hardware.franka.RobotState`, the latched ``fault``, ``command(SafeCommand)``, the
rejection and refusal counters), so the planner, the safety layer (every command is a
:class:`~hardware.safety.SafeCommand`, holds included), the watchdog and the logs are the same
code. Select it with ``transport: franky`` in the deploy configuration (``franky:`` section:
:class:`FrankyOptions`).

How it maps onto franky's API (franky-control >= 2.0):

* **Control**: one ``franky.CartesianImpedanceTrackingMotion`` started asynchronously
  (``Robot.move(motion, asynchronous=True)``): franky's client-side Cartesian impedance
  controller on libfranka's 1 kHz torque interface, stiffness in N/m and N m/rad
  (``translational_stiffness``, ``rotational_stiffness``), critical damping, torque-rate
  limit ``max_delta_tau``. Each command sets its reference
  (``motion.set_reference(CartesianReference(Affine(p_eq, q)))``), read by the controller at
  its next 1 kHz cycle.
* **Feed-forward force**: the tracking motion has no wrench input, so the desired force f is
  folded into the equilibrium, p_eq = p + f / k_t: with a stiffness in N/m the spring then
  pushes exactly K(p − x) + f, the same torque Jᵀ(K(p − x) + f) as a feed-forward term
  (damping unchanged). The torque part of the wrench is dropped (the task's is zero).
* **State**: a reader thread polls ``Robot.state`` (libfranka's ``franka::RobotState``) at
  ``state_rate_hz`` and keeps a new :class:`~hardware.franka.RobotState` whenever the robot's
  own clock (``state.time``) advanced: position/orientation from ``O_T_EE``, velocity from the
  measured end-effector twist (``Robot.current_cartesian_state.velocity``, J q̇: no finite
  differences), ``O_F_ext_hat_K``, ``robot_mode`` and ``current_errors`` (franky's
  ``Errors`` carries franka_msgs' 41 flag names, :data:`hardware.messages.ERROR_FIELDS`). The
  stamp is the local wall clock at the read (the robot's clock is not synchronised with it;
  receive latency on the FCI link is ~1 ms). A robot that stops sending (its clock stalls)
  leaves the state to age, and the deploy loop's watchdog trips as over the bridge.
* **Faults**: a ``robot_mode`` other than IDLE/MOVE, any ``current_errors`` flag, or the
  control loop ending on its own (a libfranka ``ControlException``: reflex, communication
  constraints) latches :attr:`FrankyRobot.fault` on the reader thread; from then on
  :meth:`FrankyRobot.command` publishes nothing. Recovery (``Robot.recover_from_errors``) is
  an operator action and a new run.

Tested against ``franky-sim`` (a MuJoCo simulator speaking the libfranka network protocol):
``tests/test_hardware_franky.py``.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from . import messages
from .config import LoadableOptions
from .errors import BridgeConnectionError, HardwareValueError, MessageError
from .franka import RobotFault, RobotState
from .latest_state import LatestValidState
from .safety import SafeCommand

__all__ = ["FrankyOptions", "FrankyRobot", "franky_available"]

LOGGER = logging.getLogger("hardware.franky")


def franky_available() -> bool:
    """True when ``franky`` (pip ``franky-control``) can be imported."""
    try:
        import franky  # noqa: F401
    except ImportError:
        return False
    return True


@dataclass(frozen=True)
class FrankyOptions(LoadableOptions):
    """Connection and controller settings of the libfranka transport."""

    host: str = "172.16.0.2"
    """The robot's FCI address (franky-sim: the 127.x.y.z it prints)."""
    translational_stiffness: float = 1000.0
    """Stiffness of franky's Cartesian impedance controller [N/m]."""
    rotational_stiffness: float = 50.0
    """[N m/rad]."""
    max_delta_tau: float = 1.0
    """Largest torque change per 1 kHz cycle [N m] (as franka_ros' controllers)."""
    state_rate_hz: float = 500.0
    """How often the reader thread polls the robot state [Hz]."""
    realtime: bool = True
    """Require a real-time kernel (libfranka's ``RealtimeConfig.Enforce``); False to connect
    from a normal kernel (simulators, tests)."""
    relative_dynamics_factor: float = 0.1
    """franky's dynamics scaling of its own motion generators (not used by the impedance
    tracking; kept low for any franky motion started outside the loop)."""

    def __post_init__(self) -> None:
        if not isinstance(self.host, str) or not self.host:
            raise HardwareValueError(f"FrankyOptions.host must be a hostname, got "
                                     f"{self.host!r}")
        for name in ("translational_stiffness", "rotational_stiffness", "max_delta_tau",
                     "state_rate_hz", "relative_dynamics_factor"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not (
                    math.isfinite(v) and v > 0):
                raise HardwareValueError(f"FrankyOptions.{name} must be a positive number, "
                                         f"got {v!r}")
        if not isinstance(self.realtime, bool):
            raise HardwareValueError(f"FrankyOptions.realtime must be a bool, got "
                                     f"{self.realtime!r}")


class FrankyRobot(LatestValidState[RobotState]):
    """A Franka driven through franky, with the interface of
    :class:`~hardware.franka.FrankaAdapter` (module docstring).

    Args:
        options: :class:`FrankyOptions`.
        franky_module: the ``franky`` module to use (default: ``import franky``); any module
            with franky's API (e.g. one of its alternative builds).
    """

    _what = "robot state"
    _logger = LOGGER

    def __init__(self, options: FrankyOptions | None = None, franky_module: Any = None):
        super().__init__()
        self.options = options or FrankyOptions()
        self._franky = franky_module
        self.robot: Any = None
        self.motion: Any = None
        self.fault: RobotFault | None = None
        self.refused_commands = 0
        self.commands_sent = 0
        self.state_count = 0
        """Robot states accepted (new robot clock values)."""
        self._seq = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._last_robot_time = -math.inf
        self._control_started = False
        self.last_reference: tuple[np.ndarray, np.ndarray] | None = None
        """(position (3,), quaternion (4,) xyzw) of the last reference sent [m]."""

    # -- connection -----------------------------------------------------------------------
    @property
    def is_connected(self) -> bool:
        """True while the reader thread runs and the control motion is active."""
        return (self._thread is not None and self._thread.is_alive()
                and self.robot is not None and bool(self.robot.is_in_control))

    def connect(self, timeout: float = 5.0) -> None:
        """Connect to the robot, read its first state, start the impedance tracking motion at
        the measured pose and the reader thread.

        Raises:
            BridgeConnectionError: franky missing, or no robot at ``options.host``.
        """
        o = self.options
        fr = self._franky
        if fr is None:
            try:
                import franky as fr
            except ImportError as e:
                raise BridgeConnectionError(
                    "the libfranka transport needs franky: pip install 'c3mpc[libfranka]' "
                    "(franky-control)") from e
            self._franky = fr
        try:
            rt = fr.RealtimeConfig.Enforce if o.realtime else fr.RealtimeConfig.Ignore
            self.robot = fr.Robot(o.host, realtime_config=rt)
            self.robot.relative_dynamics_factor = o.relative_dynamics_factor
            s = self.robot.state
        except Exception as e:  # franky raises its own exception types (network, realtime)
            raise BridgeConnectionError(f"no libfranka robot at {o.host}: "
                                        f"{type(e).__name__}: {e}") from e
        self._read(s, time.monotonic())
        self.motion = fr.CartesianImpedanceTrackingMotion(
            translational_stiffness=o.translational_stiffness,
            rotational_stiffness=o.rotational_stiffness, max_delta_tau=o.max_delta_tau)
        T = s.O_T_EE
        self.motion.set_reference(fr.CartesianReference(fr.Affine(T.translation,
                                                                  T.quaternion)))
        self.robot.move(self.motion, asynchronous=True)
        self._control_started = True
        self._thread = threading.Thread(target=self._reader, name="franky-state", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not self.robot.is_in_control and time.monotonic() < deadline:
            time.sleep(0.005)

    def close(self, flush_timeout: float = 1.0) -> None:
        """Stop the reader and the control motion (the robot then holds where it is under
        libfranka's own controller)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(flush_timeout + 1.0)
        if self.robot is not None and self._control_started:
            try:
                self.robot.stop()
                self.robot.join_motion(timeout=flush_timeout)
            except Exception as e:  # noqa: BLE001 - a preempted motion ends with an exception
                LOGGER.debug("motion ended: %s", e)

    # -- state ----------------------------------------------------------------------------
    def _reader(self) -> None:
        period = 1.0 / self.options.state_rate_hz
        nxt = time.monotonic()
        while not self._stop.is_set():
            s = None
            try:
                s = self.robot.state
                self._read(s, time.monotonic())
            except Exception as e:  # noqa: BLE001 - the state stays stale: the watchdog trips
                self._reject(f"robot state read failed: {type(e).__name__}: {e}")
            if self._control_started and self.fault is None:
                try:
                    in_control = bool(self.robot.is_in_control)
                except Exception:  # noqa: BLE001 - no answer is no control
                    in_control = False
                if not in_control:
                    mode = int(s.robot_mode.value) if s is not None else 0
                    errs = _errors(s.current_errors) if s is not None else ()
                    self._latch(mode, errs or ("control_loop_ended",), time.monotonic(),
                                self._motion_error())
            nxt += period
            self._stop.wait(max(0.0, nxt - time.monotonic()))

    def _motion_error(self) -> str:
        try:
            self.robot.join_motion(timeout=0.0)
        except Exception as e:  # noqa: BLE001 - the ControlException that ended the motion
            return f"{type(e).__name__}: {e}"
        return "the control motion ended"

    def _latch(self, mode: int, errors: tuple[str, ...], t: float, why: str = "") -> None:
        with self._lock:
            if self.fault is None:
                self.fault = RobotFault(mode, errors, t)
                LOGGER.error("robot fault: %s%s; commanding stopped", self.fault.describe(),
                             f" ({why})" if why else "")

    def _read(self, s: Any, t_receive: float) -> None:
        """Turn a franky RobotState into a :class:`RobotState` if the robot clock advanced."""
        rt = float(s.time.to_sec())
        if rt <= self._last_robot_time:
            return
        T = np.array(s.O_T_EE.matrix, dtype=float)
        wrench = np.array(s.O_F_ext_hat_K, dtype=float)
        mode = int(s.robot_mode.value)
        errors = _errors(s.current_errors)
        try:
            v = np.array(self.robot.current_cartesian_state.velocity.end_effector_twist.linear,
                         dtype=float)
        except Exception as e:  # noqa: BLE001 - no twist: reject rather than guess
            self._reject(f"no end-effector twist in the robot state: {e}")
            return
        if not (np.all(np.isfinite(T)) and np.all(np.isfinite(wrench))
                and np.all(np.isfinite(v))):
            self._reject(f"non-finite robot state at robot time {rt}")
            return
        p, q = messages.pose_from_transform(T)
        stamp = time.time()
        with self._lock:
            self._last_robot_time = rt
            prev = self._state
            if prev is not None and stamp <= prev.stamp:
                stamp = prev.stamp + 1e-6
            if (mode not in messages.COMMANDABLE_MODES or errors) and self.fault is None:
                self.fault = RobotFault(mode, errors, t_receive)
                LOGGER.error("robot fault: %s; commanding stopped", self.fault.describe())
            self.state_count += 1
            self._state = RobotState(p, q, v, stamp, t_receive, self.state_count, mode,
                                     errors, wrench)

    # -- commands -------------------------------------------------------------------------
    def command(self, cmd: SafeCommand, stamp: float = 0.0) -> bool:
        """Send the equilibrium of ``cmd`` (its force folded in, module docstring).

        Returns:
            False (nothing sent) once a fault is latched, else True.

        Raises:
            TypeError: ``cmd`` is not a :class:`~hardware.safety.SafeCommand`.
            MessageError: non-finite pose or force (last line of defence).
        """
        if not isinstance(cmd, SafeCommand):
            raise TypeError(f"FrankyRobot.command needs a SafeCommand from the safety layer, "
                            f"got {type(cmd).__name__}")
        if self.fault is not None:
            self.refused_commands += 1
            return False
        p = np.asarray(cmd.position, dtype=float)
        q = np.asarray(cmd.quaternion, dtype=float)
        f = np.asarray(cmd.force, dtype=float)
        if not (p.shape == (3,) and q.shape == (4,) and f.shape == (3,)
                and np.all(np.isfinite(p)) and np.all(np.isfinite(q))
                and np.all(np.isfinite(f))):
            raise MessageError("franky", "refusing a non-finite command")
        p_eq = p + f / self.options.translational_stiffness
        fr = self._franky
        self.motion.set_reference(fr.CartesianReference(fr.Affine(p_eq, q / np.linalg.norm(q))))
        self.last_reference = (p_eq, q)
        self.commands_sent += 1
        return True

    def statuses(self) -> list[str]:
        """Messages of the robot side (the fault, if any), for the deploy summary."""
        return [] if self.fault is None else [self.fault.describe()]


def _errors(errs: Any) -> tuple[str, ...]:
    """Names of the true flags of a franky/libfranka ``Errors``."""
    return tuple(n for n in messages.ERROR_FIELDS if bool(getattr(errs, n, False)))
