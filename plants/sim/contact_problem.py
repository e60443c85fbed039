"""The solver-neutral contact problem of one time step, and the result every solver returns.

One step of the two-stage scheme of seed 001 (§3, Algorithm 1) leaves, after the free motion
``v*`` has been computed, the linearized momentum balance (seed 001 eq. 18)

    A (v - v*) = Jᵀ γ,   γ_i ∈ F_i = {‖γ_t‖ ≤ μ_i γ_n}

together with a contact law per contact (compliant for SAP, rigid or compliant for the
augmented-Lagrangian solvers of seed 000 and the non-smooth Newton of seed 002).
:class:`ContactProblem` holds exactly that data, independent of how it is solved, so that a step
can be saved, replayed and handed to any registered solver.

Conventions:
    * Contact frames have the **normal last**: the rows ``3i, 3i+1`` of ``J`` are the two tangent
      directions of contact ``i`` and row ``3i+2`` the normal (pointing so that ``v_n > 0`` means
      separating). Impulses ``γ`` use the same order ``(γ_t1, γ_t2, γ_n)``. This is the order of
      SAP (seed 001 §1) and of CANAL/SubADMM (seed 000).
    * Generalized velocities are grouped by **tree** (a free body, or an articulated robot):
      tree ``t`` owns the contiguous dofs ``tree_starts[t] : tree_starts[t+1]``. ``A`` is block
      diagonal over trees; ``contact_trees[i] = (t1, t2)`` names the (at most two) trees contact
      ``i`` touches, ``-1`` for the world (anchored geometry).
    * Units: velocities in the generalized units of the model, φ in [m], k in [N/m], τ_d in [s],
      δt in [s]; γ is an impulse in [N·s].
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import IntEnum
from pathlib import Path
from typing import Any, Callable, ClassVar, TypeVar

import numpy as np

from ..errors import UnknownSolverError

__all__ = [
    "ContactBodies",
    "ContactProblem",
    "ContactSolverStatus",
    "ContactSolverResult",
    "ContactSolver",
    "register_contact_solver",
    "make_contact_solver",
    "available_contact_solvers",
    "SolverPresets",
    "inert_contacts",
    "without_contacts",
    "unilateral_form",
    "BoundedConstraintError",
]


def _as_float_array(name: str, value: Any, ndim: int) -> np.ndarray:
    try:
        arr = np.array(value, dtype=float)
    except (TypeError, ValueError) as err:
        raise TypeError(f"{name} must be a float array, got {type(value).__name__}") from err
    if arr.ndim != ndim:
        raise ValueError(f"{name} must have {ndim} dimension(s), got shape {arr.shape}")
    if np.isnan(arr).any():
        raise ValueError(f"{name} contains NaN")
    arr.setflags(write=False)
    return arr


@dataclass(frozen=True)
class ContactBodies:
    """The bodies behind each contact: what body-level Jacobian splitting needs (seed 000 eq. 30-31,
    40-41, App. A). Attached by the stepper; optional on :class:`ContactProblem`.

    Contact ``i`` acts between the bodies (Pinocchio joints) ``joints[i] = (a, b)`` at the world
    point ``points[i]`` with frame rows ``frames[i] = (t1, t2, n)``; joint 0 is the world. Its
    Jacobian row block is ``J_i = J_{i,b} J_b − J_{i,a} J_a`` with ``J_{i,k} = F_i [I₃  −[p_i]]``
    (eq. 44) and ``J_k`` the world-frame joint Jacobian of body ``k`` (``world_jacobian`` masked by
    ``joint_support[k]``: spatial velocity = (velocity of the point at the world origin, angular
    velocity)).

    Attributes:
        model: the ``pinocchio.Model`` (a reference: consumers must copy it before modifying it).
        q: (n_q,) configuration at which ``J``, ``points`` and ``world_jacobian`` were computed.
        joints: (n_c, 2) int joint index of side a and side b (0 = world / anchored geometry).
        points: (n_c, 3) contact points in the world frame [m].
        frames: (n_c, 3, 3) contact frames, rows (t1, t2, n) in world coordinates.
        local_points: (n_c, 2, 3) the contact point in the frame of joint a and of joint b (the
            frame in which ``model.inertias`` are expressed; zeros on a world side).
        world_jacobian: (6, n_v) ``data.J`` at ``q`` (linear rows first, world frame).
        joint_support: (n_joints, n_v) 0/1: dof k moves joint j iff ``joint_support[j, k] = 1``.
        mass_q: (n_q,) configuration at which the mass matrix inside ``A`` was evaluated.
        mass_diagonal: (n_v,) ``A = M(mass_q) + diag(mass_diagonal)`` (the δt-scaled joint
            stiffness/damping of seed 001 eq. 15; zeros for the explicit free motion).
    """

    model: Any
    q: np.ndarray
    joints: np.ndarray
    points: np.ndarray
    frames: np.ndarray
    local_points: np.ndarray
    world_jacobian: np.ndarray
    joint_support: np.ndarray
    mass_q: np.ndarray
    mass_diagonal: np.ndarray

    def __post_init__(self) -> None:
        nq, nv, nj = int(self.model.nq), int(self.model.nv), int(self.model.njoints)
        joints = np.asarray(self.joints, dtype=np.int64).reshape(-1, 2)
        n_c = joints.shape[0]
        checks = (("q", self.q, (nq,)), ("points", self.points, (n_c, 3)), ("frames", self.frames, (n_c, 3, 3)),
                  ("local_points", self.local_points, (n_c, 2, 3)),
                  ("world_jacobian", self.world_jacobian, (6, nv)), ("joint_support", self.joint_support, (nj, nv)),
                  ("mass_q", self.mass_q, (nq,)), ("mass_diagonal", self.mass_diagonal, (nv,)))
        for name, value, shape in checks:
            if np.shape(value) != shape:
                raise ValueError(f"ContactBodies.{name} must have shape {shape}, got {np.shape(value)}")
        if ((joints < 0) | (joints >= nj)).any():
            raise ValueError(f"ContactBodies.joints must lie in [0, {nj}) (0 = world)")
        object.__setattr__(self, "joints", joints)

    @classmethod
    def trusted(cls, **fields: Any) -> "ContactBodies":
        """Bodies from arrays already of the documented shapes and dtypes (``joints`` int64), every
        field given by name, **without validation**: for the stepper, which builds them every step."""
        self = object.__new__(cls)
        self.__dict__.update(fields)
        return self

    @property
    def n_c(self) -> int:
        """Number of contacts."""
        return self.joints.shape[0]

    def piece_rows(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The body-split pieces (seed 000 eq. 30-31): one per (contact, non-world side).

        Returns:
            contact: (n_p,) contact index of each piece (side a pieces first, then side b).
            joint: (n_p,) body (joint) of each piece.
            rows: (n_p, 3, n_v) ``J_ij = ±F_i [I −[p_i]] J_b`` (− for side a), so that the pieces
                of contact i sum to ``J_i``.
        """
        sides = [np.flatnonzero(self.joints[:, k] > 0) for k in range(2)]
        contact = np.concatenate(sides)
        joint = np.concatenate([self.joints[sides[0], 0], self.joints[sides[1], 1]])
        sign = np.concatenate([-np.ones(sides[0].size), np.ones(sides[1].size)])
        F, p = self.frames[contact], self.points[contact]
        Jw = np.asarray(self.world_jacobian)
        # F (v_o − p × ω) = F v_o + (p × F) ω, row-wise (rows of F are the frame directions)
        C = np.cross(p[:, None, :], F)
        rows = (F @ Jw[:3] + C @ Jw[3:]) * (sign[:, None, None] * self.joint_support[joint][:, None, :])
        return contact, joint, rows


_NO_BOUNDS = np.zeros(0)
_NO_BOUNDS.flags.writeable = False


@dataclass(frozen=True)
class ContactProblem:
    """Data of one contact step (seed 001 eq. 18 plus the contact laws).

    Attributes:
        A: (n_v, n_v) symmetric positive definite dynamics matrix ``M + δt² θ θ_vq K + δt θ D``
            (seed 001 eq. 15), block diagonal over trees.
        v_star: (n_v,) free-motion velocity ``v*`` (contact impulses zero).
        J: (3 n_c, n_v) contact Jacobian at ``q_0``, rows ``(t1, t2, n)`` per contact.
        phi0: (n_c,) signed distances at ``q_0`` in [m] (< 0 when overlapping).
        mu: (n_c,) friction coefficients, ``≥ 0``.
        stiffness: (n_c,) contact stiffness k in [N/m], ``> 0`` (``inf`` = rigid, for solvers that
            support it; SAP then uses the near-rigid regularization alone).
        dissipation: (n_c,) dissipation time scale τ_d in [s], ``≥ 0``.
        dt: time step δt in [s], ``> 0``.
        tree_starts: (n_trees + 1,) int offsets of each tree's dofs; ``tree_starts[-1] = n_v``.
        contact_trees: (n_c, 2) int trees touched by each contact (``-1`` = world).
        v0: (n_v,) previous-step velocity (the default warm start); defaults to ``v_star``.
        M_diag: (n_v,) diagonal of the mass matrix, used for the stopping-criterion scaling
            ``D = diag(M)^-1/2`` (seed 001 eq. 25); defaults to ``diag(A)``.
        bodies: optional :class:`ContactBodies` (bodies, points and frames of the contacts, the
            model and configuration) for body-level splitting (SubADMM); ``None`` when the problem
            was built by hand or loaded from a file (``save`` does not store it). It describes the
            first ``n_c − n_limits`` (geometric) contacts.
        n_limits: the last ``n_limits`` constraints are joint-limit constraints (seed 001 §VII:
            limits as constraints of the same convex problem): frictionless (μ = 0), tangent rows
            zero, normal row ``±e_k`` (k the limited dof: + for a lower limit, − for an upper
            one), φ₀ the distance to the limit in the joint's unit ([rad] or [m]), rigid (k = inf,
            τ_d = 0). Every solver sees them as frictionless rigid contacts. More generally the
            last ``n_limits`` are the *joint-space constraints* of the step (``docs/sap.md``,
            "Constraints beyond contact"): one scalar row each (the normal row; tangent rows
            zero, μ = 0) with the compliant law of the contacts, ``γ = −δt (k (φ₀ + δt ġ) + k τ_d ġ)``
            (ġ the row times v), projected onto the impulse interval
            ``[gamma_lower, gamma_upper]``: joint limits ``[0, ∞)`` (unilateral), bilateral
            constraints (weld, ball, distance, coupler rows; an actuator without effort limit)
            ``(−∞, ∞)``, PD actuators with effort limit e ``[−δt e, δt e]``, joint dry friction f
            ``[−δt f, δt f]`` (with φ₀ = 0, rigid).
        gamma_lower, gamma_upper: (n_limits,) impulse bounds [N·s or N·m·s] of those constraints
            (``gamma_lower ≤ 0 ≤ gamma_upper``); ``None``: ``0`` and ``inf`` (unilateral, as joint
            limits). SAP takes any bounds; the other solvers take unilateral and bilateral rows
            (:func:`unilateral_form`) and raise :class:`BoundedConstraintError` on finite bounds.
    """

    A: np.ndarray
    v_star: np.ndarray
    J: np.ndarray
    phi0: np.ndarray
    mu: np.ndarray
    stiffness: np.ndarray
    dissipation: np.ndarray
    dt: float
    tree_starts: np.ndarray | None = None
    contact_trees: np.ndarray | None = None
    v0: np.ndarray | None = None
    M_diag: np.ndarray | None = None
    bodies: ContactBodies | None = None
    n_limits: int = 0
    gamma_lower: np.ndarray | None = None
    gamma_upper: np.ndarray | None = None

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        A = _as_float_array("A", self.A, 2)
        n_v = A.shape[0]
        if A.shape != (n_v, n_v):
            raise ValueError(f"A must be square (n_v, n_v), got shape {A.shape}")
        if not np.isfinite(A).all():
            raise ValueError("A contains Inf")
        if np.abs(A - A.T).max(initial=0.0) > 1e-10 * max(1.0, np.abs(A).max(initial=0.0)):
            raise ValueError("A must be symmetric")
        v_star = _as_float_array("v_star", self.v_star, 1)
        if v_star.shape != (n_v,):
            raise ValueError(f"v_star must have shape ({n_v},), got {v_star.shape}")
        J = _as_float_array("J", np.reshape(self.J, (-1, n_v)) if np.size(self.J) == 0 else self.J, 2)
        if J.shape[1] != n_v or J.shape[0] % 3:
            raise ValueError(f"J must have shape (3 n_c, {n_v}), got {J.shape}")
        n_c = J.shape[0] // 3
        vecs = {}
        for name in ("phi0", "mu", "stiffness", "dissipation"):
            arr = _as_float_array(name, np.reshape(getattr(self, name), -1) if np.ndim(getattr(self, name)) == 0 else getattr(self, name), 1)
            if arr.shape == (1,) and n_c != 1:
                arr = np.full(n_c, arr[0])
                arr.setflags(write=False)
            if arr.shape != (n_c,):
                raise ValueError(f"{name} must have shape ({n_c},) (one per contact), got {arr.shape}")
            vecs[name] = arr
        for name, arr in (("v_star", v_star), ("J", J), ("phi0", vecs["phi0"]), ("mu", vecs["mu"]),
                          ("dissipation", vecs["dissipation"])):
            if not np.isfinite(arr).all():
                raise ValueError(f"{name} contains Inf")
        if (vecs["mu"] < 0).any():
            raise ValueError(f"mu must be >= 0 (friction coefficient), got min {vecs['mu'].min()}")
        if (vecs["stiffness"] <= 0).any():
            raise ValueError(
                f"stiffness must be > 0 [N/m] (inf allowed for rigid), got min {vecs['stiffness'].min()}"
            )
        if (vecs["dissipation"] < 0).any():
            raise ValueError(f"dissipation must be >= 0 [s], got min {vecs['dissipation'].min()}")
        try:
            dt = float(self.dt)
        except (TypeError, ValueError) as err:
            raise TypeError(f"dt must be a float, got {type(self.dt).__name__}") from err
        if not np.isfinite(dt) or dt <= 0:
            raise ValueError(f"dt must be a finite time step > 0 [s], got {self.dt}")

        if self.tree_starts is None:
            tree_starts = np.array([0, n_v], dtype=np.int64)
        else:
            tree_starts = np.asarray(self.tree_starts, dtype=np.int64).copy()
            if (
                tree_starts.ndim != 1
                or tree_starts.size < 2
                or tree_starts[0] != 0
                or tree_starts[-1] != n_v
                or (np.diff(tree_starts) <= 0).any()
            ):
                raise ValueError(
                    f"tree_starts must increase strictly from 0 to n_v={n_v}, got {tree_starts}"
                )
        n_trees = tree_starts.size - 1
        if self.contact_trees is None:
            contact_trees = self._trees_from_jacobian(J, tree_starts)
        else:
            contact_trees = np.asarray(self.contact_trees, dtype=np.int64).reshape(-1, 2).copy()
            if contact_trees.shape != (n_c, 2):
                raise ValueError(f"contact_trees must have shape ({n_c}, 2), got {contact_trees.shape}")
            if ((contact_trees < -1) | (contact_trees >= n_trees)).any():
                raise ValueError(f"contact_trees entries must be -1 or in [0, {n_trees})")
        # A must be block diagonal over trees (the solvers rely on it).
        tree_of = np.repeat(np.arange(n_trees), np.diff(tree_starts))
        off_block = tree_of[:, None] != tree_of[None, :]
        if n_trees > 1 and np.abs(A[off_block]).max(initial=0.0) > 0.0:
            raise ValueError("A must be block diagonal over the trees given by tree_starts")
        tree_starts.setflags(write=False)
        contact_trees.setflags(write=False)

        v0 = v_star if self.v0 is None else _as_float_array("v0", self.v0, 1)
        if v0.shape != (n_v,) or not np.isfinite(v0).all():
            raise ValueError(f"v0 must be a finite array of shape ({n_v},)")
        M_diag = np.diag(A).copy() if self.M_diag is None else _as_float_array("M_diag", self.M_diag, 1)
        if M_diag.shape != (n_v,) or not (M_diag > 0).all():
            raise ValueError(f"M_diag must be positive with shape ({n_v},)")
        M_diag.setflags(write=False)
        n_limits = self.n_limits
        if isinstance(n_limits, (bool, np.bool_)) or not isinstance(n_limits, (int, np.integer)):
            raise TypeError(f"n_limits must be an int, got {type(n_limits).__name__}")
        if not 0 <= n_limits <= n_c:
            raise ValueError(f"n_limits must lie in [0, n_c={n_c}], got {n_limits}")
        if n_limits and (vecs["mu"][n_c - n_limits:] != 0).any():
            raise ValueError("joint-limit constraints (the last n_limits) must have mu = 0")
        set_(self, "n_limits", int(n_limits))
        lo = np.zeros(n_limits) if self.gamma_lower is None else np.array(self.gamma_lower, dtype=float).reshape(-1)
        hi = np.full(n_limits, np.inf) if self.gamma_upper is None else np.array(self.gamma_upper, dtype=float).reshape(-1)
        for name, arr in (("gamma_lower", lo), ("gamma_upper", hi)):
            if arr.shape != (n_limits,) or np.isnan(arr).any():
                raise ValueError(f"{name} must have shape ({n_limits},) (one per joint-space constraint) without "
                                 f"NaN, got shape {arr.shape}")
        if (lo > 0).any() or (hi < 0).any():
            raise ValueError("impulse bounds must satisfy gamma_lower <= 0 <= gamma_upper")
        lo.setflags(write=False)
        hi.setflags(write=False)
        set_(self, "gamma_lower", lo)
        set_(self, "gamma_upper", hi)
        if self.bodies is not None:
            if not isinstance(self.bodies, ContactBodies):
                raise TypeError(f"bodies must be ContactBodies or None, got {type(self.bodies).__name__}")
            if self.bodies.n_c != n_c - n_limits or self.bodies.world_jacobian.shape[1] != n_v:
                raise ValueError(f"bodies must describe {n_c - n_limits} contacts and {n_v} dofs, got "
                                 f"{self.bodies.n_c} and {self.bodies.world_jacobian.shape[1]}")

        set_(self, "A", A)
        set_(self, "v_star", v_star)
        set_(self, "J", J)
        for name, arr in vecs.items():
            set_(self, name, arr)
        set_(self, "dt", dt)
        set_(self, "tree_starts", tree_starts)
        set_(self, "contact_trees", contact_trees)
        set_(self, "v0", v0)
        set_(self, "M_diag", M_diag)

    @classmethod
    def trusted(
        cls,
        A: np.ndarray,
        v_star: np.ndarray,
        J: np.ndarray,
        phi0: np.ndarray,
        mu: np.ndarray,
        stiffness: np.ndarray,
        dissipation: np.ndarray,
        dt: float,
        tree_starts: np.ndarray,
        contact_trees: np.ndarray,
        v0: np.ndarray,
        M_diag: np.ndarray | None = None,
        bodies: ContactBodies | None = None,
        n_limits: int = 0,
        gamma_lower: np.ndarray | None = None,
        gamma_upper: np.ndarray | None = None,
    ) -> "ContactProblem":
        """A problem from arrays already in canonical form, **without validation**.

        For internal producers that build the arrays themselves every step (the stepper): float64
        arrays of the documented shapes, ``J`` of shape (3 n_c, n_v) even when n_c = 0,
        ``tree_starts``/``contact_trees`` int64, ``A`` symmetric and block diagonal over trees.
        The arrays are marked read-only (not copied). User-built problems go through the
        validating constructor.
        """
        self = object.__new__(cls)
        if M_diag is None:
            M_diag = A.diagonal().copy()
        fields = {"A": A, "v_star": v_star, "J": J, "phi0": phi0, "mu": mu, "stiffness": stiffness,
                  "dissipation": dissipation, "tree_starts": tree_starts, "contact_trees": contact_trees, "v0": v0,
                  "M_diag": M_diag}
        for arr in fields.values():
            arr.setflags(write=False)  # (half the cost of `arr.flags.writeable = False`: ~0.4 µs each)
        if gamma_lower is None:
            gamma_lower = _NO_BOUNDS if n_limits == 0 else np.zeros(n_limits)
        if gamma_upper is None:
            gamma_upper = _NO_BOUNDS if n_limits == 0 else np.full(n_limits, np.inf)
        fields.update(dt=float(dt), bodies=bodies, n_limits=int(n_limits), gamma_lower=gamma_lower,
                      gamma_upper=gamma_upper)
        self.__dict__.update(fields)  # a frozen dataclass's fields live in __dict__ (no per-field setattr)
        return self

    @staticmethod
    def _trees_from_jacobian(J: np.ndarray, tree_starts: np.ndarray) -> np.ndarray:
        n_c = J.shape[0] // 3
        n_trees = tree_starts.size - 1
        out = np.full((n_c, 2), -1, dtype=np.int64)
        if n_c == 0:
            return out
        nz = np.abs(J).reshape(n_c, 3, -1).max(axis=1) > 0  # (n_c, n_v)
        touched = np.add.reduceat(nz, tree_starts[:-1], axis=1) > 0  # (n_c, n_trees)
        if (touched.sum(axis=1) > 2).any():
            raise ValueError("each contact may touch at most two trees (rows of J)")
        for t in range(n_trees):  # loop over trees, not contacts
            col = touched[:, t]
            first_free = out[:, 0] == -1
            out[col & first_free, 0] = t
            out[col & ~first_free, 1] = t
        return out

    # ------------------------------------------------------------------ sizes and views
    @property
    def n_v(self) -> int:
        """Number of generalized velocities."""
        return self.A.shape[0]

    @property
    def n_c(self) -> int:
        """Number of contacts."""
        return self.J.shape[0] // 3

    @property
    def n_geometric(self) -> int:
        """Number of geometric contacts (the constraints before the joint limits)."""
        return self.n_c - self.n_limits

    @property
    def bounded(self) -> np.ndarray:
        """(n_limits,) bool: joint-space constraints whose impulse interval is not ``[0, ∞)``."""
        return (self.gamma_lower != 0) | (self.gamma_upper != np.inf)

    @property
    def n_trees(self) -> int:
        """Number of trees (independent blocks of ``A``)."""
        return self.tree_starts.size - 1

    def tree_slice(self, t: int) -> slice:
        """Dofs of tree ``t``."""
        return slice(int(self.tree_starts[t]), int(self.tree_starts[t + 1]))

    def delassus_diagonal(self) -> np.ndarray:
        """(n_c, 3, 3) blocks ``W_ii = J_i A⁻¹ J_iᵀ`` of the Delassus operator, per tree.

        Computed with batched inverses of the tree blocks (``A`` is block diagonal), so exactly
        ``Σ_t J_{i,t} A_t⁻¹ J_{i,t}ᵀ`` (seed 001 §V, the O(n) estimate is exact here).
        """
        W = np.zeros((self.n_c, 3, 3))
        if self.n_c == 0:
            return W
        Jc = self.J.reshape(self.n_c, 3, self.n_v)
        if self.n_v <= 64:  # small: one dense inverse beats the per-tree bookkeeping
            X = self.J @ np.linalg.inv(self.A)
            return np.einsum("cik,cjk->cij", X.reshape(self.n_c, 3, self.n_v), Jc)
        ts = self.tree_starts
        sizes = np.diff(ts)
        for size in np.unique(sizes):  # batched inverse over the trees of one size
            trees = np.flatnonzero(sizes == size)
            idx = ts[trees][:, None] + np.arange(size)[None, :]  # (n_t, size)
            blocks = self.A[idx[:, :, None], idx[:, None, :]]
            inv = np.linalg.inv(blocks)
            pos = np.full(self.n_trees, -1)
            pos[trees] = np.arange(trees.size)
            for side in range(2):
                t = self.contact_trees[:, side]
                rows = np.flatnonzero((t >= 0) & (sizes[np.maximum(t, 0)] == size))
                if rows.size == 0:
                    continue
                k = pos[t[rows]]
                Jt = np.take_along_axis(Jc[rows], idx[k][:, None, :], axis=2)  # (r, 3, size)
                W[rows] += Jt @ inv[k] @ Jt.transpose(0, 2, 1)
        return W

    # ------------------------------------------------------------------ persistence
    def save(self, path: str | Path) -> Path:
        """Write the problem to ``path`` (``.npz``) so that the step can be replayed.

        ``bodies`` (which holds a Pinocchio model) is not stored: a loaded problem has none.
        """
        path = Path(path)
        if path.suffix != ".npz":
            path = path.with_suffix(".npz")
        np.savez_compressed(
            path,
            A=self.A,
            v_star=self.v_star,
            J=self.J,
            phi0=self.phi0,
            mu=self.mu,
            stiffness=self.stiffness,
            dissipation=self.dissipation,
            dt=np.array(self.dt),
            tree_starts=self.tree_starts,
            contact_trees=self.contact_trees,
            v0=self.v0,
            M_diag=self.M_diag,
            n_limits=np.array(self.n_limits),
            gamma_lower=self.gamma_lower,
            gamma_upper=self.gamma_upper,
        )
        return path

    @classmethod
    def load(cls, path: str | Path) -> "ContactProblem":
        """Read a problem written by :meth:`save`."""
        with np.load(Path(path)) as data:
            kw = {k: data[k] for k in data.files}
        kw["dt"] = float(kw["dt"])
        kw["n_limits"] = int(kw.get("n_limits", 0))
        return cls(**kw)


class ContactSolverStatus(IntEnum):
    """Outcome of a contact solve."""

    SOLVED = 0
    """The stopping criterion was met."""
    MAX_ITERATIONS = 1
    """The iteration budget ran out before the stopping criterion was met."""
    LINE_SEARCH_FAILED = 2
    """No descent along the Newton direction (round-off on an ill-conditioned Hessian)."""
    NUMERICAL_ERROR = 3
    """A factorization failed or a NaN appeared."""
    STAGNATED = 4
    """The iterates stopped improving before the stopping criterion was met (the accuracy the
    method reaches in float64 on this problem, or a cycle); the best iterate is returned."""

    @property
    def ok(self) -> bool:
        """True when the velocities can be used to advance the state."""
        return self is ContactSolverStatus.SOLVED


@dataclass(frozen=True)
class ContactSolverResult:
    """Solution of a :class:`ContactProblem`.

    Attributes:
        status: see :class:`ContactSolverStatus`.
        v: (n_v,) next-step generalized velocities.
        gamma: (3 n_c,) contact impulses ``(γ_t1, γ_t2, γ_n)`` per contact, [N·s].
        iterations: outer (Newton) iterations.
        line_search_iterations: total line-search iterations over all outer iterations.
        residual: final stopping-criterion quantity ``‖D ∇ℓ‖`` (seed 001 eq. 26 left side).
        momentum_error: dimensionless ``e_m = ‖D∇ℓ‖ / max(‖D p‖, ‖D Jᵀγ‖)`` (seed 001 eq. 32).
        cost: final cost (for SAP the primal cost ℓ_p of eq. 24).
        solve_time: wall time in [s].
        timings: per-phase wall times in [s].
        residual_history: stopping quantity per iteration (first entry = warm start).
        solver: name of the solver.
        message: detail for failure statuses.
    """

    status: ContactSolverStatus
    v: np.ndarray
    gamma: np.ndarray
    iterations: int
    line_search_iterations: int = 0
    residual: float = float("nan")
    momentum_error: float = float("nan")
    cost: float = float("nan")
    solve_time: float = 0.0
    timings: dict[str, float] = field(default_factory=dict)
    residual_history: tuple[float, ...] = ()
    solver: str = ""
    message: str = ""

    @classmethod
    def trusted(cls, **fields: Any) -> "ContactSolverResult":
        """A result from fields already of the documented types, every field given, **without** the
        dataclass ``__init__`` (5 µs of a small scene's step): for compiled solver paths."""
        self = object.__new__(cls)
        self.__dict__.update(fields)
        return self

    @property
    def ok(self) -> bool:
        """True when the stopping criterion was met."""
        return self.status.ok

    @property
    def usable(self) -> bool:
        """True when ``v`` and ``gamma`` are finite: converged, or the best iterate of a solve that
        ran out of budget (MAX_ITERATIONS), stagnated or whose line search failed. The simulator
        advances on usable results unless it runs ``strict``."""
        return (self.status is not ContactSolverStatus.NUMERICAL_ERROR and bool(np.isfinite(self.v).all())
                and bool(np.isfinite(self.gamma).all()))


class SolverPresets:
    """Named option presets of a solver's frozen options dataclass (mixed into each of them).

    ``"default"`` is the dataclass's defaults: solve to the stopping criterion within a budget
    chosen so that every shipped scene completes. ``"realtime"`` (:meth:`realtime`, defined per
    solver) bounds the work per step to the fixed iteration counts of the seeds; it still stops
    early when the criterion is met, and a step that uses its whole budget returns its best
    iterate with status ``MAX_ITERATIONS``.
    """

    PRESETS: ClassVar[tuple[str, ...]] = ("default", "realtime")

    @classmethod
    def realtime(cls, **overrides: Any):
        raise NotImplementedError

    @classmethod
    def preset(cls, name: str, **overrides: Any):
        """The options of preset ``name`` (one of :attr:`PRESETS`) with keyword ``overrides``."""
        if not isinstance(name, str):
            raise TypeError(f"preset must be a string, got {type(name).__name__}")
        if name == "default":
            return cls(**overrides)
        if name == "realtime":
            return cls.realtime(**overrides)
        raise ValueError(f"unknown preset {name!r} of {cls.__name__}; presets: {', '.join(cls.PRESETS)}")


def resolve_options(cls: type, options: Any, overrides: dict[str, Any]) -> Any:
    """Options of type ``cls`` from ``None`` (defaults), a preset name or a ``cls`` instance, with
    keyword ``overrides`` applied (unknown keys raise ``TypeError`` from the dataclass)."""
    from dataclasses import replace

    if options is None:
        return cls(**overrides)
    if isinstance(options, str):
        return cls.preset(options, **overrides)
    if not isinstance(options, cls):
        raise TypeError(f"options must be {cls.__name__} or a preset name, got {type(options).__name__}")
    return replace(options, **overrides) if overrides else options


def inert_contacts(problem: ContactProblem) -> np.ndarray:
    """(n_c,) bool: contacts whose three Jacobian rows are all exactly zero.

    Such a contact (e.g. between a fixed link and the world, or two links of one rigid
    sub-assembly) cannot change any velocity and no velocity can change its gap: its impulse has
    no effect on the step, and its Delassus block W_ii = J_i A⁻¹ J_iᵀ is zero, which the solvers'
    per-contact scalings (SAP's R_i ∝ ‖W_ii‖, PGS's 1/W_nn, ...) cannot take. The stepper's rows
    are masked by the difference of the two bodies' supports, so they are exactly zero then (as is
    the difference of two equal Jacobians); the exact test costs ~2 µs on cube-rest-5's 36
    contacts, a relative threshold on |J| three times that, every solve.
    """
    n_c = problem.n_c
    if n_c == 0:
        return np.zeros(0, dtype=bool)
    return ~problem.J.reshape(n_c, -1).any(axis=1)


def without_contacts(problem: ContactProblem, drop: np.ndarray) -> ContactProblem:
    """``problem`` without the contacts where ``drop`` (n_c,) is True (its ``bodies``, joint-space
    constraints and their impulse bounds too)."""
    from dataclasses import replace

    keep = ~np.asarray(drop, dtype=bool)
    n_v = problem.n_v
    n_geo = problem.n_geometric
    keep_joint = keep[n_geo:]
    J = problem.J.reshape(problem.n_c, 3, n_v)[keep].reshape(-1, n_v)
    bodies = problem.bodies
    if bodies is not None:
        kg = keep[:n_geo]  # bodies describe the geometric contacts only
        bodies = replace(bodies, joints=bodies.joints[kg], points=bodies.points[kg], frames=bodies.frames[kg],
                         local_points=bodies.local_points[kg])
    return ContactProblem.trusted(
        A=problem.A, v_star=problem.v_star, J=np.ascontiguousarray(J), phi0=problem.phi0[keep].copy(),
        mu=problem.mu[keep].copy(), stiffness=problem.stiffness[keep].copy(),
        dissipation=problem.dissipation[keep].copy(), dt=problem.dt, tree_starts=problem.tree_starts,
        contact_trees=problem.contact_trees[keep].copy(), v0=problem.v0, M_diag=problem.M_diag, bodies=bodies,
        n_limits=int(keep_joint.sum()), gamma_lower=problem.gamma_lower[keep_joint].copy(),
        gamma_upper=problem.gamma_upper[keep_joint].copy(),
    )


def expand_impulses(result: ContactSolverResult, drop: np.ndarray) -> ContactSolverResult:
    """``result`` of the reduced problem with zero impulses inserted for the dropped contacts."""
    from dataclasses import replace

    drop = np.asarray(drop, dtype=bool)
    gamma = np.zeros((drop.size, 3))
    gamma[~drop] = np.asarray(result.gamma).reshape(-1, 3)
    return replace(result, gamma=gamma.reshape(-1))


class BoundedConstraintError(ValueError):
    """A solver that takes only unilateral and bilateral joint-space constraints was given rows with
    finite impulse bounds (a PD actuator with an effort limit, joint dry friction).

    Attributes:
        solver: the solver's name.
        rows: indices (into the joint-space constraints) of the bounded rows.
    """

    def __init__(self, solver: str, rows: np.ndarray):
        self.solver = solver
        self.rows = np.asarray(rows)
        super().__init__(
            f"contact solver {solver!r} cannot take joint-space constraints with finite impulse bounds "
            f"({self.rows.size} rows: PD actuators with an effort limit or joint dry friction); use "
            f"solver='sap' (seed 001 §VII), or remove them (SceneBuilder.add_urdf(joint_dynamics=False), "
            f"effort_limit=None)")


def unilateral_form(problem: ContactProblem, solver: str = "", keep_bounded: bool = False,
                    ) -> tuple[ContactProblem, Callable[[ContactSolverResult], ContactSolverResult]]:
    """``problem`` with every bilateral joint-space constraint (impulse interval (−∞, ∞)) written as
    two opposed unilateral ones, for solvers whose only joint-space constraint is a frictionless
    unilateral contact; and the map of a result of that problem back to ``problem``'s impulses.

    A bilateral row ``g`` (gap φ₀, row r) becomes ``g ≥ 0`` (φ₀, r) and ``−g ≥ 0`` (−φ₀, −r),
    appended after the joint-space constraints; its impulse is γ₊ − γ₋. For the linear compliant
    law of the contacts this is exact: γ₊ = max(0, y), γ₋ = max(0, −y), γ₊ − γ₋ = y (``docs/sap.md``).

    ``keep_bounded=True`` (SAP: its compiled cone kernels then take the bilateral rows, and only
    the rows with a finite interval go through its interval projection) keeps the rows with finite
    bounds as they are, with their bounds, instead of raising.

    Raises:
        BoundedConstraintError: some rows have finite bounds (PD with effort limit, dry friction).
    """
    if problem.n_limits == 0 or not problem.bounded.any():
        return problem, lambda result: result
    lo, hi = problem.gamma_lower, problem.gamma_upper
    bilateral = (lo == -np.inf) & (hi == np.inf)
    unilateral = (lo == 0) & (hi == np.inf)
    bad = np.flatnonzero(~(bilateral | unilateral))
    if bad.size and not keep_bounded:
        raise BoundedConstraintError(solver, bad)
    if not bilateral.any():
        return problem, lambda result: result
    n_c, n_v, n_geo = problem.n_c, problem.n_v, problem.n_geometric
    mirror = n_geo + np.flatnonzero(bilateral)  # contact indices of the bilateral rows
    Jc = problem.J.reshape(n_c, 3, n_v)
    J = np.concatenate([Jc, -Jc[mirror]]).reshape(-1, n_v)
    cat = np.concatenate
    reduced = ContactProblem.trusted(
        A=problem.A, v_star=problem.v_star, J=np.ascontiguousarray(J), phi0=cat([problem.phi0, -problem.phi0[mirror]]),
        mu=cat([problem.mu, problem.mu[mirror]]), stiffness=cat([problem.stiffness, problem.stiffness[mirror]]),
        dissipation=cat([problem.dissipation, problem.dissipation[mirror]]), dt=problem.dt,
        tree_starts=problem.tree_starts, contact_trees=cat([problem.contact_trees, problem.contact_trees[mirror]]),
        v0=problem.v0, M_diag=problem.M_diag, bodies=problem.bodies, n_limits=problem.n_limits + mirror.size,
        gamma_lower=cat([np.where(bilateral, 0.0, lo), np.zeros(mirror.size)]),
        gamma_upper=cat([hi, np.full(mirror.size, np.inf)]),
    )

    def back(result: ContactSolverResult) -> ContactSolverResult:
        from dataclasses import replace

        gamma = np.asarray(result.gamma).reshape(-1, 3)
        out = gamma[:n_c].copy()
        out[mirror] -= gamma[n_c:]
        return replace(result, gamma=out.reshape(-1))

    return reduced, back


class ContactSolver:
    """Interface of a contact solver: ``solve(problem, v_guess=None) -> ContactSolverResult``.

    Every registered solver removes inert contacts (:func:`inert_contacts`, zero Jacobian) before
    it iterates and reports zero impulses for them.
    """

    name: str = ""
    options_type: type | None = None
    bounded_constraints: bool = False
    """True when the solver takes joint-space rows with finite impulse bounds (PD actuators with an
    effort limit, joint dry friction); the others get :class:`BoundedConstraintError`, and the
    simulator falls back (``plants.sim.stepper.Simulator``)."""

    def solve(self, problem: ContactProblem, v_guess: np.ndarray | None = None) -> ContactSolverResult:
        raise NotImplementedError


_SOLVERS: dict[str, Callable[..., ContactSolver]] = {}
S = TypeVar("S", bound=Callable[..., ContactSolver])


def register_contact_solver(name: str) -> Callable[[S], S]:
    """Class decorator registering a contact solver under ``name`` ("sap", "canal", ...)."""

    def deco(factory: S) -> S:
        if name in _SOLVERS and _SOLVERS[name] is not factory:
            raise ValueError(f"contact solver {name!r} is already registered")
        _SOLVERS[name] = factory
        return factory

    return deco


def available_contact_solvers() -> list[str]:
    """Names accepted by :func:`make_contact_solver`, sorted."""
    return sorted(_SOLVERS)


def make_contact_solver(name: str, **options: Any) -> ContactSolver:
    """Build the solver registered as ``name`` with keyword options (or an options object)."""
    if not isinstance(name, str):
        raise TypeError(f"solver must be a string, got {type(name).__name__}")
    try:
        factory = _SOLVERS[name]
    except KeyError:
        raise UnknownSolverError(name, available_contact_solvers()) from None
    return factory(**options)

