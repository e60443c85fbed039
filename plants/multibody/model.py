r"""The multibody plant: a Pinocchio model with coal collision geometry and contact pairs.

State :math:`x = [q; v]` (:math:`n_x = n_q + n_v`; free-flyer quaternions make
:math:`n_q \ne n_v`), input :math:`u` acting through a selection :math:`B` (:math:`\tau = B u`).
:meth:`MultibodyPlant.lcs` linearizes the smooth dynamics with Pinocchio's analytic ABA
derivatives, evaluates the contacts with coal and Pinocchio frame Jacobians, and calls the pure-
numpy factory :func:`lcs.factory.build_lcs`. See ``docs/lcs-factory.md`` for the derivation.
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from lcs import LCS
from lcs.factory import (
    CONTACT_MODELS,
    ContactData,
    SmoothLinearization,
    build_lcs,
    canonical_contact_model,
    lambda_size,
)
from lcs._validation import as_float_array
from lcs.lcp import solve_lcp

from .contacts import ContactDescription, ContactGeometry, ContactKinematics, ContactPair
from .errors import MultibodyTypeError, MultibodyValueError, UnknownJointError

__all__ = ["MultibodyPlant", "FLOATING_JOINTS", "solve_contact_lcp", "LCP_REGULARIZATIONS"]

#: Joint types treated as unactuated floating bodies by the default actuation.
FLOATING_JOINTS = ("JointModelFreeFlyer", "JointModelPlanar")
#: Joint types whose ``integrate`` is plain addition (q+ = q + v): the kinematic step is exact.
_VECTOR_SPACE_JOINTS = frozenset({
    "JointModelRX", "JointModelRY", "JointModelRZ", "JointModelRevoluteUnaligned",
    "JointModelPX", "JointModelPY", "JointModelPZ", "JointModelPrismaticUnaligned",
    "JointModelTranslation",
})


def _pin():
    import pinocchio as pin

    return pin


class MultibodyPlant:
    r"""A multibody plant with contact, and its LCS factory.

    Args:
        model: ``pin.Model`` (gravity as set in the model, default -9.81 m/s² along z).
        collision_model: ``pin.GeometryModel`` holding the collision geometry.
        contact_pairs: the configured :class:`ContactPair` s.
        actuation: (n_v, n_u) input selection :math:`B` with :math:`\tau = B u`. Default: every
            velocity of every joint that is not a floating body (free-flyer or planar joints,
            :data:`FLOATING_JOINTS`) gets one input column, in joint order.
        name: a label for messages and benchmarks.
        dt: the default time step of :meth:`lcs` and :meth:`step` [s].
        contact_model: the default contact model of :meth:`lcs`, :meth:`step` and
            :attr:`n_lambda` (``"stewart_trinkle"``, ``"anitescu"`` or ``"frictionless_spring"``).
        defaults: optional :class:`plants.ControlDefaults` (controller settings: Q, R, G, U, N,
            bounds, start, goal), e.g. from a task file (:func:`plants.load_task_file`);
            ``run_closed_loop`` and ``c3mpc.run_in_simulator`` take their cost from it.
        gravity_compensation: the input acts on top of gravity compensation of the actuated
            dofs, τ = B u + S g(q) with S = B B⁺ the projector onto the actuated dofs (what a
            robot's low-level controller provides): u = 0 holds a fully actuated arm still.
            The LCS, :meth:`forward_dynamics` and :meth:`step` include it (its derivative
            S ∂g/∂q enters the LCS's A); :meth:`feedforward` is τ_g(q) for a simulator.

    The plant satisfies :class:`plants.Plant` (``n_x``, ``n_u``, ``n_lambda``, ``dt``,
    ``state_dependent``, ``defaults``, ``lcs(x, u)``, ``step(x, u)``, ``state_names``,
    ``input_names``), so it goes straight into ``c3mpc.run_closed_loop``.

    Raises:
        UnknownGeometryError, MissingCollisionGeometryError: bad contact-pair names.
        ValueError: ``actuation`` has the wrong shape or a non-finite entry.
        TypeError: ``model``/``collision_model`` are not Pinocchio models.

    Notes:
        Quaternions (and the cos/sin pairs of planar joints) in a given state are normalized
        before evaluation (``pin.normalize``); the LCS is linearized at the normalized q*.
        A plant owns one Pinocchio ``Data``: it is not thread-safe (use one plant per thread).

    Attributes:
        n_q, n_v, n_x, n_u: dimensions; ``n_x = n_q + n_v``.
        n_lambda: λ size of the LCS with the default contact model (:meth:`num_lambda` for
            another).
        dt, contact_model, defaults: as the arguments (plain attributes).
        q0: (n_q,) the model's start configuration (read-only): ``"qpos0"`` of an MJCF file (free
            bodies at their start pose), else ``pinocchio.neutral``, clipped into the joint
            limits (:func:`clip_into_limits`; as ``SceneBuilder.add_urdf`` starts the robot).
        model, collision_model: the Pinocchio models (do not mutate).
        contact_pairs: the configured pairs (tuple).
        B: (n_v, n_u) actuation matrix (read-only).
    """

    #: The LCS depends on the state (it is re-linearized at every control step).
    state_dependent: bool = True

    def __init__(self, model: Any, collision_model: Any, contact_pairs: Sequence[ContactPair] = (),
                 *, actuation: np.ndarray | None = None, name: str = "multibody",
                 dt: float = 0.01, contact_model: str = "stewart_trinkle",
                 defaults: Any = None, gravity_compensation: bool = False):
        pin = _pin()
        if not isinstance(model, pin.Model):
            raise MultibodyTypeError(f"model must be a pinocchio.Model, got "
                                     f"{type(model).__name__}")
        if not isinstance(collision_model, pin.GeometryModel):
            raise MultibodyTypeError(f"collision_model must be a pinocchio.GeometryModel, got "
                                     f"{type(collision_model).__name__}")
        self.model = model
        self.collision_model = collision_model
        self.name = str(name)
        self.dt = self._dt(dt)
        self.contact_model = self._model_name(contact_model)
        self.defaults = defaults
        if not isinstance(gravity_compensation, (bool, np.bool_)):
            raise MultibodyTypeError(f"gravity_compensation must be a bool, got "
                                     f"{gravity_compensation!r}")
        self.gravity_compensation = bool(gravity_compensation)
        self._data = model.createData()
        self._contacts = ContactGeometry(model, collision_model, contact_pairs)
        self.contact_pairs: tuple[ContactPair, ...] = self._contacts.pairs
        self.n_q = int(model.nq)
        self.n_v = int(model.nv)
        self.n_x = self.n_q + self.n_v
        if actuation is None:
            actuation = self.actuation_for_joints(model, None)
        B = np.asarray(actuation, dtype=float)
        if B.ndim == 1 and self.n_v == B.shape[0]:
            B = B[:, None]
        if B.ndim != 2 or B.shape[0] != self.n_v:
            raise MultibodyValueError(f"actuation must have shape (n_v={self.n_v}, n_u), got "
                                      f"{B.shape}")
        if not np.all(np.isfinite(B)):
            raise MultibodyValueError("actuation has a non-finite entry")
        B = np.ascontiguousarray(B)
        B.setflags(write=False)
        self.B = B
        self.n_u = int(B.shape[1])
        S = B @ np.linalg.pinv(B) if B.size else np.zeros((self.n_v, self.n_v))
        S.setflags(write=False)
        self._S = S  # projector onto the actuated dofs (gravity compensation)
        kinds = [model.joints[j].shortname() for j in range(1, model.njoints)]
        self._vector_space = self.n_q == self.n_v and all(k in _VECTOR_SPACE_JOINTS
                                                          for k in kinds)
        self._eye_v = np.eye(self.n_v)
        # For the usual joints (free flyer, planar, spherical, unbounded revolute) the tangent
        # map has orthogonal columns, so its left inverse is a column scaling; check once.
        self._orthogonal_tangent_map = True
        if not self._vector_space:
            N = pin.tangentMap(model, pin.randomConfiguration(
                model, -np.ones(self.n_q), np.ones(self.n_q)))
            G = N.T @ N
            self._orthogonal_tangent_map = bool(
                np.abs(G - np.diag(np.diag(G))).max() <= 1e-12 * np.abs(G).max())
        self._lower = np.tril_indices(self.n_v, -1)
        self._eye_v.setflags(write=False)
        q0 = pin.neutral(model)
        for key in model.referenceConfigurations:  # "qpos0" of an MJCF file: free bodies placed
            if key.key() == "qpos0" and np.shape(key.data()) == (self.n_q,):
                q0 = np.array(key.data(), dtype=float)
        q0 = clip_into_limits(model, q0)  # as the simulator's scenes start (Kinova: q = 0 is not)
        q0.setflags(write=False)
        self.q0 = q0

    # ------------------------------------------------------------------ constructors
    @staticmethod
    def actuation_for_joints(model: Any, actuated_joints: Sequence[str] | None) -> np.ndarray:
        """The (n_v, n_u) selection B for the named joints (``None``: the default choice).

        Each named joint contributes its velocity columns, in the order given. With ``None``,
        every joint that is not a floating body (:data:`FLOATING_JOINTS`) is actuated.

        Raises:
            UnknownJointError: a name is not a joint of the model (the message lists them).
        """
        names = list(model.names)
        if actuated_joints is None:
            ids = [j for j in range(1, model.njoints)
                   if model.joints[j].shortname() not in FLOATING_JOINTS]
        else:
            if isinstance(actuated_joints, str):
                actuated_joints = [actuated_joints]
            ids = []
            for jn in actuated_joints:
                if jn not in names or jn == "universe":
                    raise UnknownJointError(jn, names[1:])
                ids.append(names.index(jn))
        cols = []
        for j in ids:
            jm = model.joints[j]
            for k in range(jm.nv):
                col = np.zeros(model.nv)
                col[jm.idx_v + k] = 1.0
                cols.append(col)
        return np.array(cols).T if cols else np.zeros((model.nv, 0))

    @classmethod
    def from_urdf(cls, path: str | os.PathLike, contact_pairs: Sequence[ContactPair] = (), *,
                  root_joint: str | None = None, package_dirs: Sequence[str] | str | None = None,
                  actuated_joints: Sequence[str] | None = None,
                  name: str | None = None, base_position: Sequence[float] = (0.0, 0.0, 0.0),
                  base_quaternion: Sequence[float] = (0.0, 0.0, 0.0, 1.0),
                  dt: float = 0.01, contact_model: str = "stewart_trinkle",
                  gravity_compensation: bool = False) -> "MultibodyPlant":
        """A plant from a URDF file (collision geometry from its ``<collision>`` tags).

        Collision geometries keep the file's ``<collision name>`` s (``<link>_<k>`` when
        unnamed); see :func:`plants.multibody.urdf.load_urdf`.

        Args:
            path: the URDF file.
            contact_pairs: the configured pairs.
            root_joint: ``None`` (fixed base), ``"freeflyer"`` or ``"planar"``.
            package_dirs: where ``package://`` meshes are resolved (default: the URDF's
                folder's ancestors and the example-robot-data share folder).
            actuated_joints: joint names with an input each (``None``: all non-floating joints).
            name: label (default: the file stem).
            base_position, base_quaternion: where a fixed base sits in the world ([m]; x, y, z, w).
            dt, contact_model, gravity_compensation: see the class.

        Raises:
            FileNotFoundError: no such file. ValueError: bad ``root_joint`` or names, or a base
            placement with a floating root (its pose is part of the state).
        """
        from .urdf import load_urdf

        pin = _pin()
        path = Path(path)
        if not path.is_file():
            raise FileNotFoundError(f"URDF file not found: {path}")
        roots = {None: None, "freeflyer": pin.JointModelFreeFlyer, "planar": pin.JointModelPlanar}
        if root_joint not in roots:
            raise MultibodyValueError(f"root_joint must be None, 'freeflyer' or 'planar', got "
                                      f"{root_joint!r}")
        if package_dirs is None:
            from .resources import default_package_dirs

            package_dirs = default_package_dirs(path)
        elif isinstance(package_dirs, (str, os.PathLike)):
            package_dirs = [str(package_dirs)]
        package_dirs = [str(p) for p in package_dirs]
        root = None if root_joint is None else roots[root_joint]()
        model, collision = load_urdf(path, root, package_dirs)
        cls._place(model, collision, root_joint is None, base_position, base_quaternion)
        B = cls.actuation_for_joints(model, actuated_joints)
        return cls(model, collision, contact_pairs, actuation=B, name=name or path.stem, dt=dt,
                   contact_model=contact_model, gravity_compensation=gravity_compensation)

    @classmethod
    def from_mjcf(cls, path: str | os.PathLike, contact_pairs: Sequence[ContactPair] = (), *,
                  actuated_joints: Sequence[str] | None = None,
                  name: str | None = None, base_position: Sequence[float] = (0.0, 0.0, 0.0),
                  base_quaternion: Sequence[float] = (0.0, 0.0, 0.0, 1.0),
                  dt: float = 0.01, contact_model: str = "stewart_trinkle",
                  gravity_compensation: bool = False) -> "MultibodyPlant":
        """A plant from an MJCF (MuJoCo XML) file; collision geometry from its ``<geom>`` s.

        Read by :func:`plants.multibody.mjcf.load_mjcf` (not Pinocchio's MJCF parser; see that
        module for why and for what is supported): every body and joint of the file, one
        single-dof Pinocchio joint per MJCF joint (a body with several joints becomes a chain
        with massless intermediate links), free bodies whose configuration is their world pose.
        The start configuration (MuJoCo's ``qpos0``: free bodies at their start pose) is
        :attr:`q0`; keyframes are in ``model.referenceConfigurations``.

        Args:
            path: the MJCF file.
            contact_pairs: the configured pairs.
            actuated_joints: joint names with an input each (``None``: the joints of the file's
                ``<actuator>`` entries when it has any, else all non-floating joints).
            name: label (default: the file stem).
            base_position, base_quaternion: a placement of the whole file in the world ([m];
                x, y, z, w): its top-level bodies, world geoms and free bodies' start poses.
            dt, contact_model, gravity_compensation: see the class.

        Raises:
            FileNotFoundError: no such file. ValueError: an element that cannot be represented,
            or bad names.
        """
        from .mjcf import load_mjcf

        path = Path(path)
        loaded = load_mjcf(path)
        cls._place(loaded.model, loaded.collision_model, True, base_position, base_quaternion)
        if actuated_joints is None and loaded.actuated_joints:
            actuated_joints = loaded.actuated_joints
        B = cls.actuation_for_joints(loaded.model, actuated_joints)
        plant = cls(loaded.model, loaded.collision_model, contact_pairs, actuation=B,
                    name=name or path.stem, dt=dt, contact_model=contact_model,
                    gravity_compensation=gravity_compensation)
        return plant

    @staticmethod
    def _place(model: Any, collision: Any, fixed: bool, base_position: Sequence[float],
               base_quaternion: Sequence[float]) -> None:
        from .placement import base_placement, place_fixed_base

        M = base_placement(base_position, base_quaternion)
        if M.isIdentity():
            return
        if not fixed:
            raise MultibodyValueError("base_position/base_quaternion place a fixed base; with a "
                                      "floating root_joint the base pose is part of the state q")
        place_fixed_base(model, collision, M)

    # ------------------------------------------------------------------ checks
    def _split(self, x: Any, name: str = "x") -> tuple[np.ndarray, np.ndarray]:
        arr = as_float_array(name, x, (MultibodyTypeError, MultibodyValueError))
        if arr.ndim == 2 and arr.shape[1] == 1:
            arr = arr[:, 0]
        if arr.shape != (self.n_x,):
            raise MultibodyValueError(f"{name} must have shape ({self.n_x},) = [q (n_q={self.n_q})"
                                      f"; v (n_v={self.n_v})] for plant {self.name!r}, got "
                                      f"{arr.shape}")
        if not np.all(np.isfinite(arr)):
            raise MultibodyValueError(f"{name} has a non-finite entry at index "
                                      f"{int(np.argmax(~np.isfinite(arr)))}")
        q = arr[: self.n_q]
        if not self._vector_space and self.n_q != self.n_v:
            q = _pin().normalize(self.model, q.copy())
        return q, arr[self.n_q:].copy()

    def _input(self, u: Any) -> np.ndarray:
        if u is None:
            return np.zeros(self.n_u)
        arr = as_float_array("u", u, (MultibodyTypeError, MultibodyValueError))
        arr = arr.reshape(-1) if arr.ndim == 0 or (arr.ndim == 2 and arr.shape[1] == 1) else arr
        if arr.shape != (self.n_u,):
            raise MultibodyValueError(f"u must have shape ({self.n_u},) for plant {self.name!r}, "
                                      f"got {np.shape(u)}")
        if not np.all(np.isfinite(arr)):
            raise MultibodyValueError("u has a non-finite entry")
        return arr

    @staticmethod
    def _dt(dt: Any) -> float:
        try:
            dt = float(dt)
        except (TypeError, ValueError) as e:
            raise MultibodyTypeError(f"dt must be a positive number of seconds, got {dt!r}") from e
        if not (dt > 0 and math.isfinite(dt)):
            raise MultibodyValueError(f"dt must be a positive time step in [s], got {dt}")
        return dt

    @staticmethod
    def _model_name(contact_model: str) -> str:
        try:
            return canonical_contact_model(contact_model)
        except ValueError:
            raise MultibodyValueError(f"contact_model must be one of {CONTACT_MODELS}, got "
                                      f"{contact_model!r}") from None

    # ------------------------------------------------------------------ kinematics
    def velocity_to_qdot(self, q: Any) -> np.ndarray:
        """N(q): (n_q, n_v) map with q̇ = N(q) v (Pinocchio's tangent map)."""
        if self._vector_space:
            return np.eye(self.n_v)
        return _pin().tangentMap(self.model, np.asarray(q, dtype=float))

    def integrate(self, q: Any, v: Any, dt: float) -> np.ndarray:
        """Return q ⊕ dt·v on the configuration manifold (``pin.integrate``)."""
        q = np.asarray(q, dtype=float)
        v = np.asarray(v, dtype=float)
        if q.shape != (self.n_q,) or v.shape != (self.n_v,):
            raise MultibodyValueError(f"integrate needs q ({self.n_q},) and v ({self.n_v},), got "
                                      f"{q.shape} and {v.shape}")
        return _pin().integrate(self.model, q, float(dt) * v)

    def forward_dynamics(self, x: Any, u: Any = None) -> np.ndarray:
        """Smooth dynamics without contact: ẋ = [N(q) v; a], a = ABA(q, v, B u).

        Args:
            x: (n_x,) state [q; v].
            u: (n_u,) input (None: zeros).

        Returns:
            (n_x,) time derivative of the state (q̇ in configuration coordinates).
        """
        q, v = self._split(x)
        u = self._input(u)
        pin = _pin()
        a = pin.aba(self.model, self._data, q, v, self._tau(q, u))
        return np.concatenate([self.velocity_to_qdot(q) @ v, a])

    def _tau(self, q: np.ndarray, u: np.ndarray) -> np.ndarray:
        """Generalized actuation B u (+ S g(q) with gravity compensation)."""
        tau = self.B @ u
        if self.gravity_compensation:
            tau = tau + self._S @ _pin().computeGeneralizedGravity(self.model, self._data, q)
        return tau

    def feedforward(self, q: Any) -> np.ndarray:
        """(n_v,) the generalized force the plant adds to B u: S g(q) with
        :attr:`gravity_compensation`, else zero [N or N·m]."""
        q = np.asarray(q, dtype=float)
        if not self.gravity_compensation:
            return np.zeros(self.n_v)
        return self._S @ _pin().computeGeneralizedGravity(self.model, self._data, q)

    def contact_kinematics(self, x: Any) -> ContactKinematics:
        """Signed distances, witness points, normals and Jacobians at the state's q."""
        q, _ = self._split(x)
        return self._contacts.evaluate(self._data, q)

    def contact_descriptions(self, x: Any) -> tuple[ContactDescription, ...]:
        """Per-contact description at ``x``: pair, geometry names, φ, witness points, normal."""
        ck = self.contact_kinematics(x)
        start = np.concatenate(([0], np.cumsum(ck.num_edges)))
        cg = self._contacts
        return tuple(
            ContactDescription(int(ck.pair_index[i]), self.contact_pairs[ck.pair_index[i]],
                               cg.geometry_name(int(ck.geometry_a[i])),
                               cg.geometry_name(int(ck.geometry_b[i])), float(ck.phi[i]),
                               ck.point_a[i].copy(), ck.point_b[i].copy(), ck.normal[i].copy(),
                               ck.edges[start[i]:start[i + 1]].copy())
            for i in range(ck.n_c))

    # ------------------------------------------------------------------ names
    @property
    def state_names(self) -> tuple[str, ...]:
        """Names of the n_x state entries (:func:`plants.multibody.names.state_names`):
        ``<joint>`` / ``<joint>_dot`` for one-dof joints, ``<joint>_x`` … for free joints."""
        from .names import state_names

        return state_names(self.model)

    @property
    def quaternion_indices(self) -> tuple[int, ...]:
        """State indices where the unit quaternions of free and spherical joints start
        (Pinocchio order x, y, z, w), in joint order; for ``C3Options.quaternion_indices`` and
        :func:`plants.multibody.orientation.align_quaternions`."""
        from .orientation import quaternion_offsets

        return tuple(quaternion_offsets(self.model).values())

    @property
    def input_names(self) -> tuple[str, ...]:
        """Names of the n_u inputs: the joint each column of :attr:`B` drives."""
        from .names import input_names

        return input_names(self.model, self.B)

    def state(self, positions: Any = None, velocities: Any = None) -> np.ndarray:
        """A state ``[q; v]`` (n_x,) by joint name: :attr:`q0` and zero velocity, with the named
        joints set, e.g. ``plant.state({"box_x": 0.2})``.

        Args:
            positions: joint name -> position ([m] or [rad]; n_q numbers for a multi-dof
                joint, a free joint's as x, y, z, qx, qy, qz, qw).
            velocities: joint name -> velocity (a number, or n_v numbers).

        Raises:
            UnknownJointError: a name is not a joint (the message lists the joints).
        """
        from .names import state_from_joints

        return state_from_joints(self.model, self.q0, positions, velocities)

    @property
    def n_contacts(self) -> int:
        """Number of contacts n_c (fixed: ``num_closest`` pairs keep their count)."""
        return self._contacts.n_c

    @property
    def n_lambda(self) -> int:
        """λ size of the LCS with the plant's default :attr:`contact_model`."""
        return self.num_lambda()

    def num_lambda(self, contact_model: str | None = None) -> int:
        """λ size of ``contact_model`` (default: the plant's) for this plant's contacts."""
        contact_model = self.contact_model if contact_model is None else contact_model
        edges = np.concatenate([np.full(len(g) if p.num_closest is None else p.num_closest,
                                        p.num_edges)
                                for p, g in zip(self.contact_pairs, self._contacts._groups)]) \
            if self.contact_pairs else np.zeros(0, int)
        return lambda_size(self._model_name(contact_model), edges)

    # ------------------------------------------------------------------ linearization
    def linearize(self, x: Any, u: Any = None, dt: float = 0.01) -> SmoothLinearization:
        r"""Smooth dynamics and kinematic step linearized at :math:`(x^*, u^*)` (analytic).

        :math:`J_{f,q}, J_{f,v}` come from ``pin.computeABADerivatives`` (tangent-space
        :math:`\partial a/\partial q` mapped to coordinates by :math:`N^+(q^*)`),
        :math:`J_{f,u} = M^{-1} B`. The kinematic step is the first-order expansion of
        :math:`q^+ = q \oplus \Delta t\,v^+` about :math:`(q^*, v^{+*} = v^* + \Delta t a^*)`
        (``pin.dIntegrate``); for joints with :math:`q \oplus v = q + v` it is exactly
        :math:`q^+ = q + \Delta t v^+`, as in the paper.
        """
        q, v = self._split(x)
        u = self._input(u)
        dt = self._dt(dt)
        return self._linearize(q, v, u, dt)

    def _linearize(self, q: np.ndarray, v: np.ndarray, u: np.ndarray,
                   dt: float) -> SmoothLinearization:
        pin = _pin()
        model, data = self.model, self._data
        ddq_dq, ddq_dv, Minv = pin.computeABADerivatives(model, data, q, v, self._tau(q, u))
        Minv = np.array(Minv)
        Minv[self._lower] = Minv.T[self._lower]  # Pinocchio may fill only the upper triangle
        a = data.ddq.copy()
        if self.gravity_compensation:  # tau = B u + S g(q): d a/d q gains M^-1 S dg/dq
            ddq_dq = np.array(ddq_dq) + Minv @ self._S @ np.array(
                pin.computeGeneralizedGravityDerivatives(model, data, q))
        Jf_v = np.array(ddq_dv)
        Jf_u = Minv @ self.B
        vplus = v + dt * a
        if self._vector_space:
            N_plus = self._eye_v
            Jf_q = np.array(ddq_dq)
            K_q = self._eye_v.copy()
            K_v = dt * self._eye_v
            q_c = np.zeros(self.n_q)
        else:
            N = pin.tangentMap(model, q)
            if self._orthogonal_tangent_map:  # N^T N diagonal: N+ = diag(N^T N)^-1 N^T
                N_plus = N.T / np.einsum("ij,ij->j", N, N)[:, None]
            else:  # left inverse (N has full column rank)
                N_plus = np.linalg.solve(N.T @ N, N.T)
            Jf_q = ddq_dq @ N_plus
            dq = dt * vplus
            q_next = pin.integrate(model, q, dq)
            Jint_q, Jint_v = pin.dIntegrate(model, q, dq)
            N_next = pin.tangentMap(model, q_next)
            K_q = N_next @ Jint_q @ N_plus
            K_v = dt * (N_next @ Jint_v)
            q_c = q_next - K_q @ q - K_v @ vplus
        d_v = a - Jf_q @ q - Jf_v @ v - Jf_u @ u
        return SmoothLinearization(Minv, Jf_q, Jf_v, Jf_u, d_v, K_q, K_v, q_c, N_plus, q.copy())

    def contact_data(self, x: Any) -> ContactData:
        """The factory's :class:`lcs.factory.ContactData` at the state's q."""
        ck = self.contact_kinematics(x)
        return ContactData(ck.phi, ck.J_n, ck.J_t, ck.mu, ck.num_edges)

    def lcs(self, x: Any, u: Any = None, contact_model: str | None = None,
            dt: float | None = None, N: int | None = None,
            spring_stiffness: float = 1000.0) -> LCS:
        r"""The LCS linearized at :math:`(x^*, u^*) = (x, u)` (seed 003 §IV).

        Args:
            x: (n_x,) state [q; v] of the linearization.
            u: (n_u,) input of the linearization (None: zeros).
            contact_model: ``"stewart_trinkle"`` (eqs. 8-9), ``"anitescu"`` (eqs. 12-13) or
                ``"frictionless_spring"`` (default: the plant's :attr:`contact_model`).
            dt: time step in [s] (default: the plant's :attr:`dt`).
            N: None for a time-invariant LCS; an int stacks it for N knots.
            spring_stiffness: k in [N/m] of the frictionless spring model.

        Returns:
            :class:`lcs.LCS` with n_x = n_q + n_v, λ a force in [N] (see
            ``docs/lcs-factory.md`` for the ordering).
        """
        q, v = self._split(x)
        u = self._input(u)
        dt = self.dt if dt is None else self._dt(dt)
        model_name = self.contact_model if contact_model is None else \
            self._model_name(contact_model)
        lin = self._linearize(q, v, u, dt)
        ck = self._contacts.evaluate(self._data, q)
        contacts = ContactData(ck.phi, ck.J_n, ck.J_t, ck.mu, ck.num_edges)
        return build_lcs(lin, contacts, model_name, dt, spring_stiffness=spring_stiffness, N=N,
                         check=False)

    # ------------------------------------------------------------------ simulation
    def step(self, x: Any, u: Any = None, dt: float | None = None,
             contact_model: str | None = None,
             spring_stiffness: float = 1000.0) -> tuple[np.ndarray, np.ndarray]:
        """One step of the LCS linearized at ``(x, u)`` (the authors' LCS simulation).

        ``dt`` and ``contact_model`` default to the plant's.

        The contact LCP is solved by Lemke's method; when that fails on a degenerate problem
        (e.g. four coplanar box corners resting on a plane) it is retried with a tiny
        regularization, see :func:`solve_contact_lcp`.

        Returns:
            ``(x_next, lam)``: (n_x,) next state and the contact forces λ in [N].

        Raises:
            lcs.LCPSolveError: the contact LCP was not solved.
        """
        lcs = self.lcs(x, u, contact_model=contact_model, dt=dt,
                       spring_stiffness=spring_stiffness)
        x = np.asarray(x, dtype=float).reshape(-1)
        u = self._input(u)
        if lcs.n_lambda == 0:
            return lcs.A @ x + lcs.B @ u + lcs.d, np.zeros(0)
        lam = solve_contact_lcp(lcs.F, lcs.E @ x + lcs.H @ u + lcs.c, "MultibodyPlant.step")
        return lcs.A @ x + lcs.B @ u + lcs.D @ lam + lcs.d, lam

    def simulate_nonlinear_step(self, x: Any, u: Any = None, dt: float = 0.01,
                                contact_model: str = "stewart_trinkle",
                                spring_stiffness: float = 1000.0) -> np.ndarray:
        r"""One nonlinear semi-implicit Euler step with the contact LCP at the current q.

        Independent of the factory's linearization: :math:`a = \mathrm{ABA}(q, v, Bu)` and
        :math:`M^{-1}(q)` are evaluated at the current state, the contact LCP is assembled
        contact by contact, :math:`v^+ = v + \Delta t\,(a + M^{-1} J^T \lambda)` and
        :math:`q^+ = q \oplus \Delta t\, v^+` (``pin.integrate``, on the manifold).

        Returns:
            (n_x,) the next state.
        """
        q, v = self._split(x)
        u = self._input(u)
        dt = self._dt(dt)
        model_name = self._model_name(contact_model)
        pin = _pin()
        a = pin.aba(self.model, self._data, q, v, self._tau(q, u)).copy()
        Minv = np.array(pin.computeMinverse(self.model, self._data, q))
        Minv[self._lower] = Minv.T[self._lower]
        ck = self._contacts.evaluate(self._data, q)
        v_free = v + dt * a
        nc = ck.n_c
        if nc == 0:
            vplus = v_free
        elif model_name == "frictionless_spring":
            lam = np.maximum(0.0, -float(spring_stiffness) * ck.phi)
            vplus = v_free + dt * Minv @ (ck.J_n.T @ lam)
        else:
            # assemble the LCP contact by contact (reference path, no vectorization tricks)
            rows_force = []  # generalized force direction of each force variable
            for i in range(nc):
                rows_force.append(ck.J_n[i])
            edge_of = []
            for i in range(nc):
                edge_of += [i] * int(ck.num_edges[i])
            for e in range(len(edge_of)):
                rows_force.append(ck.J_t[e])
            if model_name == "stewart_trinkle":
                Jf = np.array(rows_force)  # (nc + ne, n_v): [J_n; J_t]
                G = dt * Minv @ Jf.T  # v+ = v_free + G lam_force
                ne = len(edge_of)
                m = 2 * nc + ne
                Fm = np.zeros((m, m))
                q_lcp = np.zeros(m)
                for i in range(nc):
                    Fm[i, nc + i] = ck.mu[i]
                for e, i in enumerate(edge_of):
                    Fm[i, 2 * nc + e] = -1.0
                    Fm[2 * nc + e, i] = 1.0
                for i in range(nc):
                    Fm[nc + i, nc:] = dt * ck.J_n[i] @ G
                    q_lcp[nc + i] = ck.phi[i] + dt * ck.J_n[i] @ v_free
                for e in range(ne):
                    Fm[2 * nc + e, nc:] = ck.J_t[e] @ G
                    q_lcp[2 * nc + e] = ck.J_t[e] @ v_free
                z = solve_contact_lcp(Fm, q_lcp, "simulate_nonlinear_step")
                vplus = v_free + G @ z[nc:]
            else:  # anitescu
                Jc = np.array([ck.J_n[i] + ck.mu[i] * ck.J_t[e] for e, i in enumerate(edge_of)])
                G = dt * Minv @ Jc.T
                Fm = Jc @ G
                q_lcp = np.array([ck.phi[i] / dt for i in edge_of]) + Jc @ v_free
                vplus = v_free + G @ solve_contact_lcp(Fm, q_lcp, "simulate_nonlinear_step")
        q_next = pin.integrate(self.model, q, dt * vplus)
        return np.concatenate([q_next, vplus])

    def __repr__(self) -> str:
        return (f"MultibodyPlant(name={self.name!r}, n_q={self.n_q}, n_v={self.n_v}, "
                f"n_u={self.n_u}, n_contacts={self.n_contacts})")


#: Regularizations tried, relative to max(1, max|F|), when Lemke fails on the contact LCP
#: (as the authors' LCS simulator does with its regularized Lemke fallback).
LCP_REGULARIZATIONS = (1e-12, 1e-10, 1e-8, 1e-6)


def clip_into_limits(model: Any, q: Any) -> np.ndarray:
    """A copy of the configuration ``q`` (n_q,) with each one-dof joint clipped into its position
    limits [lowerPositionLimit, upperPositionLimit]. Some files' neutral configuration (q = 0)
    lies outside them: Allegro's thumb joint_12.0 (lower 0.263 rad), Kinova's joint 2 (lower
    0.82 rad); a start there makes the limit constraints push the robot back violently."""
    q = np.array(q, dtype=float)
    lo, hi = model.lowerPositionLimit, model.upperPositionLimit
    for j in range(1, model.njoints):
        jm = model.joints[j]
        if jm.nq == 1 and jm.nv == 1:
            i = jm.idx_q
            q[i] = min(max(q[i], lo[i]), hi[i])
    return q


def solve_contact_lcp(F: np.ndarray, q: np.ndarray, where: str = "contact LCP") -> np.ndarray:
    """Solve ``0 <= z ⟂ F z + q >= 0`` (Lemke); on failure retry with ``F + eps I``.

    Degenerate contact configurations (redundant contacts such as four coplanar corners on a
    plane) can make Lemke's method ray-terminate although a solution exists; adding a tiny
    ``eps I`` (:data:`LCP_REGULARIZATIONS`, relative to the scale of F) removes the degeneracy
    and changes the solution by O(eps).

    Raises:
        lcs.LCPSolveError: no attempt succeeded (the last result is attached).
    """
    sol = solve_lcp(F, q)
    if sol.found:
        return sol.z
    scale = max(1.0, float(np.abs(F).max()))
    eye = np.eye(F.shape[0])
    for eps in LCP_REGULARIZATIONS:
        sol = solve_lcp(F + eps * scale * eye, q)
        if sol.found:
            return sol.z
    from lcs import LCPSolveError

    raise LCPSolveError(f"{where}: the contact LCP was not solved, also with regularization "
                        f"up to {LCP_REGULARIZATIONS[-1]:g} ({sol.status.name})", sol)
