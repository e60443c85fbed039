"""Shared machinery of the registered multibody plants (issue 4 part 3).

Each registered plant is a thin, lazily built adapter around a
:class:`plants.multibody.MultibodyPlant` (Pinocchio model + coal collision geometry + contact
pairs): it adds the controller settings (:class:`plants.paper.base.ControlDefaults`), a default
contact model and time step, state/input names, and the step interface that
:func:`c3mpc.runner.run_closed_loop` drives (``step(x, u) -> (x_next, lam)``,
``lcs(x, u)``, ``state_dependent``, ``n_lambda``, ``dt``).

The Pinocchio model is built on first use, not at import or registration time, so
``import plants`` stays cheap.
"""

from __future__ import annotations

import dataclasses
from abc import ABC, abstractmethod
from functools import cached_property
from typing import Any, ClassVar

import numpy as np

from lcs import LCS

from .._validation import vector
from ..paper.base import ControlDefaults

__all__ = ["CONTACT_MODELS", "MultibodyModelPlant", "make_params", "lambda_count",
           "urdf_plant", "add_ball"]

CONTACT_MODELS = ("stewart_trinkle", "anitescu", "frictionless_spring")


def add_ball(model: Any, geom: Any, name: str, radius: float, mass: float) -> None:
    """Append a solid ball to a Pinocchio model: translation joint + spherical joint.

    The ball gets joints ``<name>_translation`` (q, v: world position and velocity) and
    ``<name>_rotation`` (q: unit quaternion x, y, z, w; v: angular velocity in the ball frame),
    a body frame ``name`` and a collision sphere ``name``. Unlike a free-flyer (whose linear
    velocity is in the body frame, coupling it to the spin through ω × v), the translational
    dynamics of a ball are then independent of its rotation, and the semi-implicit LCS step
    stays stable for a ball spinning by more than a radian per step (ω Δt = 1.6 rad for a
    0.5 m/s roll at the paper's Δt = 0.1 s; the free-flyer version blows up in 5 steps).
    """
    import coal
    import pinocchio as pin

    jt = model.addJoint(0, pin.JointModelTranslation(), pin.SE3.Identity(), f"{name}_translation")
    js = model.addJoint(jt, pin.JointModelSpherical(), pin.SE3.Identity(), f"{name}_rotation")
    model.appendBodyToJoint(js, pin.Inertia.FromSphere(mass, radius), pin.SE3.Identity())
    f0 = model.addJointFrame(jt, 0)
    f1 = model.addJointFrame(js, f0)
    fb = model.addBodyFrame(name, js, pin.SE3.Identity(), f1)
    geom.addGeometryObject(pin.GeometryObject(name, js, fb, pin.SE3.Identity(),
                                              coal.Sphere(radius)))


def urdf_plant(path: Any, contact_pairs: Any, *, actuated_joints: Any, name: str,
               halfspaces: tuple[str, ...] = (), balls: tuple[tuple[str, float, float], ...] = (),
               sphere_masses: dict[str, tuple[float, float]] | None = None) -> Any:
    """A :class:`plants.multibody.MultibodyPlant` from a URDF, with some boxes made half-spaces.

    URDF has no half-space shape, so grounds and tables are written as thin boxes; each
    collision geometry named in ``halfspaces`` (e.g. ``"platform_0"``) is replaced by the
    half-space below the box's top face (+z of the box frame). Besides being the intended
    shape, this makes the distance query exact: coal's box-box GJK/EPA returned a signed
    distance of -1.61 m for a cube touching the platform along an edge at 0.784 rad (true
    value 8e-7 m); box-half-space and sphere-half-space distances are closed-form.
    ``balls`` lists ``(name, radius, mass)`` of balls appended with :func:`add_ball`;
    ``sphere_masses`` maps a joint name to ``(mass, radius)``: that joint's body becomes a solid
    sphere of this mass (a parameter overriding the URDF's inertia).
    """
    import coal
    import pinocchio as pin

    from ..multibody import MultibodyPlant
    from ..multibody.resources import default_package_dirs

    model = pin.buildModelFromUrdf(str(path))
    geom = pin.buildGeomFromUrdf(model, str(path), pin.GeometryType.COLLISION,
                                 package_dirs=list(default_package_dirs(path)))
    for gname in halfspaces:
        if not geom.existGeometryName(gname):
            raise ValueError(f"{path}: no collision geometry {gname!r} to turn into a half-space")
        obj = geom.geometryObjects[geom.getGeometryId(gname)]
        box = obj.geometry
        if not isinstance(box, coal.Box):
            raise ValueError(f"{path}: geometry {gname!r} must be a box, got "
                             f"{type(box).__name__}")
        obj.geometry = coal.Halfspace(np.array([0.0, 0.0, 1.0]), float(box.halfSide[2]))
    for joint, (mass, radius) in (sphere_masses or {}).items():
        if not model.existJointName(joint):
            raise ValueError(f"{path}: no joint {joint!r} to set the mass of")
        model.inertias[model.getJointId(joint)] = pin.Inertia.FromSphere(float(mass),
                                                                         float(radius))
    for ball in balls:
        add_ball(model, geom, *ball)
    B = MultibodyPlant.actuation_for_joints(model, actuated_joints)
    return MultibodyPlant(model, geom, contact_pairs, actuation=B, name=name)


def make_params(cls: type, plant_name: str, params: dict[str, Any]) -> Any:
    """``cls(**params)``, with unknown parameter names reported as a ValueError listing the
    valid ones (``load_plant(name, **params)`` promises ValueError)."""
    valid = [f.name for f in dataclasses.fields(cls)]
    unknown = sorted(set(params) - set(valid))
    if unknown:
        raise ValueError(f"unknown parameter(s) {', '.join(map(repr, unknown))} for plant "
                         f"{plant_name!r}; valid parameters: {', '.join(valid)}")
    return cls(**params)


def check_positive(obj: Any, *names: str) -> None:
    """ValueError unless each named attribute of ``obj`` is finite and > 0."""
    for name in names:
        v = getattr(obj, name)
        if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)):
            raise TypeError(f"{name} must be a real number, got {v!r}")
        if not (np.isfinite(v) and v > 0):
            raise ValueError(f"{name} must be positive and finite, got {v!r}")


def check_contact_model(name: Any, argname: str = "contact_model") -> str:
    """The contact-model name, validated (ValueError listing the valid ones)."""
    if name not in CONTACT_MODELS:
        raise ValueError(f"{argname} must be one of {', '.join(CONTACT_MODELS)}; got {name!r}")
    return str(name)


def lambda_count(contact_model: str, num_edges: list[int]) -> int:
    """n_lambda of a contact model for contacts with ``num_edges[i] = 2 d_i`` edges.

    Stewart-Trinkle ``2 n_c + Σ 2d_i``, Anitescu ``Σ 2d_i``, frictionless spring ``n_c``.
    """
    n_c = len(num_edges)
    if contact_model == "stewart_trinkle":
        return 2 * n_c + int(sum(num_edges))
    if contact_model == "anitescu":
        return int(sum(num_edges))
    return n_c


class MultibodyModelPlant(ABC):
    """A registered multibody plant: a :class:`plants.multibody.MultibodyPlant` plus settings.

    Subclasses set ``name`` and implement :meth:`_build_multibody` (returning the wrapper) and
    :attr:`defaults`. ``params`` is the plant's frozen parameter dataclass; it must have the
    fields ``dt`` [s] and ``contact_model``.

    The LCS input may differ from the multibody actuation (e.g. the Franka ball model's input is
    an end-effector *acceleration*): subclasses override :meth:`_input_map`, which returns
    ``(S, s0)`` with ``tau = S u + s0`` (identity/zero by default).
    """

    name: ClassVar[str]
    state_dependent: ClassVar[bool] = True

    def __init__(self, params: Any):
        self.params = params

    # ------------------------------------------------------------------ the wrapped model
    @cached_property
    def multibody(self) -> Any:
        """The underlying :class:`plants.multibody.MultibodyPlant` (built on first access)."""
        return self._build_multibody()

    @abstractmethod
    def _build_multibody(self) -> Any:
        """Build the :class:`plants.multibody.MultibodyPlant`."""

    @property
    @abstractmethod
    def defaults(self) -> ControlDefaults:
        """Controller settings (Q, R, G, U, N, dt, bounds, x0, goal)."""

    # ------------------------------------------------------------------ dimensions
    @property
    def n_q(self) -> int:
        """Configuration dimension."""
        return int(self.multibody.n_q)

    @property
    def n_v(self) -> int:
        """Velocity dimension."""
        return int(self.multibody.n_v)

    @property
    def n_x(self) -> int:
        """State dimension n_q + n_v."""
        return self.n_q + self.n_v

    @property
    def n_u(self) -> int:
        """Input dimension of the LCS (columns of B)."""
        return int(self._imap[0].shape[1])

    @cached_property
    def _imap(self) -> tuple[np.ndarray, np.ndarray, bool]:
        """``(S, s0, is_identity)`` of :meth:`_input_map`, computed once (read-only)."""
        S, s0 = self._input_map()
        S = np.array(S, dtype=float)
        s0 = np.array(s0, dtype=float)
        S.setflags(write=False)
        s0.setflags(write=False)
        ident = S.shape[0] == S.shape[1] and np.array_equal(S, np.eye(S.shape[0])) \
            and not s0.any()
        return S, s0, bool(ident)

    @property
    def dt(self) -> float:
        """Default LCS / simulation time step [s]."""
        return float(self.params.dt)

    @property
    def contact_model(self) -> str:
        """Default contact model of :meth:`lcs`."""
        return str(self.params.contact_model)

    def num_lambda(self, contact_model: str | None = None) -> int:
        """n_lambda of the LCS for ``contact_model`` (default: the plant's)."""
        cm = check_contact_model(self.contact_model if contact_model is None else contact_model)
        return int(self.multibody.num_lambda(cm))

    @property
    def n_lambda(self) -> int:
        """n_lambda of the LCS with the default contact model."""
        return self.num_lambda()

    @property
    def n_contacts(self) -> int:
        """Number of contacts n_c of the LCS."""
        return int(self.multibody.n_contacts)

    def _lcs_options(self) -> dict[str, Any]:
        """Extra keyword arguments of the wrapper's ``lcs``/``step`` (e.g. spring stiffness)."""
        k = getattr(self.params, "stiffness", None)
        return {} if k is None else {"spring_stiffness": float(k)}

    # ------------------------------------------------------------------ input map
    def _input_map(self) -> tuple[np.ndarray, np.ndarray]:
        n = int(self.multibody.n_u)
        return np.eye(n), np.zeros(n)

    def actuation(self, u: Any) -> np.ndarray:
        """The multibody actuation ``tau = S u + s0`` for LCS input ``u``."""
        S, s0, _ = self._imap
        return S @ self._input(u) + s0

    # ------------------------------------------------------------------ validation
    def _state(self, x: Any) -> np.ndarray:
        if x is None:
            return np.array(self.defaults.x0, dtype=float)
        return vector("x", x, self.n_x)

    def _input(self, u: Any) -> np.ndarray:
        if u is None:
            return np.zeros(self.n_u)
        return vector("u", u, self.n_u)

    def _dt(self, dt: Any) -> float:
        if dt is None:
            return self.dt
        if isinstance(dt, bool) or not isinstance(dt, (int, float, np.integer, np.floating)):
            raise TypeError(f"dt must be a real number, got {dt!r}")
        if not (np.isfinite(dt) and dt > 0):
            raise ValueError(f"dt must be positive and finite, got {dt!r}")
        return float(dt)

    # ------------------------------------------------------------------ models
    def lcs(self, x: Any = None, u: Any = None, contact_model: str | None = None,
            dt: float | None = None) -> LCS:
        """The LCS linearised at state ``x`` and input ``u`` (seed 003 §IV).

        Args:
            x: (n_x,) state ``[q; v]`` (default: ``defaults.x0``).
            u: (n_u,) input (default: zero).
            contact_model: "stewart_trinkle", "anitescu" or "frictionless_spring" (default: the
                plant's ``params.contact_model``).
            dt: time step [s] (default: ``params.dt``).
        """
        x = self._state(x)
        u = self._input(u)
        cm = check_contact_model(self.contact_model if contact_model is None else contact_model)
        dt = self._dt(dt)
        S, s0, identity = self._imap
        mb = self.multibody
        if identity:
            return mb.lcs(x, u, contact_model=cm, dt=dt, **self._lcs_options())
        # tau = S u + s0: f = ... + Jf_u tau + d_v = ... + (Jf_u S) u + (d_v + Jf_u s0), so the
        # factory builds the LCS directly in u (one LCS construction, no post-hoc rewrite)
        from lcs.factory import build_lcs

        lin = mb.linearize(x, S @ u + s0, dt=dt)
        lin = dataclasses.replace(lin, Jf_u=lin.Jf_u @ S, d_v=lin.d_v + lin.Jf_u @ s0)
        return build_lcs(lin, mb.contact_data(x), cm, dt, check=False, **self._lcs_options())

    def forward_dynamics(self, x: Any, u: Any = None) -> np.ndarray:
        """Smooth dynamics without contact: ``xdot = [qdot; vdot]`` (n_x,) at (x, u)."""
        x = self._state(x)
        return np.asarray(self.multibody.forward_dynamics(x, self.actuation(u)))

    def saturate(self, u: Any) -> np.ndarray:
        """``u`` clipped to ``defaults.u_lower/u_upper``."""
        u = self._input(u)
        d = self.defaults
        return np.clip(u, d.u_lower, d.u_upper)

    def step(self, x: Any, u: Any, dt: float | None = None) -> tuple[np.ndarray, np.ndarray]:
        """One step of the plant's own LCS simulation: returns ``(x_next, lam)``.

        The input is saturated at the actuator limits, the LCS is rebuilt at ``(x, u)`` with the
        plant's default contact model, its LCP solved, and the configuration integrated on the
        linearised kinematic step, after which free-flyer quaternions are renormalised. This is
        the authors' LCS simulation; a stiff nonlinear simulator is ``plants.sim``.
        """
        x = self._state(x)
        u = self.saturate(u)
        x_next, lam = self.lcs(x, u, dt=dt).step(x, u)
        mb = self.multibody
        if mb.n_q != mb.n_v:  # keep free-flyer quaternions unit (the LCS step is linear in q)
            import pinocchio as pin

            x_next[:mb.n_q] = pin.normalize(mb.model, x_next[:mb.n_q])
        return x_next, lam

    # ------------------------------------------------------------------ names
    @cached_property
    def state_names(self) -> tuple[str, ...]:
        """Names of the n_x state entries: ``joint`` (1-DoF joints), ``joint_x``/``_qx``…
        (translation, spherical, free-flyer joints) for q; ``<joint>_dot`` or ``joint_vx``/
        ``_wx``… for v (:func:`plants.multibody.names.state_names`)."""
        return self.multibody.state_names

    @property
    def input_names(self) -> tuple[str, ...]:
        """Names of the n_u inputs (the actuated joints, in input order)."""
        return self.multibody.input_names

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(name={self.name!r}, n_x={self.n_x}, n_u={self.n_u}, "
                f"n_lambda={self.n_lambda}, dt={self.dt}, contact_model={self.contact_model!r})")
