"""Inverse kinematics of one frame: a configuration that puts the frame at a target pose.

Used by task files to give an arm's start or goal as a tool pose instead of joint angles
(``start: {ik: {frame: ee_link, position: [...], rpy: [...]}}``, docs/own-robot.md).

The residual of a configuration ``q`` is

    e(q) = [p(q) − p*;  log₃(R*ᵀ R(q))]   (6,)   (or the first three rows without an orientation)

with ``p, R`` the frame's world position and rotation (``data.oMf``). Its Jacobian with respect
to the moved dofs is ``[R J_lin;  Jlog₃(R*ᵀ R) J_ang]`` (frame Jacobian in the LOCAL frame), so
that the step is in the tangent space and quaternion/continuous joints integrate correctly.

The step is Levenberg-Marquardt with the damping of Yamashita and Fukushima (λ = μ‖e‖²), which
makes it a Gauss-Newton step near a solution (quadratic convergence to round-off) and a damped
least-squares step far from one:

    (JᵀJ + λI) Δ = −Jᵀe,   q ← clip(q ⊕ Δ),

accepted when ‖e‖ decreases (μ ← μ/2), else rejected (μ ← 10μ). Joint position limits are box
constraints: a dof at a bound whose step points out of the box is fixed for that step (a small
active set), and the new configuration is clipped into the limits. A start that stalls (μ grows
past 1e8 or the budget is used) is followed by restarts from seeded random configurations inside
the limits; the best configuration found is returned with a status.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from .errors import MultibodyTypeError, MultibodyValueError, UnknownFrameError, UnknownJointError
from .model import FLOATING_JOINTS

__all__ = ["IKOptions", "IKResult", "IKStatus", "solve_ik", "frame_pose"]

#: Limits whose magnitude reaches this are "none" (Pinocchio stores ±DBL_MAX for unlimited joints).
_NO_LIMIT = 1e30


class IKStatus(enum.Enum):
    """Outcome of :func:`solve_ik`."""

    CONVERGED = "converged"  #: residual ≤ tol
    NOT_REACHED = "not_reached"  #: no start reached tol; the best configuration is returned


@dataclass(frozen=True)
class IKOptions:
    """Options of :func:`solve_ik`.

    Attributes:
        tol: success when ‖e‖ ≤ tol (position error [m] and rotation error [rad] stacked).
            Default 1e-9: the solver converges quadratically, so this costs a step or two more
            than 1e-6.
        max_iterations: Levenberg-Marquardt iterations per start (100).
        restarts: random starts tried after the given one stalls (20).
        seed: seed of the random starts (0; the result is deterministic).
        mu: initial damping factor μ of λ = μ‖e‖² (1.0).
    """

    tol: float = 1e-9
    max_iterations: int = 100
    restarts: int = 20
    seed: int = 0
    mu: float = 1.0

    def __post_init__(self) -> None:
        for name in ("tol", "mu"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not v > 0:
                raise MultibodyValueError(f"IKOptions.{name} must be a number > 0, got {v!r}")
        for name in ("max_iterations", "restarts", "seed"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < (1 if name == "max_iterations" else 0):
                raise MultibodyValueError(f"IKOptions.{name} must be an integer >= "
                                          f"{1 if name == 'max_iterations' else 0}, got {v!r}")


@dataclass(frozen=True)
class IKResult:
    """The best configuration :func:`solve_ik` found.

    Attributes:
        q: (n_q,) configuration (the joints not moved keep their ``q0`` values).
        status: :class:`IKStatus`.
        frame: the frame's name.
        position_error: ‖p(q) − p*‖ [m].
        rotation_error: angle of R*ᵀ R(q) [rad] (0 when no orientation was asked for).
        iterations: Levenberg-Marquardt iterations over all starts.
        attempts: starts tried (1 + restarts used).
        tolerance: the ``tol`` it was solved to.
        oriented: whether the target had an orientation (else ``rotation_error`` is 0).
    """

    q: np.ndarray
    status: IKStatus
    frame: str
    position_error: float
    rotation_error: float
    iterations: int
    attempts: int
    tolerance: float
    oriented: bool = True

    @property
    def converged(self) -> bool:
        return self.status is IKStatus.CONVERGED


def _frame_id(model: Any, frame: str) -> int:
    if not isinstance(frame, str):
        raise MultibodyTypeError(f"frame must be a frame name (str), got {type(frame).__name__}")
    names = [f.name for f in model.frames]
    if frame not in names or frame == "universe":
        raise UnknownFrameError(frame, [n for n in names if n != "universe"])
    return names.index(frame)


def frame_pose(model: Any, q: Any, frame: str) -> tuple[np.ndarray, np.ndarray]:
    """World position (3,) [m] and rotation (3, 3) of ``frame`` at configuration ``q`` (n_q,)."""
    import pinocchio as pin

    fid = _frame_id(model, frame)
    data = model.createData()
    pin.framesForwardKinematics(model, data, np.asarray(q, dtype=float))
    M = data.oMf[fid]
    return np.array(M.translation), np.array(M.rotation)


def _rotation(rotation: Any) -> np.ndarray | None:
    """A (3, 3) rotation from a matrix or a unit quaternion (x, y, z, w)."""
    if rotation is None:
        return None
    import pinocchio as pin

    R = np.asarray(rotation, dtype=float)
    if R.shape == (4,):
        n = float(np.linalg.norm(R))
        if not abs(n - 1.0) <= 1e-3:
            raise MultibodyValueError(f"rotation: a unit quaternion (x, y, z, w) is needed, got "
                                      f"{R.tolist()} (norm {n:.6g})")
        R = R / n
        return np.array(pin.Quaternion(R[3], R[0], R[1], R[2]).toRotationMatrix())
    if R.shape != (3, 3) or not np.all(np.isfinite(R)):
        raise MultibodyValueError(f"rotation must be a (3, 3) rotation matrix or a quaternion "
                                  f"(x, y, z, w), got shape {R.shape}")
    if np.abs(R.T @ R - np.eye(3)).max() > 1e-6 or np.linalg.det(R) < 0:
        raise MultibodyValueError("rotation must be a proper rotation matrix (RᵀR = I, det 1)")
    return R


def _moved_dofs(model: Any, fid: int, joints: Sequence[str] | None) -> tuple[list[int], np.ndarray]:
    """Joint ids moved and their velocity indices: ``joints`` by name, else every joint that
    supports the frame except floating ones (free-flyer, planar)."""
    names = list(model.names)
    if joints is None:
        ids = [j for j in model.supports[model.frames[fid].parentJoint]
               if j > 0 and model.joints[j].shortname() not in FLOATING_JOINTS
               and model.joints[j].nv > 0]
    else:
        if isinstance(joints, str) or not all(isinstance(j, str) for j in joints):
            raise MultibodyTypeError(f"joints must be a list of joint names, got {joints!r}")
        ids = []
        for jn in joints:
            if jn not in names or jn == "universe":
                raise UnknownJointError(jn, names[1:])
            ids.append(names.index(jn))
    if not ids:
        raise MultibodyValueError(f"frame {model.frames[fid].name!r}: no joint moves it (a frame "
                                  "fixed to the world, or only floating joints above it); name "
                                  "the joints to move")
    dofs = np.concatenate([np.arange(model.joints[j].idx_v, model.joints[j].idx_v + model.joints[j].nv)
                           for j in ids])
    return ids, dofs


def solve_ik(model: Any, frame: str, position: Any, rotation: Any = None, *, q0: Any = None,
             joints: Sequence[str] | None = None, options: IKOptions | None = None) -> IKResult:
    """A configuration within the joint limits that puts ``frame`` at ``position`` (and
    ``rotation``), by Levenberg-Marquardt (module docstring).

    Args:
        model: the Pinocchio model (e.g. ``plant.model``; its world frame is the scene's).
        frame: a frame name of the model (a link, a joint or a fixed frame).
        position: (3,) target world position of the frame's origin [m].
        rotation: target orientation: a (3, 3) rotation matrix or a unit quaternion
            (x, y, z, w); None: position only.
        q0: (n_q,) start of the search and the values of the joints not moved (default
            ``pinocchio.neutral``), clipped into the limits.
        joints: names of the joints moved (default: every non-floating joint between the frame
            and the world).
        options: :class:`IKOptions`.

    Returns:
        :class:`IKResult`; ``status`` CONVERGED when the residual is ≤ ``options.tol``, else
        NOT_REACHED with the best configuration found (the caller decides; task files raise
        :class:`plants.multibody.UnreachablePoseError`).

    Raises:
        UnknownFrameError / UnknownJointError: a name not in the model. ValueError / TypeError:
        a target of the wrong shape, a non-finite value, a rotation that is not one.
    """
    import pinocchio as pin

    options = IKOptions() if options is None else options
    if not isinstance(options, IKOptions):
        raise MultibodyTypeError(f"options must be IKOptions, got {type(options).__name__}")
    fid = _frame_id(model, frame)
    p_star = np.asarray(position, dtype=float)
    if p_star.shape != (3,) or not np.all(np.isfinite(p_star)):
        raise MultibodyValueError(f"position must be 3 finite numbers [m], got {position!r}")
    R_star = _rotation(rotation)
    q = np.array(pin.neutral(model) if q0 is None else q0, dtype=float)
    if q.shape != (model.nq,) or not np.all(np.isfinite(q)):
        raise MultibodyValueError(f"q0 must be ({model.nq},) finite, got shape {q.shape}")
    ids, dofs = _moved_dofs(model, fid, joints)

    # box limits of the moved one-dof joints (q index, lower, upper)
    lo, hi = np.array(model.lowerPositionLimit, float), np.array(model.upperPositionLimit, float)
    box_q, box_v = [], []
    for j in ids:
        jm = model.joints[j]
        if jm.nq == 1 and jm.nv == 1 and abs(lo[jm.idx_q]) < _NO_LIMIT and \
                abs(hi[jm.idx_q]) < _NO_LIMIT and lo[jm.idx_q] <= hi[jm.idx_q]:
            box_q.append(jm.idx_q)
            box_v.append(int(np.flatnonzero(dofs == jm.idx_v)[0]))
    box_q_arr, box_v_arr = np.array(box_q, int), np.array(box_v, int)
    lo_b, hi_b = lo[box_q_arr], hi[box_q_arr]

    def clip(qq: np.ndarray) -> np.ndarray:
        qq[box_q_arr] = np.clip(qq[box_q_arr], lo_b, hi_b)
        return qq

    data = model.createData()
    n_e = 3 if R_star is None else 6

    def residual(qq: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        pin.computeJointJacobians(model, data, qq)
        pin.updateFramePlacements(model, data)
        M = data.oMf[fid]
        J6 = pin.getFrameJacobian(model, data, fid, pin.LOCAL)[:, dofs]
        e = np.empty(n_e)
        J = np.empty((n_e, dofs.size))
        e[:3] = M.translation - p_star
        J[:3] = M.rotation @ J6[:3]
        if R_star is not None:
            E = R_star.T @ M.rotation
            e[3:] = pin.log3(E)
            J[3:] = pin.Jlog3(E) @ J6[3:]
        return e, J

    def errors(e: np.ndarray) -> tuple[float, float]:
        return float(np.linalg.norm(e[:3])), float(np.linalg.norm(e[3:])) if n_e == 6 else 0.0

    def descend(qq: np.ndarray) -> tuple[np.ndarray, float, int]:
        e, J = residual(qq)
        err = float(np.linalg.norm(e))
        mu = options.mu
        k = 0
        for k in range(1, options.max_iterations + 1):
            if err <= options.tol or mu > 1e8:
                break
            g = J.T @ e
            lam = mu * err * err
            H = J.T @ J
            free = np.ones(dofs.size, bool)
            for _ in range(dofs.size + 1):  # fix dofs at a bound whose step leaves the box
                Hf = H[np.ix_(free, free)] + lam * np.eye(int(free.sum()))
                step = np.zeros(dofs.size)
                step[free] = -np.linalg.solve(Hf, g[free])
                qb, sb = qq[box_q_arr], step[box_v_arr]
                out = ((qb <= lo_b + 1e-12) & (sb < 0)) | ((qb >= hi_b - 1e-12) & (sb > 0))
                out &= free[box_v_arr]
                if not out.any():
                    break
                free[box_v_arr[out]] = False
                if not free.any():
                    break
            dv = np.zeros(model.nv)
            dv[dofs] = step
            q_new = clip(pin.integrate(model, qq, dv))
            e_new, J_new = residual(q_new)
            err_new = float(np.linalg.norm(e_new))
            if err_new < err:
                qq, e, J, err = q_new, e_new, J_new, err_new
                mu = max(mu / 2.0, 1e-8)
            else:
                mu *= 10.0
        return qq, err, k

    rng = np.random.default_rng(options.seed)
    best_q, best_err, best_e = None, np.inf, None
    iterations = attempts = 0
    start = clip(q.copy())
    for attempt in range(options.restarts + 1):
        if attempt:  # a random start: the moved dofs anywhere in their limits (±π if none)
            dv = np.zeros(model.nv)
            dv[dofs] = rng.uniform(-np.pi, np.pi, dofs.size)
            start = pin.integrate(model, q, dv)
            start[box_q_arr] = rng.uniform(lo_b, hi_b)
        qq, err, k = descend(start)
        iterations += k
        attempts += 1
        if err < best_err:
            best_q, best_err = qq, err
        if best_err <= options.tol:
            break
    best_e = residual(best_q)[0]
    pos_err, rot_err = errors(best_e)
    status = IKStatus.CONVERGED if best_err <= options.tol else IKStatus.NOT_REACHED
    return IKResult(q=best_q, status=status, frame=frame, position_error=pos_err,
                    rotation_error=rot_err, iterations=iterations, attempts=attempts,
                    tolerance=options.tol, oriented=R_star is not None)
