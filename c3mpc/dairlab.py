"""DAIRLab/c3 option files, read unchanged.

DAIRLab/c3 (C++, Drake) configures its controller with three YAML layouts:

* ``C3Options`` (``core/c3_options.h``; e.g. ``core/test/resources/c3_cartpole_options.yaml``):
  ADMM settings plus the diagonal costs ``Q = w_Q·diag(q_vector)``, ``R = w_R·diag(r_vector)``,
  ``G = w_G·diag([g_x, g_lambda, g_u, g_eta])``, ``U = w_U·diag([u_x, u_lambda, u_u, u_eta])``,
  where an empty ``g_lambda`` is ``[g_gamma, g_lambda_n, g_lambda_t]`` (Stewart-Trinkle order)
  and an empty ``g_eta`` is ``[g_eta_slack, g_eta_n, g_eta_t]`` (C3+), likewise for ``u_*``;
* ``C3ControllerOptions`` (``systems/c3_controller_options.h``): ``projection_type``,
  ``c3_options``, ``lcs_factory_options`` and controller settings;
* ``LCSFactoryOptions`` (``multibody/lcs_factory_options.h``): contact model, horizon, time
  step, friction, ``contact_pair_configs``.

:func:`load_dairlab_config` reads any of the three (it tells them apart by their keys) into a
:class:`DairlabConfig`: our :class:`~c3mpc.options.C3Options` with their semantics switched on
(``penalize_input_change``, ``lambda0_from_lcp``, ``discount_admm_weights=False``,
``projection_plan_states="qp"``, ``on_qp_failure="hold"``,
``c3plus_final_reference="projection"``), the cost matrices, and the LCS
factory settings. Unknown keys are rejected with their line, as their loader does
(``allow_yaml_with_no_cpp = false``); absent keys take their defaults. docs/c3.md ("Coming from
DAIRLab/c3") maps every field.

Usage::

    cfg = load_dairlab_config("c3_controller_cartpole_options.yaml")
    ctrl = cfg.make_controller(plant_lcs, x_des=goal)     # a c3mpc.C3
    opts = C3Options.from_dairlab_yaml(path)              # the options alone
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from .errors import C3TypeError, C3ValueError
from .options import C3Options

__all__ = ["DairlabConfig", "DairlabContactPair", "DairlabLCSFactoryOptions",
           "DairlabOptionError", "load_dairlab_config", "load_dairlab_factory_options",
           "PROJECTION_TYPES", "CONTACT_MODELS"]

#: Their ``projection_type`` -> our ``C3Options.projection``.
PROJECTION_TYPES = {"MIQP": "miqp", "QP": "qp", "C3+": "c3plus"}
#: Their ``contact_model`` -> ours (``plant.lcs(contact_model=...)``).
CONTACT_MODELS = {"stewart_and_trinkle": "stewart_trinkle", "anitescu": "anitescu",
                  "frictionless_spring": "frictionless_spring"}

# Field -> kind, for each of their structs. Kinds: bool, int, float, str, vec (list of
# numbers), ivec (list of ints), vec3 (3 numbers), vec3list, pairs, joints.
_C3_FIELDS = {
    "warm_start": "bool", "penalize_input_change": "bool", "end_on_qp_step": "bool",
    "scale_lcs": "bool", "num_threads": "int", "delta_option": "int", "M": "float",
    "qp_projection_alpha": "float", "qp_projection_scaling": "float",
    "final_augmented_cost_contact_scaling": "float",
    "final_augmented_cost_contact_indices": "ivec", "admm_iter": "int", "gamma": "float",
    "rho_scale": "float", "w_Q": "float", "w_R": "float", "w_G": "float", "w_U": "float",
    "q_vector": "vec", "r_vector": "vec",
    **{f"{p}_{s}": "vec" for p in ("g", "u")
       for s in ("x", "gamma", "lambda_n", "lambda_t", "lambda", "u", "eta_slack", "eta_n",
                 "eta_t", "eta")},
}
_CONTROLLER_FIELDS = {
    "projection_type": "str", "c3_options": "map", "lcs_factory_options": "map",
    "solve_time_filter_alpha": "float", "publish_frequency": "float",
    "state_prediction_joints": "joints", "quaternion_weight": "float",
    "quaternion_regularizer_fraction": "float",
}
_FACTORY_FIELDS = {
    "contact_model": "str", "N": "int", "dt": "float", "num_contacts": "int",
    "spring_stiffness": "float", "contact_pair_configs": "pairs",
    "num_friction_directions_per_contact": "ivec", "mu_per_contact": "vec",
    "planar_normal_direction_per_contact": "vec3list", "num_friction_directions": "int",
    "mu": "float", "planar_normal_direction": "vec3",
}
_PAIR_FIELDS = {
    "body_A": "str", "body_B": "str", "body_A_collision_geom_indices": "ivec",
    "body_B_collision_geom_indices": "ivec", "num_friction_directions": "int", "mu": "float",
    "planar_normal_direction": "vec3", "num_active_contact_pairs": "int",
}
_JOINT_FIELDS = {"name": "str", "max_acceleration": "float"}


class DairlabOptionError(C3ValueError):
    """A DAIRLab/c3 option file was rejected.

    Attributes:
        path: the file.
        line: 1-based line of the offending key or value (None when not known).
        key: the dotted key (``c3_options.g_x``), or None.
    """

    def __init__(self, message: str, path: str, line: int | None = None,
                 key: str | None = None):
        where = f"{path}:{line}" if line is not None else path
        super().__init__(f"{where}: {message}")
        self.path, self.line, self.key = path, line, key


@dataclass(frozen=True)
class DairlabContactPair:
    """One of their ``contact_pair_configs`` entries (``ContactPairConfig``).

    Attributes:
        body_A, body_B: body names.
        body_A_collision_geom_indices, body_B_collision_geom_indices: geometry indices, or None
            for all of the body's geometries.
        num_friction_directions: edges of the polyhedral friction cone per tangent plane
            (1: planar, two opposite tangents).
        mu: friction coefficient.
        planar_normal_direction: unit normal of the plane of motion when planar.
        num_active_contact_pairs: how many geometry pairs enter the LCS (None: all).
    """

    body_A: str
    body_B: str
    num_friction_directions: int
    mu: float
    body_A_collision_geom_indices: tuple[int, ...] | None = None
    body_B_collision_geom_indices: tuple[int, ...] | None = None
    planar_normal_direction: tuple[float, float, float] | None = None
    num_active_contact_pairs: int | None = None


@dataclass(frozen=True)
class DairlabLCSFactoryOptions:
    """Their ``LCSFactoryOptions``, with ``contact_model`` spelled as ours.

    Attributes:
        contact_model: "stewart_trinkle", "anitescu" or "frictionless_spring".
        N: horizon (knots); dt: time step [s].
        num_contacts: number of contact points; spring_stiffness: [N/m] (frictionless spring).
        contact_pair_configs: per-pair settings, or None.
        num_friction_directions, mu, planar_normal_direction: global friction settings.
        num_friction_directions_per_contact, mu_per_contact,
        planar_normal_direction_per_contact: per-contact ones (win over the global ones).
    """

    contact_model: str
    N: int
    dt: float
    num_contacts: int | None = None
    spring_stiffness: float | None = None
    contact_pair_configs: tuple[DairlabContactPair, ...] | None = None
    num_friction_directions: int | None = None
    mu: float | None = None
    planar_normal_direction: tuple[float, float, float] | None = None
    num_friction_directions_per_contact: tuple[int, ...] | None = None
    mu_per_contact: tuple[float, ...] | None = None
    planar_normal_direction_per_contact: tuple[tuple[float, float, float], ...] | None = None

    def friction_directions(self) -> tuple[int, ...]:
        """Per-contact friction directions (their ``ResolveNumFrictionDirections``)."""
        n = self._num_contacts()
        if self.contact_model == "frictionless_spring":
            return (0,) * n
        if self.contact_pair_configs is not None:
            return tuple(p.num_friction_directions for p in self.contact_pair_configs)
        if self.num_friction_directions_per_contact is not None:
            return self.num_friction_directions_per_contact
        if self.num_friction_directions is None:
            raise C3ValueError("lcs_factory_options: num_friction_directions (or per contact) "
                               "is required")
        return (self.num_friction_directions,) * n

    def mus(self) -> tuple[float, ...]:
        """Per-contact friction coefficients (their ``ResolveMu``)."""
        n = self._num_contacts()
        if self.contact_model == "frictionless_spring":
            return (0.0,) * n
        if self.contact_pair_configs is not None:
            return tuple(p.mu for p in self.contact_pair_configs)
        if self.mu_per_contact is not None:
            return self.mu_per_contact
        if self.mu is None:
            raise C3ValueError("lcs_factory_options: mu (or mu_per_contact) is required")
        return (self.mu,) * n

    def num_lambda(self) -> int:
        """n_λ of the LCS: 2 n_c + Σ 2 d_i (Stewart-Trinkle), Σ 2 d_i (Anitescu), n_c
        (frictionless spring)."""
        n = self._num_contacts()
        edges = 2 * sum(self.friction_directions())
        return {"stewart_trinkle": 2 * n + edges, "anitescu": edges,
                "frictionless_spring": n}[self.contact_model]

    def _num_contacts(self) -> int:
        if self.num_contacts is not None:
            return self.num_contacts
        if self.contact_pair_configs is not None:
            return len(self.contact_pair_configs)
        raise C3ValueError("lcs_factory_options: num_contacts is required")


@dataclass(frozen=True)
class DairlabConfig:
    """A DAIRLab/c3 option file in our terms.

    Attributes:
        options: our options with their semantics switched on (see the module docstring).
        Q: (n_x, n_x) = w_Q·diag(q_vector); R: (n_u, n_u) = w_R·diag(r_vector).
        G: (n_z, n_z) = w_G·diag(g_vector); U: (n_z, n_z) = w_U·diag(u_vector)
            (n_z = n_x + n_λ + n_u, plus n_λ for C3+).
        gamma: their discount (Q_k = γ^k Q, R_k = γ^k R, Q_N = γ^N Q; G, U undiscounted).
        N, dt: horizon and time step from ``lcs_factory_options`` (None in a bare C3Options
            file).
        lcs_factory: the LCS factory settings, or None.
        projection_type: their name ("MIQP", "QP", "C3+"), or None in a bare C3Options file.
        controller: the controller settings we keep for reference but do not act on
            (``solve_time_filter_alpha``, ``publish_frequency``).
        state_prediction_joints: (joint name, max acceleration) pairs; see
            :meth:`prediction_joints`.
        extras: their fields with no effect on our solution (``qp_projection_scaling``, which
            only divides the QP projection's constraint rows).
        source: the file read.
    """

    options: C3Options
    Q: np.ndarray
    R: np.ndarray
    G: np.ndarray
    U: np.ndarray
    gamma: float
    N: int | None = None
    dt: float | None = None
    lcs_factory: DairlabLCSFactoryOptions | None = None
    projection_type: str | None = None
    controller: Mapping[str, Any] = field(default_factory=dict)
    extras: Mapping[str, Any] = field(default_factory=dict)
    state_prediction_joints: tuple[tuple[str, float], ...] = ()
    source: str = ""

    def prediction_joints(self, indices: Mapping[str, tuple[int, int]]) -> list[Any]:
        """Their ``state_prediction_joints`` as :class:`c3mpc.state_prediction.PredictionJoint`
        objects, given each joint's (position index, velocity index) in the state (their
        controller reads them from the Drake plant), for
        :func:`c3mpc.state_prediction.predict_state`."""
        from .state_prediction import PredictionJoint

        out = []
        for name, acc in self.state_prediction_joints:
            if name not in indices:
                raise C3ValueError(f"{self.source}: state prediction joint {name!r} has no "
                                   f"indices; given: {sorted(indices)}")
            qi, vi = indices[name]
            out.append(PredictionJoint(int(qi), int(vi), acc, name))
        return out

    def cost_matrices(self, N: int | None = None
                      ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Their ``CreateCostMatricesFromC3Options``: (Q (N+1,…), R (N,…), G (N,…), U (N,…)),
        Q_k = γ^k Q (terminal γ^N Q), R_k = γ^k R, G and U undiscounted."""
        N = self._horizon(N)
        g = self.gamma ** np.arange(N + 1)
        return (g[:, None, None] * self.Q, g[:N, None, None] * self.R,
                np.broadcast_to(self.G, (N,) + self.G.shape).copy(),
                np.broadcast_to(self.U, (N,) + self.U.shape).copy())

    def make_controller(self, lcs: Any, x_des: Any = None, N: int | None = None,
                        QN: Any = None, quaternion_indices: Any = None,
                        **kwargs: Any) -> Any:
        """A :class:`c3mpc.C3` for ``lcs`` with these costs and options.

        The discount is applied by the controller (``discount = gamma``,
        ``discount_admm_weights = False``), so Q, R are passed undiscounted; ``QN`` defaults
        to Q (theirs: the terminal cost is γ^N Q). With a non-zero ``quaternion_weight`` pass
        ``quaternion_indices``, the state index of each floating base's quaternion (their
        controller finds them in the Drake plant). ``kwargs`` go to :class:`c3mpc.C3`
        (``constraints=``).
        """
        from .c3 import C3

        N = self._horizon(N)
        options = self.options
        if quaternion_indices is not None:
            options = options.replace(quaternion_indices=tuple(int(i)
                                                              for i in quaternion_indices))
        if options.quaternion_weight > 0 and not options.quaternion_indices:
            raise C3ValueError(f"{self.source}: quaternion_weight = "
                               f"{options.quaternion_weight} needs quaternion_indices (the "
                               f"state index where each floating base's quaternion starts)")
        n_z = lcs.n_x + lcs.n_lambda + lcs.n_u
        expected = n_z + (lcs.n_lambda if self.options.projection == "c3plus" else 0)
        if (self.Q.shape[0], self.R.shape[0], self.G.shape[0]) != (lcs.n_x, lcs.n_u,
                                                                      expected):
            raise C3ValueError(
                f"{self.source}: the costs have n_x={self.Q.shape[0]}, n_u={self.R.shape[0]}, "
                f"n_z={self.G.shape[0]} but the LCS has n_x={lcs.n_x}, n_u={lcs.n_u}, "
                f"n_z={expected} (n_lambda={lcs.n_lambda})")
        return C3(lcs, self.Q, self.R, self.G, self.U, N=N, x_des=x_des,
                  QN=self.Q if QN is None else QN, options=options, **kwargs)

    def _horizon(self, N: int | None) -> int:
        if N is not None:
            return int(N)
        if self.N is None:
            raise C3ValueError(f"{self.source}: no lcs_factory_options.N in the file; pass N")
        return self.N


# --------------------------------------------------------------------------- reading
class _Doc:
    """The YAML tree as plain values plus the line of every key (1-based)."""

    def __init__(self, path: str):
        import yaml

        self.path = path
        try:
            text = Path(path).read_text()
        except OSError as e:
            raise DairlabOptionError(f"cannot read: {e}", path) from None
        try:
            node = yaml.compose(text, Loader=yaml.SafeLoader)
        except yaml.YAMLError as e:
            raise DairlabOptionError(f"not valid YAML: {e}", path) from None
        self.lines: dict[str, int] = {}
        self.data = {} if node is None else self._walk(node, "")
        if not isinstance(self.data, dict):
            raise DairlabOptionError("the top level must be a mapping", path, 1)

    def _walk(self, node: Any, prefix: str) -> Any:
        import yaml

        if isinstance(node, yaml.MappingNode):
            out = {}
            for k, v in node.value:
                key = f"{prefix}{k.value}"
                self.lines[key] = k.start_mark.line + 1
                out[k.value] = self._walk(v, key + ".")
            return out
        if isinstance(node, yaml.SequenceNode):
            out_l = []
            for i, v in enumerate(node.value):
                key = f"{prefix}{i}"
                self.lines[key] = v.start_mark.line + 1
                out_l.append(self._walk(v, key + "."))
            return out_l
        return _scalar(node)

    def error(self, key: str, message: str) -> DairlabOptionError:
        return DairlabOptionError(message, self.path, self.lines.get(key), key)


def _scalar(node: Any) -> Any:
    import yaml

    loader = yaml.SafeLoader("")
    try:
        return loader.construct_object(node, deep=True)
    finally:
        loader.dispose()


def _check_keys(doc: _Doc, data: Mapping[str, Any], fields: Mapping[str, str], prefix: str,
                struct: str) -> None:
    for k in data:
        if k not in fields:
            import difflib

            close = difflib.get_close_matches(str(k), list(fields), n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise doc.error(f"{prefix}{k}", f"unknown {struct} field {prefix}{k!r}{hint}; "
                                            f"valid fields: {', '.join(fields)}")


def _value(doc: _Doc, key: str, raw: Any, kind: str) -> Any:
    def bad(expected: str) -> DairlabOptionError:
        return doc.error(key, f"{key} must be {expected}, got {raw!r}")

    def num(v: Any) -> bool:
        return isinstance(v, (int, float)) and not isinstance(v, bool)

    if raw is None:
        return None
    if kind == "bool":
        if not isinstance(raw, bool):
            raise bad("true or false")
        return raw
    if kind == "int":
        if isinstance(raw, bool) or not isinstance(raw, int):
            raise bad("an integer")
        return raw
    if kind == "float":
        if not num(raw):
            raise bad("a number")
        return float(raw)
    if kind == "str":
        if not isinstance(raw, str):
            raise bad("a string")
        return raw
    if kind in ("vec", "ivec", "vec3"):
        if not isinstance(raw, list) or not all(num(v) for v in raw):
            raise bad("a list of numbers")
        if kind == "ivec" and not all(isinstance(v, int) for v in raw):
            raise bad("a list of integers")
        if kind == "vec3" and len(raw) != 3:
            raise bad("a list of 3 numbers")
        return tuple(raw) if kind == "ivec" else tuple(float(v) for v in raw)
    if kind == "vec3list":
        if not isinstance(raw, list):
            raise bad("a list of 3-vectors")
        return tuple(_value(doc, f"{key}.{i}", v, "vec3") for i, v in enumerate(raw))
    if kind in ("map", "pairs", "joints"):
        want = dict if kind == "map" else list
        if not isinstance(raw, want):
            raise bad("a mapping" if kind == "map" else "a list")
        return raw
    raise AssertionError(kind)


def _read_struct(doc: _Doc, data: Any, fields: Mapping[str, str], prefix: str,
                 struct: str) -> dict[str, Any]:
    if not isinstance(data, dict):
        raise doc.error(prefix.rstrip("."), f"{prefix.rstrip('.') or 'file'} must be a mapping")
    _check_keys(doc, data, fields, prefix, struct)
    return {k: _value(doc, f"{prefix}{k}", v, fields[k]) for k, v in data.items()}


def _costs(doc: _Doc, c3: Mapping[str, Any], prefix: str, n_lambda: int | None
           ) -> tuple[np.ndarray, ...]:
    def need(name: str) -> Any:
        if c3.get(name) is None:
            raise doc.error(prefix + name, f"{prefix}{name} is required (no default in "
                                           f"DAIRLab/c3's C3Options)")
        return c3[name]

    def block(p: str, name: str, parts: tuple[str, ...]) -> list[float]:
        full = list(c3.get(f"{p}_{name}") or ())
        if not full:
            for part in parts:
                full += list(c3.get(f"{p}_{part}") or ())
        return full

    Q = need("w_Q") * np.diag(need("q_vector"))
    R = need("w_R") * np.diag(need("r_vector"))
    mats = []
    for p, w in (("g", "w_G"), ("u", "w_U")):
        vec = (list(need(f"{p}_x")) + block(p, "lambda", ("gamma", "lambda_n", "lambda_t"))
               + list(need(f"{p}_u")) + block(p, "eta", ("eta_slack", "eta_n", "eta_t")))
        mats.append(need(w) * np.diag(vec))
    G, U = mats
    n_x, n_u = Q.shape[0], R.shape[0]
    for name, M in (("g", G), ("u", U)):
        if len(c3.get(f"{name}_x") or ()) != n_x or len(c3.get(f"{name}_u") or ()) != n_u:
            raise doc.error(f"{prefix}{name}_x", f"{prefix}{name}_x has "
                                                f"{len(c3.get(f'{name}_x') or ())} entries and "
                                                f"{name}_u {len(c3.get(f'{name}_u') or ())}; "
                                                f"q_vector gives n_x={n_x}, r_vector n_u={n_u}")
    if G.shape != U.shape:
        raise doc.error(f"{prefix}g_x", f"the g_* weights give n_z={G.shape[0]} but the u_* "
                                        f"weights n_z={U.shape[0]}")
    if n_lambda is not None and G.shape[0] not in (n_x + n_lambda + n_u,
                                                   n_x + 2 * n_lambda + n_u):
        raise doc.error(f"{prefix}g_x", f"the g_* weights give n_z={G.shape[0]}, but "
                                        f"lcs_factory_options imply n_lambda={n_lambda} "
                                        f"(n_z = {n_x + n_lambda + n_u})")
    return Q, R, G, U


def _options(doc: _Doc, c3: Mapping[str, Any], prefix: str, projection: str,
             base: Mapping[str, Any]) -> tuple[C3Options, dict[str, Any]]:
    """Their C3Options fields -> ours (their defaults for absent keys)."""
    def get(name: str, default: Any) -> Any:
        v = c3.get(name)
        return default if v is None else v

    delta_option = get("delta_option", 1)
    if delta_option not in (0, 1):
        raise doc.error(prefix + "delta_option", f"{prefix}delta_option must be 0 or 1, got "
                                                 f"{delta_option!r}")
    if "gamma" not in c3 or c3["gamma"] is None:
        raise doc.error(prefix + "gamma", f"{prefix}gamma is required (no default in "
                                          f"DAIRLab/c3's C3Options)")
    kw = dict(
        projection=projection,
        warm_start=get("warm_start", True),
        penalize_input_change=get("penalize_input_change", True),
        end_on_qp_step=get("end_on_qp_step", True),
        scale_lcs=get("scale_lcs", True),
        num_threads=max(1, get("num_threads", 10)),  # their 0 = OpenMP's choice
        delta_init="x0" if delta_option == 1 else "zeros",
        big_m=get("M", 1000.0),
        admm_iter=get("admm_iter", 3),
        discount=c3["gamma"],
        rho=1.0,
        rho_scale=get("rho_scale", 10.0),
        lambda0_from_lcp=True,
        discount_admm_weights=False,
        projection_plan_states="qp",
        on_qp_failure="hold",
        c3plus_final_reference="projection",
    )
    for name in ("final_augmented_cost_contact_scaling", "final_augmented_cost_contact_indices"):
        if c3.get(name) is not None:
            kw[name] = c3[name]
    if c3.get("qp_projection_alpha") is not None:
        kw["qp_alpha"] = c3["qp_projection_alpha"]
    kw.update(base)
    try:
        opts = C3Options(**kw)
    except (C3ValueError, C3TypeError, ValueError, TypeError) as e:
        raise DairlabOptionError(f"{prefix or 'c3 options'}: {e}", doc.path) from None
    extras = {}
    if c3.get("qp_projection_scaling") is not None:
        extras["qp_projection_scaling"] = c3["qp_projection_scaling"]
    return opts, extras


def _factory(doc: _Doc, data: Any, prefix: str) -> DairlabLCSFactoryOptions:
    f = _read_struct(doc, data, _FACTORY_FIELDS, prefix, "LCSFactoryOptions")
    for name in ("contact_model", "N", "dt"):
        if f.get(name) is None:
            raise doc.error(prefix + name, f"{prefix}{name} is required")
    model = CONTACT_MODELS.get(f["contact_model"])
    if model is None:
        raise doc.error(prefix + "contact_model", f"{prefix}contact_model must be one of "
                                                  f"{list(CONTACT_MODELS)}, got "
                                                  f"{f['contact_model']!r}")
    if f["N"] < 1 or not f["dt"] > 0:
        raise doc.error(prefix + "N", f"{prefix}N must be >= 1 and dt > 0, got N={f['N']}, "
                                      f"dt={f['dt']}")
    if model == "frictionless_spring" and not (f.get("spring_stiffness") or 0) > 0:
        raise doc.error(prefix + "spring_stiffness", f"{prefix}spring_stiffness must be > 0 "
                                                     f"for the frictionless_spring model")
    pairs = None
    if f.get("contact_pair_configs") is not None:
        pairs = tuple(_pair(doc, p, f"{prefix}contact_pair_configs.{i}.")
                      for i, p in enumerate(f["contact_pair_configs"]))
    for name in ("mu", "mu_per_contact"):
        v = f.get(name)
        if v is not None and min(np.atleast_1d(v)) < 0:
            raise doc.error(prefix + name, f"{prefix}{name} must be >= 0, got {v}")
    out = DairlabLCSFactoryOptions(
        contact_model=model, N=f["N"], dt=f["dt"], num_contacts=f.get("num_contacts"),
        spring_stiffness=f.get("spring_stiffness"), contact_pair_configs=pairs,
        num_friction_directions=f.get("num_friction_directions"), mu=f.get("mu"),
        planar_normal_direction=f.get("planar_normal_direction"),
        num_friction_directions_per_contact=f.get("num_friction_directions_per_contact"),
        mu_per_contact=f.get("mu_per_contact"),
        planar_normal_direction_per_contact=f.get("planar_normal_direction_per_contact"))
    n = out.num_contacts
    for name in ("num_friction_directions_per_contact", "mu_per_contact",
                 "planar_normal_direction_per_contact"):
        v = getattr(out, name)
        if v is not None and n is not None and len(v) != n:
            raise doc.error(prefix + name, f"{prefix}{name} has {len(v)} entries but "
                                           f"num_contacts is {n}")
    return out


def _pair(doc: _Doc, data: Any, prefix: str) -> DairlabContactPair:
    p = _read_struct(doc, data, _PAIR_FIELDS, prefix, "ContactPairConfig")
    for name in ("body_A", "body_B", "num_friction_directions", "mu"):
        if p.get(name) in (None, ""):
            raise doc.error(prefix + name, f"{prefix}{name} is required")
    for name in ("body_A_collision_geom_indices", "body_B_collision_geom_indices"):
        if p.get(name) is not None and min(p[name], default=0) < 0:
            raise doc.error(prefix + name, f"{prefix}{name} must be >= 0")
    if p["num_friction_directions"] < 0 or p["mu"] < 0:
        raise doc.error(prefix + "mu", f"{prefix}num_friction_directions and mu must be >= 0")
    normal = p.get("planar_normal_direction")
    if p["num_friction_directions"] == 1:
        if normal is None or abs(np.linalg.norm(normal) - 1) > 1e-6:
            raise doc.error(prefix + "planar_normal_direction",
                            f"{prefix}planar_normal_direction must be a unit 3-vector for a "
                            f"planar contact (num_friction_directions = 1), got {normal}")
    n_active = p.get("num_active_contact_pairs")
    if n_active is not None and n_active < 1:
        raise doc.error(prefix + "num_active_contact_pairs",
                        f"{prefix}num_active_contact_pairs must be > 0")
    return DairlabContactPair(**p)


def load_dairlab_config(path: str | Path, projection: str | None = None,
                        **overrides: Any) -> DairlabConfig:
    """Read a DAIRLab/c3 option file (any of their three layouts) into a :class:`DairlabConfig`.

    Args:
        path: a ``C3ControllerOptions`` file (has ``c3_options``), an ``LCSFactoryOptions``
            file (has ``contact_model``; costs and options then are not available) or a bare
            ``C3Options`` file.
        projection: our projection name; default: from ``projection_type`` ("MIQP" -> "miqp",
            "QP" -> "qp", "C3+" -> "c3plus"), "miqp" for a bare C3Options file.
        overrides: our :class:`C3Options` fields to set on top (e.g. ``num_threads=1``).

    Raises:
        DairlabOptionError: an unknown key (with its line and the valid ones), a value of the
            wrong type, a missing required field, or inconsistent sizes.
    """
    path = str(path)
    doc = _Doc(path)
    data = doc.data
    if "contact_model" in data and "c3_options" not in data:
        raise DairlabOptionError("this is an LCSFactoryOptions file (it has contact_model): "
                                 "read it with load_dairlab_factory_options", path, 1)
    if "c3_options" in data or "projection_type" in data:
        top = _read_struct(doc, data, _CONTROLLER_FIELDS, "", "C3ControllerOptions")
        if top.get("c3_options") is None:
            raise doc.error("c3_options", "c3_options is required")
        ptype = top.get("projection_type")
        if ptype is not None and ptype not in PROJECTION_TYPES:
            raise doc.error("projection_type", f"projection_type must be one of "
                                               f"{list(PROJECTION_TYPES)}, got {ptype!r}")
        factory = None
        if top.get("lcs_factory_options") is not None:
            factory = _factory(doc, top["lcs_factory_options"], "lcs_factory_options.")
            if ptype == "QP" and factory.contact_model != "anitescu":
                raise doc.error("projection_type", "projection_type QP needs the anitescu "
                                                   "contact model (as DAIRLab/c3 demands)")
        for name in ("quaternion_weight", "quaternion_regularizer_fraction"):
            if top.get(name) is not None and top[name] < 0:
                raise doc.error(name, f"{name} must be >= 0, got {top[name]}")
            if top.get(name) is not None and name not in overrides:
                overrides[name] = top[name]
        joints = []
        for i, j in enumerate(top.get("state_prediction_joints") or []):
            jp = f"state_prediction_joints.{i}."
            jd = _read_struct(doc, j, _JOINT_FIELDS, jp, "C3StatePredictionJoint")
            if not jd.get("name") or not (jd.get("max_acceleration") or 0) > 0:
                raise doc.error(jp.rstrip("."), "a state prediction joint needs a name and "
                                                "max_acceleration > 0")
            joints.append((jd["name"], jd["max_acceleration"]))
        c3 = _read_struct(doc, top["c3_options"], _C3_FIELDS, "c3_options.", "C3Options")
        prefix = "c3_options."
        controller = {k: top.get(k) for k in ("solve_time_filter_alpha", "publish_frequency")}
    else:
        c3 = _read_struct(doc, data, _C3_FIELDS, "", "C3Options")
        prefix, ptype, factory, controller, joints = "", None, None, {}, []
    proj = projection or PROJECTION_TYPES.get(ptype or "MIQP")
    n_lambda = factory.num_lambda() if factory is not None else None
    Q, R, G, U = _costs(doc, c3, prefix, n_lambda)
    opts, extras = _options(doc, c3, prefix, proj, overrides)
    return DairlabConfig(options=opts, Q=Q, R=R, G=G, U=U, gamma=float(c3["gamma"]),
                         N=None if factory is None else factory.N,
                         dt=None if factory is None else factory.dt, lcs_factory=factory,
                         projection_type=ptype, controller=controller, extras=extras,
                         state_prediction_joints=tuple(joints), source=path)


def load_dairlab_factory_options(path: str | Path) -> DairlabLCSFactoryOptions:
    """Read their ``LCSFactoryOptions`` file (e.g. ``lcs_factory_pivoting_options.yaml``)."""
    doc = _Doc(str(path))
    return _factory(doc, doc.data, "")
