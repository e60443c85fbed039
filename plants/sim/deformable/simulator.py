"""Time stepping of a :class:`DeformableWorld` with seed 004's solver, and its trajectory type.

:class:`DeformableSimulator` has the rigid :class:`plants.sim.Simulator`'s verbs (``step``,
``run``, ``set_state``, ``t``, ``dt``, ``info``) and returns a :class:`DeformableTrajectory`,
a :class:`plants.sim.Trajectory` (``t``, ``q``, ``v``, ``stats``) whose rigid ``q``/``v`` are
(N + 1, 0) when the obstacles are kinematic, or the configurations/velocities of the world's
:class:`~plants.sim.deformable.coupling.CoupledRobot` s (concatenated in their order) when robots are
coupled two-way, with ``deformable_positions[name]`` and ``deformable_velocities[name]`` arrays
(N + 1, n_nodes, 3) [m], [m/s] beside them.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, fields
from typing import Any

import numpy as np

from ...errors import SimulationDivergedError
from ..._validation import duration_steps
from ...progress import ProgressLine
from ..trajectory import Trajectory
from .anderson import AndersonMixer
from .coupling import RobotDynamics
from .cr import conjugate_residual
from .local_global import FBAOptions, LocalGlobalSystem, StepStats
from .materials import local_step
from .ncp import friction_rows, normal_rows
from .nsn import NSNOptions, NSNStepper
from .world import DeformableWorld

__all__ = ["DeformableSimulator", "DeformableTrajectory", "ContactRows", "Delassus", "SOLVERS"]

SOLVERS = ("fba", "nsn")
"""Deformable solver names accepted by ``load_scene(..., solver=)``: "fba" (seed 004's local-global
solver) and "nsn" (seed 002's non-smooth Newton solver, :mod:`.nsn`)."""


@dataclass(frozen=True)
class DeformableTrajectory(Trajectory):
    """A :class:`plants.sim.Trajectory` with deformable node positions/velocities per body:
    ``deformable_positions[name]`` (N + 1, n_nodes, 3) [m], ``deformable_velocities[name]`` [m/s].
    ``stats`` holds per-step arrays (N,) of :class:`StepStats`' fields."""

    deformable_positions: dict = field(default_factory=dict)
    deformable_velocities: dict = field(default_factory=dict)


@dataclass(frozen=True)
class ContactRows:
    """The constraint rows of one step (fixed within it): row j acts on free node ``node[j]``
    along unit direction ``C[j]``; contact c owns rows 3c (normal), 3c+1, 3c+2 (tangents);
    bilateral rows follow. ``offset`` holds d_n (normal), H_f x_t + h d_f (friction) and d_b
    (bilateral), Eq. 40; ``mu`` (n_c,), ``compliance`` (n_b,) [m/N]; ``obstacle`` (n_c,) indices
    (kinematic obstacles first, then the robots' link boxes in order). ``G`` (m, n_rv): each row's
    c·J_p on the coupled robots' generalized velocities (zero for rows not on a robot link); the
    row then measures c·q_i − h G v⁺ − offset, the robot's motion being an unknown of the step
    (``None`` without robots)."""

    node: np.ndarray
    C: np.ndarray
    offset: np.ndarray
    n_contacts: int
    mu: np.ndarray
    compliance: np.ndarray
    obstacle: np.ndarray
    G: np.ndarray | None = None

    @property
    def n_rows(self) -> int:
        return int(self.node.size)


class Delassus:
    """W = H A⁻¹ Hᵀ (Eq. 27) for rows that each act on one node along a unit direction:
    W_jl = (A⁻¹)_{i_j i_l} (c_j · c_l). Stored as the node block B = (A⁻¹)_UU (|U|, |U|) of the
    contact nodes U, so W x = c_j · (B Pᵀ(C ⊙ x))_{i_j}: 3|U|² flops per product instead of the
    (3|U|)² of a dense W, and 9× less memory.

    With robots coupled two-way (:mod:`.coupling`), the rows on their links add the robots'
    Delassus part G M̂⁻¹ Gᵀ = YᵀY, Y = L⁻¹Gᵀ (M̂ = LLᵀ): W x += Yᵀ(Y x).

    Args:
        block: (|U|, |U|) dense (A⁻¹)_UU = (S[:, U])ᵀ S[:, U].
        pos: (m,) index into U of each row's node.
        C: (m, 3) unit row directions.
        rigid: (n_rv, m) Y of the coupled robots, or None.
    """

    #: on a GPU, W is formed densely (one matrix-vector product per CR iteration instead of about
    #: five small kernels: the block form is launch-bound there) up to this many entries (256 MB)
    GPU_DENSE_ENTRIES = 2**25

    def __init__(self, block: np.ndarray, pos: np.ndarray, C: np.ndarray, backend=None, dense: bool | None = None,
                 rigid: np.ndarray | None = None):
        import scipy.sparse as sp

        from .backend import make_backend

        self.block, self.pos, self.C = block, pos, C
        self.rigid = None if rigid is None or rigid.shape[0] == 0 else np.asarray(rigid, float)
        m = pos.size
        self._P = sp.csr_matrix((np.ones(m), (np.arange(m), pos)), shape=(m, block.shape[0]))
        self.backend = make_backend("numpy") if backend is None else backend
        be = self.backend
        if dense is None:  # auto: dense on the GPU when it fits, the block form on the CPU
            dense = be.name != "numpy" and m * m <= self.GPU_DENSE_ENTRIES
        if not isinstance(dense, (bool, np.bool_)):
            raise TypeError(f"dense must be a bool or None (auto), got {type(dense).__name__}")
        self.dense = bool(dense)
        # device copies for matvec (the same objects on the CPU backend)
        self._block_d, self._pos_d, self._C_d = be.to_device(block), be.to_device(pos), be.to_device(C)
        self._PT_d = be.sparse(self._P.T.tocsr())
        self._Y_d = None if self.rigid is None else be.to_device(self.rigid)
        if self.dense:  # W_jl = B_{i_j i_l} (c_j · c_l), formed on the device
            self._W_d = self._block_d[self._pos_d][:, self._pos_d] * (self._C_d @ self._C_d.T)
            if self._Y_d is not None:
                self._W_d = self._W_d + self._Y_d.T @ self._Y_d

    def diagonal(self) -> np.ndarray:
        """(m,) W_jj = (A⁻¹)_{i_j i_j} (unit directions) + the robots' (G M̂⁻¹ Gᵀ)_jj."""
        d = self.block[self.pos, self.pos] * (self.C * self.C).sum(1)
        return d if self.rigid is None else d + (self.rigid**2).sum(0)

    def matvec(self, x):
        """W x for x (m,), an array of the backend (device arrays in and out)."""
        if self.dense:
            return self._W_d @ x
        F = self._PT_d @ (self._C_d * x[:, None])  # (|U|, 3) per-node sums of c_l x_l
        out = (self._C_d * (self._block_d @ F)[self._pos_d]).sum(1)
        return out if self._Y_d is None else out + self._Y_d.T @ (self._Y_d @ x)

    def toarray(self) -> np.ndarray:
        """Dense W (m, m) (tests and small problems)."""
        W = self.block[self.pos][:, self.pos] * (self.C @ self.C.T)
        return W if self.rigid is None else W + self.rigid.T @ self.rigid


def _tangents(n: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    a = np.where((np.abs(n[:, 0]) < 0.9)[:, None], np.array([1.0, 0, 0]), np.array([0, 1.0, 0]))
    t1 = np.cross(n, a)
    t1 /= np.linalg.norm(t1, axis=1, keepdims=True)
    return t1, np.cross(n, t1)


class DeformableSimulator:
    """Steps a :class:`DeformableWorld` with the local-global solver of seed 004 ("fba") or the
    non-smooth Newton solver of seed 002 ("nsn"), on the same bodies and contact rows.

    Args:
        world: bodies, obstacles, attachments, gravity.
        solver: "fba" (seed 004, default) or "nsn" (seed 002).
        dt: time step h [s] (paper: 0.01).
        solver_options: :class:`FBAOptions` ("fba") or :class:`NSNOptions` ("nsn"), or a dict of
            its fields (unknown keys: ValueError).
        max_speed: largest node speed [m/s] a step may produce before the simulator raises
            :class:`plants.errors.SimulationDivergedError` (None: only non-finite values raise).
    """

    def __init__(self, world: DeformableWorld, solver: str = "fba", dt: float = 0.01,
                 solver_options: FBAOptions | NSNOptions | dict | None = None, max_speed: float | None = 1e3):
        if not isinstance(world, DeformableWorld):
            raise TypeError(f"world must be a DeformableWorld, got {type(world).__name__}")
        if solver not in SOLVERS:
            raise ValueError(f"solver must be one of {SOLVERS} for a deformable scene, got {solver!r}")
        if isinstance(dt, bool) or not isinstance(dt, (int, float, np.floating)) or not (np.isfinite(dt) and dt > 0):
            raise ValueError(f"dt must be a finite time step > 0 [s], got {dt!r}")
        kind = FBAOptions if solver == "fba" else NSNOptions
        if isinstance(solver_options, (FBAOptions, NSNOptions)) and not isinstance(solver_options, kind):
            raise TypeError(f"solver={solver!r} takes {kind.__name__}, got {type(solver_options).__name__}")
        self.options = solver_options if isinstance(solver_options, kind) else kind.from_dict(solver_options)
        self.world, self.solver, self.dt = world, solver, float(dt)
        if max_speed is not None and (isinstance(max_speed, bool) or not (np.isfinite(max_speed) and max_speed > 0)):
            raise ValueError(f"max_speed must be a finite speed > 0 [m/s] or None, got {max_speed!r}")
        self.max_speed = None if max_speed is None else float(max_speed)
        self.system = LocalGlobalSystem(world, self.dt, self.options if solver == "fba" else FBAOptions(),
                                        prefactor=solver == "fba")
        self._nsn = NSNStepper(self) if solver == "nsn" else None
        if solver == "fba" and self.options.global_step == "jacobi" and (world.obstacles or world.attachments
                                                                       or world.robots):
            raise ValueError("global_step='jacobi' (the incomplete baseline) supports contact-free scenes only")
        self.info: dict = {}
        self.last_stats = StepStats()
        self.last_lambda = np.zeros(0)
        self.last_force = np.zeros(0)
        self.last_rows: ContactRows | None = None
        # robots coupled two-way (coupling.py): their state and per-step dynamics
        self._robots = [RobotDynamics(r, world.gravity) for r in world.robots]
        self._rv_slices, o = [], 0
        for r in world.robots:
            self._rv_slices.append(slice(o, o + r.nv))
            o += r.nv
        self.n_rv = o
        self.robot_q = [r.q0.copy() for r in world.robots]
        self.robot_v = [r.v0.copy() for r in world.robots]
        self.last_robot_torques = [np.zeros(r.nv) for r in world.robots]
        self.last_robot_contact_torques = [np.zeros(r.nv) for r in world.robots]
        self._robot_steps: list = []
        x0 = np.concatenate([b.positions for b in world.bodies])
        v0 = np.concatenate([b.velocity for b in world.bodies])
        self.set_state(x0, v0, 0.0)

    # ------------------------------------------------------------------ state
    def set_state(self, x: np.ndarray, v: np.ndarray, t: float = 0.0) -> None:
        """Set all node positions x (n, 3) [m], velocities v (n, 3) [m/s] and the time t [s]."""
        x = np.array(x, float)
        v = np.array(v, float)
        if x.shape != (self.system.n, 3) or v.shape != x.shape:
            raise ValueError(f"x and v must have shape ({self.system.n}, 3), got {x.shape}, {v.shape}")
        if not (np.isfinite(x).all() and np.isfinite(v).all()):
            raise ValueError("state (x, v) contains NaN or Inf")
        self.x, self.v, self.t = x, v, float(t)
        self.step_index = 0
        self._anderson = None  # the carried Anderson differences (FBAOptions.anderson_carry)

    def set_robot_state(self, name: str, q: np.ndarray, v: np.ndarray) -> None:
        """Set the configuration q (n_q,) and velocity v (n_v,) of the coupled robot ``name``."""
        k = self._robot_index(name)
        r = self.world.robots[k]
        q, v = np.array(q, float), np.array(v, float)
        if q.shape != (r.nq,) or v.shape != (r.nv,) or not (np.isfinite(q).all() and np.isfinite(v).all()):
            raise ValueError(f"robot {name!r} state must be finite q ({r.nq},) and v ({r.nv},), "
                             f"got {q.shape}, {v.shape}")
        self.robot_q[k], self.robot_v[k] = q, v
        self._robot_steps = []

    def _robot_index(self, name: str) -> int:
        names = [r.name for r in self.world.robots]
        if name not in names:
            raise KeyError(f"no robot {name!r}; robots: {names}")
        return names.index(name)

    def robot_torques(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        """(τ_actuator, τ_contact) (n_v,) [N, N·m] of robot ``name`` over the last step: the implicit
        PD (+ gravity feed-forward) torque at v⁺, and the contact rows' generalized force −GᵀΩλ."""
        k = self._robot_index(name)
        return self.last_robot_torques[k].copy(), self.last_robot_contact_torques[k].copy()

    def positions(self, name: str) -> np.ndarray:
        """(n_nodes, 3) current positions [m] of body ``name``."""
        i = [b.name for b in self.world.bodies].index(name)
        o = self.system.offsets
        return self.x[o[i]:o[i + 1]]

    def _contact_names(self) -> list[str]:
        return [ob.name for ob in self.world.obstacles] + [s.name for r in self.world.robots for s in r.shapes]

    def obstacle_forces(self) -> dict:
        """{obstacle or robot link-box name: (3,) force [N]} that each exerted on the deformable
        bodies over the last step: Σ_j ω_j λ_j c_j over its contact rows (normal and friction), the
        force the step applied (Ω of the last iteration; ω = 1 on a converged active contact). The
        force on the obstacle (a robot finger) is its negative."""
        names = self._contact_names()
        out = {name: np.zeros(3) for name in names}
        rows, lam = self.last_rows, self.last_force
        if rows is None or not rows.n_contacts or lam.size != rows.n_rows:
            return out
        nc = rows.n_contacts
        f = (lam[:3 * nc, None] * rows.C[:3 * nc]).reshape(nc, 3, 3).sum(1)  # per contact
        for k, name in enumerate(names):
            out[name] = f[rows.obstacle == k].sum(0)
        return out

    def _pinned_at(self, t: float) -> np.ndarray:
        out = [b.pinned_positions(t) for b in self.world.bodies]
        return np.concatenate(out) if out else np.zeros((0, 3))

    # ------------------------------------------------------------------ contacts
    def detect(self, x: np.ndarray, v: np.ndarray, t: float) -> ContactRows:
        """Contact rows for the step from (x, v) at t: node/obstacle pairs within the margin
        (plus the distance both can travel in a step), linearized at x (Eq. 40); the coupled robots'
        link boxes (at the configuration of the last :meth:`_prepare_robots`, their velocity an
        unknown: rows carry G instead of û); attachments."""
        sysm, h, world = self.system, self.dt, self.world
        xf, vf = x[sysm.free], v[sysm.free]
        reach = self.options.contact_margin + h * np.linalg.norm(vf, axis=1) + h * h * np.linalg.norm(world.gravity)
        body_of = np.searchsorted(sysm.offsets, sysm.free, side="right") - 1
        body_mu = np.array([np.nan if b.mu is None else b.mu for b in world.bodies])[body_of]
        nodes, normals, phis, vels, mus, obs = [], [], [], [], [], []
        for k, ob in enumerate(world.obstacles):
            phi, n, u = ob.query(xf, t)
            sel = np.flatnonzero(phi < reach + h * np.linalg.norm(u, axis=1))
            if sel.size:
                nodes.append(sel)
                normals.append(n[sel])
                phis.append(phi[sel])
                vels.append(u[sel])
                bm = body_mu[sel]
                mus.append(np.where(np.isnan(bm), ob.mu, np.minimum(bm, ob.mu)))
                obs.append(np.full(sel.size, k))
        if len(self._robot_steps) != len(self._robots):  # called outside step(): the robots' current state
            self._prepare_robots()
        groups = []  # coupled robot link boxes: (first contact, sel, G-function, robot's velocity slice)
        k = len(world.obstacles)
        count = sum(a.size for a in nodes)
        for rd, step, sl in zip(self._robots, self._robot_steps, self._rv_slices):
            for ks in range(len(rd.robot.shapes)):
                phi, n, u, Gf = rd.query(ks, xf, step.v_star)
                sel = np.flatnonzero(phi < reach + h * np.linalg.norm(u, axis=1))
                if sel.size:
                    nodes.append(sel)
                    normals.append(n[sel])
                    phis.append(phi[sel])
                    vels.append(np.zeros((sel.size, 3)))  # the link's motion enters through G v⁺
                    mu_s = rd.robot.shapes[ks].mu
                    bm = body_mu[sel]
                    mus.append(np.where(np.isnan(bm), mu_s, np.minimum(bm, mu_s)))
                    obs.append(np.full(sel.size, k))
                    groups.append((count, sel, Gf, sl))
                    count += sel.size
                k += 1
        if nodes:
            node = np.concatenate(nodes)
            n = np.concatenate(normals)
            phi = np.concatenate(phis)
            u = np.concatenate(vels)
            mu = np.concatenate(mus)
            obstacle = np.concatenate(obs)
        else:
            node, n, phi, u, mu, obstacle = (np.zeros(0, np.int64), np.zeros((0, 3)), np.zeros(0), np.zeros((0, 3)),
                                             np.zeros(0), np.zeros(0, np.int64))
        t1, t2 = _tangents(n) if len(n) else (n, n)
        xn = xf[node]
        d_n = (n * xn).sum(1) - phi + h * (n * u).sum(1)
        c1 = (t1 * xn).sum(1) + h * (t1 * u).sum(1)
        c2 = (t2 * xn).sum(1) + h * (t2 * u).sum(1)
        rows_node = np.repeat(node, 3)
        C = np.stack([n, t1, t2], 1).reshape(-1, 3)
        offset = np.stack([d_n, c1, c2], 1).reshape(-1)
        G = None
        if self._robots:
            G = np.zeros((3 * node.size, self.n_rv))
            for start, sel, Gf, sl in groups:
                c = slice(start, start + sel.size)
                for a, dirs in enumerate((n, t1, t2)):
                    G[3 * start + a:3 * (start + sel.size):3, sl] = Gf(sel, dirs[c])
        b_node, b_C, b_off, b_e = [], [], [], []
        for a in world.attachments:
            bi = [b.name for b in world.bodies].index(a.body)
            body = world.bodies[bi]
            X0 = body.positions[a.nodes]
            target = X0 if a.target is None else np.asarray(a.target(t + h, X0), float)
            if target.shape != X0.shape or not np.isfinite(target).all():
                raise ValueError(f"attachment target of {a.body!r} must return finite ({len(X0)}, 3) positions")
            fi = sysm.free_index[a.nodes + sysm.offsets[bi]]
            b_node.append(np.repeat(fi, 3))
            b_C.append(np.tile(np.eye(3), (fi.size, 1)))
            b_off.append(target.reshape(-1))
            b_e.append(np.full(3 * fi.size, a.compliance))
        if b_node:
            rows_node = np.concatenate([rows_node] + b_node)
            C = np.concatenate([C] + b_C)
            offset = np.concatenate([offset] + b_off)
            if G is not None:
                G = np.vstack([G, np.zeros((rows_node.size - G.shape[0], self.n_rv))])
        return ContactRows(rows_node, C, offset, int(node.size), mu,
                           np.concatenate(b_e) if b_e else np.zeros(0), obstacle, G)

    # ------------------------------------------------------------------ stepping
    def _b(self, targets: list[np.ndarray], x_tilde_f: np.ndarray, x_pin: np.ndarray) -> np.ndarray:
        """b = M x̃ + h² Gᵀ W p on the free nodes, minus the pinned nodes' coupling A_fk x_K (Eq. 6)."""
        sysm = self.system
        P = np.concatenate([p.reshape(-1, 3) for p in targets])
        rhs = sysm.G.T @ (sysm.w_rows[:, None] * P)
        b = sysm.mass[sysm.free, None] * x_tilde_f + self.dt**2 * rhs[sysm.free]
        if sysm.pinned.size:
            b -= sysm.A_fk @ x_pin
        return b

    def _local(self, x: np.ndarray, duals: list[np.ndarray | None]) -> list[np.ndarray]:
        """Local step per body (Eq. 5): PD projection or ADMM-PD z/u update; returns the targets."""
        out = []
        for i, (p, Ft) in enumerate(zip(self.system.parts, self.system.deformation_gradients(x))):
            if p.projective:
                out.append(local_step(p.material, Ft, p.w_hat, projective=True))
            else:
                u = duals[i]
                Z = local_step(p.material, Ft + u, p.w_hat, projective=False)
                u += Ft - Z
                out.append(Z - u)
        return out

    def _warm_start(self, rows: ContactRows) -> np.ndarray:
        """λ⁰ from the previous step's multipliers, matched by (node, obstacle) for contacts (the
        old contact force re-expressed in the new normal/tangent frame, λ_n clipped at 0) and by
        position for attachment rows."""
        lam = np.zeros(rows.n_rows)
        prev, lp = self.last_rows, self.last_lambda
        if prev is None or lp.size != prev.n_rows:
            return lam
        nc, pc = rows.n_contacts, prev.n_contacts
        if nc and pc:
            n_ob = len(self._contact_names()) + 1
            key = rows.node[0:3 * nc:3] * n_ob + rows.obstacle
            pkey = prev.node[0:3 * pc:3] * n_ob + prev.obstacle
            common, i_new, i_old = np.intersect1d(key, pkey, return_indices=True)
            if common.size:  # the old contact force, in the new (n, t₁, t₂) frame
                f_old = sum(lp[3 * i_old + a, None] * prev.C[3 * i_old + a] for a in range(3))
                for a in range(3):
                    lam[3 * i_new + a] = (f_old * rows.C[3 * i_new + a]).sum(1)
                lam[3 * i_new] = np.maximum(lam[3 * i_new], 0.0)
        nb, pb = rows.n_rows - 3 * nc, prev.n_rows - 3 * pc
        if nb and nb == pb:
            lam[3 * nc:] = lp[3 * pc:]
        return lam

    def step(self, iterations: int | None = None, record: list | None = None) -> StepStats:
        """Advance one step of h (Alg. 4). ``iterations`` overrides the local-global count;
        ``record`` (a list) receives a copy of all node positions after each iteration."""
        t_start = time.perf_counter()
        stats = StepStats()
        self._prepare_robots()
        if self._nsn is not None:
            q, lam, rows, force, v_r = self._nsn.step(iterations, record, stats)
        else:
            q, lam, rows, force, v_r = self._step_fba(iterations, record, stats)
        h, x_t = self.dt, self.x
        v_new = (q - x_t) / h
        peak = float(np.abs(v_new).max())
        too_fast = self.max_speed is not None and peak > self.max_speed
        if not np.isfinite(peak) or not np.isfinite(v_r).all() or too_fast:
            self._anderson = None
            raise SimulationDivergedError(
                f"deformable simulation diverged at step {self.step_index} (t = {self.t:.6g} s): "
                f"|v| = {peak:.3g} > max_speed = {self.max_speed} (state left unchanged)",
                rows, None, self.step_index, self.t)
        if rows is not None and rows.n_rows:
            self.last_lambda, self.last_force = lam, force
        self.last_rows = rows
        self._finish_robots(v_r, rows, force)
        self.x, self.v = q, v_new
        self.t += h
        self.step_index += 1
        stats.step_time = time.perf_counter() - t_start
        self.last_stats = stats
        return stats

    # ------------------------------------------------------------------ coupled robots
    def _prepare_robots(self) -> None:
        """Kinematics and the step's implicit-actuator dynamics (M̂, v*) of every coupled robot."""
        self._robot_steps = [rd.prepare(q, v, self.t, self.dt)
                             for rd, q, v in zip(self._robots, self.robot_q, self.robot_v)]

    def _robot_v_star(self) -> np.ndarray:
        """(n_rv,) the robots' contact-free velocities v* of this step."""
        return np.concatenate([s.v_star for s in self._robot_steps]) if self._robots else np.zeros(0)

    def _robot_mass_factor(self):
        """Inverse Cholesky factors L⁻¹ per robot (M̂ = LLᵀ; n_v ≤ a few tens, so explicit), and
        ``apply_inverse(y)`` of the block-diagonal M̂⁻¹ = L⁻ᵀL⁻¹."""
        Linvs = [np.linalg.inv(np.linalg.cholesky(s.Mhat)) for s in self._robot_steps]
        Minvs = [Li.T @ Li for Li in Linvs]

        def apply_inverse(y: np.ndarray) -> np.ndarray:
            out = np.empty_like(y)
            for Mi, sl in zip(Minvs, self._rv_slices):
                out[sl] = Mi @ y[sl]
            return out

        return Linvs, apply_inverse

    def _robot_factor_rows(self, G: np.ndarray, Linvs) -> np.ndarray:
        """Y = L⁻¹Gᵀ (n_rv, m): the robots' Delassus part G M̂⁻¹ Gᵀ = YᵀY."""
        Y = np.zeros((self.n_rv, G.shape[0]))
        for Li, sl in zip(Linvs, self._rv_slices):
            Y[sl] = Li @ G[:, sl].T
        return Y

    def _finish_robots(self, v_r: np.ndarray, rows: ContactRows | None, force: np.ndarray) -> None:
        """Advance the robots to v⁺ = v_r and q⁺ = q ⊕ h v⁺; record their actuator and contact torques."""
        tau_c = np.zeros(self.n_rv)
        if rows is not None and rows.G is not None and force.size == rows.n_rows:
            tau_c = -(rows.G.T @ force)
        for k, (rd, st, sl) in enumerate(zip(self._robots, self._robot_steps, self._rv_slices)):
            vk = v_r[sl].copy()
            self.last_robot_torques[k] = st.tau0 - st.tau_slope * vk
            self.last_robot_contact_torques[k] = tau_c[sl]
            self.robot_q[k] = rd.integrate(self.robot_q[k], vk, self.dt)
            self.robot_v[k] = vk
        self._robot_steps = []  # they described the old state

    def _step_fba(self, iterations, record, stats):
        """Seed 004's Alg. 4 for one step; returns (q (n, 3), λ, rows, the applied row forces Ωλ,
        the coupled robots' velocities v⁺ (n_rv,)).

        Rows on a coupled robot's link measure c·q_i − h G v_r: the robot's velocity v_r follows λ
        as q does, v_r = v* − h M̂⁻¹GᵀΩλ (the u-step with λᵏ, the correction with Δλ), and W
        carries G M̂⁻¹ Gᵀ (:mod:`.coupling`)."""
        sysm, h, opt = self.system, self.dt, self.options
        n_it = opt.iterations if iterations is None else int(iterations)
        free, pinned = sysm.free, sysm.pinned
        x_t, v_t = self.x, self.v
        x_tilde = x_t + h * v_t + h * h * self.world.gravity
        x_pin = self._pinned_at(self.t + h)
        q = {"predicted": x_tilde, "previous": x_t, "extrapolated": x_t + h * v_t}[opt.initial_guess].copy()
        q[pinned] = x_pin
        qf = q[free]
        duals = [None if p.projective else np.zeros((p.elements.stop - p.elements.start, p.dim, 3)) for p in sysm.parts]

        t0 = time.perf_counter()
        rows = (self.detect(x_t, v_t, self.t) if (self.world.obstacles or self.world.attachments or self._robots)
                else None)
        m_r = 0 if rows is None else rows.n_rows
        v_star = self._robot_v_star()
        vr = v_star.copy()
        coupled = m_r and rows.G is not None
        G = rows.G if coupled else None

        def rel(qf, vr):  # row displacements c·q_i (− h G v_r on the robots' links)
            out = (rows.C * qf[rows.node]).sum(1)
            return out - h * (G @ vr) if coupled else out

        if m_r:
            nc = rows.n_contacts
            uniq, pos = np.unique(rows.node, return_inverse=True)
            Y = None
            if coupled:
                Ls, m_inv = self._robot_mass_factor()
                Y = self._robot_factor_rows(G, Ls)
            S_U = sysm.inverse_columns(uniq)  # S[:, U], the contact nodes' columns
            W = Delassus(sysm.inverse_block(uniq, S_U), pos, rows.C, sysm.backend, rigid=Y)
            Wd = W.diagonal()
            if opt.preconditioner == "w_diagonal":
                r_n = h * h * Wd[0:3 * nc:3]
                r_f = h * 0.5 * (Wd[1:3 * nc:3] + Wd[2:3 * nc:3])
            else:
                minv = 1.0 / sysm.mass[free][rows.node[0:3 * nc:3]]
                r_n, r_f = h * h * minv, h * minv
            iN = np.arange(0, 3 * nc, 3)
            iT = np.stack([iN + 1, iN + 2], 1)
            iB = np.arange(3 * nc, m_r)
            lam = self._warm_start(rows) if opt.warm_start else np.zeros(m_r)
        stats.schur_time = time.perf_counter() - t0
        stats.n_contacts = 0 if rows is None else rows.n_contacts

        accelerate = (not m_r and opt.anderson_window > 0 and sysm.inverse is not None and n_it > 0
                      and all(p.projective for p in sysm.parts))
        if accelerate:  # contact-free plain PD: Anderson-accelerated iterations (docs §3)
            q = self._iterate_anderson(q, x_tilde, x_pin, n_it, record, stats)
            qf = q[free]
        else:
            self._anderson = None  # a step without it breaks the chain of secants
        for _ in range(0 if accelerate else n_it):
            t0 = time.perf_counter()
            targets = self._local(q, duals)
            b = self._b(targets, x_tilde[free], x_pin)
            stats.local_time += time.perf_counter() - t0
            t0 = time.perf_counter()
            if not m_r:
                qf = sysm.solve(b, qf)
                stats.global_time += time.perf_counter() - t0
            else:
                stats.global_time += time.perf_counter() - t0
                t0 = time.perf_counter()  # assembly: gaps, NCP indicators Ω, E and h (Eqs. 19, 24)
                Hq = rel(qf, vr)
                omega = np.ones(m_r)
                Ep = np.zeros(m_r)  # E of Eq. 21 (already divided by h² or h)
                hv = np.zeros(m_r)
                # normal rows
                delta = Hq[iN] - rows.offset[iN]
                phi_n, om_n, E_n = normal_rows(delta, lam[iN], r_n, opt.ncp)
                omega[iN], Ep[iN] = om_n, E_n / h**2
                hv[iN] = -phi_n + om_n * Hq[iN]
                # friction rows (velocity level): h δ̇_f = H_f q − (H_f x_t + h d_f)
                vel = (Hq[iT] - rows.offset[iT]) / h  # (nc, 2)
                lam_f = lam[iT]
                om_f, E_f = friction_rows(np.linalg.norm(vel, axis=1), np.linalg.norm(lam_f, axis=1), lam[iN],
                                          rows.mu, r_f, opt.ncp)
                omega[iT] = om_f[:, None]
                Ep[iT] = (E_f / h)[:, None]
                hv[iT] = om_f[:, None] * rows.offset[iT] - h * E_f[:, None] * lam_f
                # bilateral rows
                if iB.size:
                    Ep[iB] = rows.compliance / h**2
                    hv[iB] = rows.offset[iB] - rows.compliance * lam[iB]
                stats.assembly_time += time.perf_counter() - t0
                t0 = time.perf_counter()
                # The global step u = A⁻¹ g, g = b + h² JᵀΩλᵏ, and the correction
                # q = u + A⁻¹(h² JᵀΩΔλ) (Eq. 23) are one solve q = Sᵀ(S b + S_U c),
                # c = h² JᵀΩ(λᵏ + Δλ) on the contact nodes U: Jᵀ is non-zero only there, so
                # S Jᵀ = S_U (·)_U. The Schur right-hand side needs u only on U:
                # u_U = S_Uᵀ(S b) + h² (A⁻¹)_UU (JᵀΩλᵏ)_U. Two passes over S per iteration
                # instead of four, the same iterate up to round-off.
                JT_U = np.zeros((uniq.size, 3))
                np.add.at(JT_U, pos, (omega * lam)[:, None] * rows.C)
                Sb = sysm.apply_S(b)
                u_U = S_U.T @ Sb + h * h * (W.block @ JT_U)
                if coupled:  # the robots' u-step: v_r = v* − h M̂⁻¹GᵀΩλᵏ
                    vr_u = v_star - h * m_inv(G.T @ (omega * lam))
                Ju = (rows.C * u_U[pos]).sum(1)
                if coupled:
                    Ju -= h * (G @ vr_u)
                Ju *= omega
                stats.global_time += time.perf_counter() - t0
                t0 = time.perf_counter()
                be = sysm.backend  # the constraint solve runs on its device (CPU: the identity moves)
                om_d, Ep_d = be.to_device(omega), be.to_device(Ep)

                def K(x, om_d=om_d, Ep_d=Ep_d):  # (ΩWΩ + Ē) x
                    return om_d * W.matvec(om_d * x) + Ep_d * x

                x_sol = be.to_host(conjugate_residual(K, be.to_device(hv - Ju), opt.cr_iterations,
                                                      diagonal=be.to_device(omega**2 * Wd + Ep)))  # = h² Δλ
                lam += x_sol / h**2
                stats.constraint_time += time.perf_counter() - t0
                t0 = time.perf_counter()  # correction: q = u + A⁻¹(h² JᵀΩΔλ) (Eq. 23) = Sᵀ(S b + S_U c)
                dJT_U = np.zeros((uniq.size, 3))
                np.add.at(dJT_U, pos, (omega * x_sol)[:, None] * rows.C)
                qf = sysm.apply_ST(Sb + S_U @ (h * h * JT_U + dJT_U))
                if coupled:  # v_r = v_r^u − h M̂⁻¹GᵀΩΔλ, with x_sol = h²Δλ
                    vr = vr_u - m_inv(G.T @ (omega * x_sol)) / h
                stats.correction_time += time.perf_counter() - t0
            q[free] = qf
            if record is not None:
                record.append(q.copy())

        if not m_r:
            lam = force = np.zeros(0)
        else:
            force = omega * lam if n_it else np.zeros(m_r)
            gaps = rel(qf, vr)[iN] - rows.offset[iN]
            stats.min_gap = float(gaps.min()) if gaps.size else np.inf
        return q, lam, rows, force, vr

    def _projection_and_energy(self, x: np.ndarray, x_tilde: np.ndarray) -> tuple[list[np.ndarray], float]:
        """The plain-PD local step at x (n, 3) (Eq. 5: each Fᵀ's polar rotation) and the
        incremental potential ε(x) from it, with one G x for both."""
        sysm = self.system
        Fts = sysm.deformation_gradients(x)
        targets = [local_step(p.material, Ft, p.w_hat, projective=True) for p, Ft in zip(sysm.parts, Fts)]
        return targets, sysm.projective_energy(x, x_tilde, targets, Fts)

    def _iterate_anderson(self, q: np.ndarray, x_tilde: np.ndarray, x_pin: np.ndarray, n_it: int,
                          record: list | None, stats: StepStats) -> np.ndarray:
        """``n_it`` contact-free plain-PD iterations from q (n, 3), Anderson-accelerated with Peng
        et al. 2018's energy safeguard: an accelerated iterate is kept only if its
        incremental potential ε (from its own local step, :meth:`LocalGlobalSystem.projective_energy`)
        does not exceed the last accepted one; else the plain global step g_k (which cannot raise
        ε: PD is a descent method) replaces it and the history is reset. So ε decreases
        monotonically. The local step at an accepted iterate is the next iteration's; the last
        iterate's costs one extra local step. With ``anderson_carry`` the differences of earlier
        steps start the history: the map changes between steps by a constant (x̃ and the pins
        enter b linearly), except through the local step of elements that touch moving pins, so
        old differences remain (nearly exact) secants of the new map. Returns q^n (n, 3)."""
        sysm = self.system
        free = sysm.free
        mixer = self._anderson if self.options.anderson_carry else None
        if mixer is None:
            mixer = AndersonMixer(self.options.anderson_window)
        mixer.new_map()
        t0 = time.perf_counter()
        targets, energy = self._projection_and_energy(q, x_tilde)
        stats.local_time += time.perf_counter() - t0
        for k in range(n_it):
            t0 = time.perf_counter()
            b = self._b(targets, x_tilde[free], x_pin)
            stats.local_time += time.perf_counter() - t0
            t0 = time.perf_counter()
            g = sysm.solve(b)
            trial = q.copy()
            trial[free] = mixer.mix(q[free], g)
            accelerated = mixer.depth > 0  # else trial is the plain step g
            stats.global_time += time.perf_counter() - t0
            last = k == n_it - 1
            t0 = time.perf_counter()
            if accelerated or not last:
                t_targets, t_energy = self._projection_and_energy(trial, x_tilde)
                if accelerated and not t_energy <= energy:  # safeguard: the plain step instead
                    mixer.reset()
                    stats.anderson_rejections += 1
                    trial[free] = g
                    if not last:
                        t_targets, t_energy = self._projection_and_energy(trial, x_tilde)
                targets, energy = t_targets, t_energy
            q = trial
            stats.local_time += time.perf_counter() - t0
            if record is not None:
                record.append(q.copy())
        self._anderson = mixer if self.options.anderson_carry else None
        return q

    def run(self, duration: float, progress: bool = False, stream: Any = None) -> DeformableTrajectory:
        """Simulate ``duration`` seconds (rounded to whole steps) from the current state
        (``progress``: a progress line on ``stream``, default stderr)."""
        n = duration_steps(duration, self.dt, 8 * (1 + 6 * self.system.n + 16))
        t = np.empty(n + 1)
        X = np.empty((n + 1, self.system.n, 3))
        V = np.empty_like(X)
        names = [f.name for f in fields(StepStats)]
        stats = {k: np.zeros(n, dtype=np.int64 if k == "n_contacts" else float) for k in names}
        nq = sum(r.nq for r in self.world.robots)
        Q, QV = np.empty((n + 1, nq)), np.empty((n + 1, self.n_rv))

        def robot_state():
            if not self._robots:
                return np.zeros(0), np.zeros(0)
            return np.concatenate(self.robot_q), np.concatenate(self.robot_v)

        t[0], X[0], V[0] = self.t, self.x, self.v
        Q[0], QV[0] = robot_state()
        bar = (ProgressLine(n, label=str(getattr(self, "info", {}).get("name", "")), stream=stream)
               if progress else None)
        for i in range(n):
            s = self.step()
            for k in names:
                stats[k][i] = getattr(s, k)
            t[i + 1], X[i + 1], V[i + 1] = self.t, self.x, self.v
            Q[i + 1], QV[i + 1] = robot_state()
            if bar is not None:
                bar.update(i + 1)
        o = self.system.offsets
        pos = {b.name: X[:, o[i]:o[i + 1]] for i, b in enumerate(self.world.bodies)}
        vel = {b.name: V[:, o[i]:o[i + 1]] for i, b in enumerate(self.world.bodies)}
        return DeformableTrajectory(t=t, q=Q, v=QV, stats=stats, deformable_positions=pos,
                                    deformable_velocities=vel)
