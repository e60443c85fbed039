"""Options of the C3 controller: one frozen dataclass, defaults declared once, strict loading.

Every default lives in its field declaration below, with its meaning and unit in the field's
docstring. ``C3Options.from_yaml`` / ``from_toml`` / ``from_dict`` reject unknown keys (listing
the valid ones) and validate values in ``__post_init__``.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping

from lcs._validation import check_bool, check_choice, check_number

from .errors import C3Error, C3TypeError, C3ValueError

__all__ = ["C3Options", "PROJECTIONS"]

#: Projection methods accepted by ``C3Options.projection``.
PROJECTIONS = ("miqp", "miqp-gurobi", "lcp", "qp", "admm", "c3plus")


@dataclass(frozen=True)
class C3Options:
    """Settings of :class:`c3mpc.C3` (seed 003 Algorithm 1).

    The ADMM penalty enters the QP step as ``rho * rho_scale**i * (z - delta + w)^T G (·)``
    (eqs. 17/21). With the default ``rho = 1`` the matrix G alone carries the scale, as in the
    authors' code; the paper's ρ = 0.1 with G = I equals ρ = 1 with G = 0.1·I.
    """

    projection: str = "miqp"
    """Projection method: "miqp" (exact, our compiled branch-and-bound), "miqp-gurobi"
    (big-M MIQP in Gurobi, persistent per-knot models), "lcp" (LCP-based), "qp" (convex,
    eq. 24; needs F ⪰ 0), "admm" (Park & Boyd QCQP heuristic) or "c3plus" (closed form)."""

    admm_iter: int = 10
    """ADMM iterations s per solve (the paper uses 2-10)."""

    rho: float = 1.0
    """Initial ADMM penalty ρ (> 0), multiplying G."""

    rho_scale: float = 2.0
    """Penalty growth ρ_s (>= 1) per ADMM iteration; the scaled dual w is divided by it."""

    big_m: float = 1000.0
    """Big-M constant of the Gurobi MIQP projection (and default of the MIQP baseline)."""

    warm_start: bool = True
    """Warm-start the QP solver and the MIQP projections from the previous solve."""

    delta_init: str = "x0"
    """How δ starts each solve: "x0" (state part set to x0, the authors' delta_option=1) or
    "zeros" (the paper's Algorithm 1)."""

    discount: float = 1.0
    """Discount γ in (0, 1]: knot i's Q, R, G, U are multiplied by γ^i."""

    scale_lcs: bool = False
    """Rescale λ by s = ‖A‖_F/‖D‖_F before planning (the authors' ``scale_lcs``). Off by
    default because the paper's weights U and G on λ are in unscaled units."""

    end_on_qp_step: bool = True
    """Return the final QP iterate (True, as in the authors' code) or the last projection δ
    with states re-rolled through the LCS (False)."""

    qp_alpha: float = 0.01
    """α of the convex "qp" projection (eq. 24): weight of the λᵀFλ term, 0 < α <= 1."""

    qp_epsilon: float = 1e-6
    """ε of the convex "qp" projection: the εI regularisation that makes it strictly convex."""

    admm_projection_iter: int = 200
    """Inner iterations of the "admm" projection (on finger gaiting 92% of knots converge
    within 100 and 97-100% within 200)."""

    projection_time_limit: float | None = None
    """Time limit [s] per knot for the Gurobi MIQP projection (None: none)."""

    qp_solver: str = "active-set"
    """Solver of the QP step when inequalities are present: "active-set" (compiled
    Goldfarb-Idnani on the cached Cholesky factor; falls back to OSQP if it fails) or "osqp".
    Equality-only QP steps are always solved by the cached factorization."""

    osqp_eps_abs: float = 1e-6
    """OSQP absolute tolerance of the QP step (used only when inequalities are present)."""

    osqp_eps_rel: float = 1e-6
    """OSQP relative tolerance of the QP step."""

    osqp_max_iter: int = 4000
    """OSQP iteration budget per QP step."""

    osqp_polish: bool = True
    """Polish OSQP solutions (active-set refinement to high accuracy)."""

    num_threads: int = 1
    """Threads for independent knots (projections) and for Gurobi. 1 = serial; on 2 cores the
    per-knot work is too small for threads to pay off (see docs/BENCHMARKS.md)."""

    blas_threads: int | None = 1
    """BLAS threads while the controller runs (None: leave the process setting alone). One is
    fastest for C3's small matrices and avoids pathological slow-downs on busy machines."""

    extra: Mapping[str, Any] = field(default_factory=dict)
    """Backend-specific settings passed to the projection's constructor."""

    # -------------------------------------------------------- DAIRLab/c3 semantics (opt-in)
    # Names follow DAIRLab/c3 where the concept is theirs; docs/c3.md "Coming from DAIRLab/c3"
    # maps every option of theirs to ours. Defaults keep this package's earlier behaviour.

    penalize_input_change: bool = False
    """Replace the input cost u_kᵀR_k u_k by (u_k − u_k^prev)ᵀR_k(u_k − u_k^prev), u_k^prev the
    input the previous solve's final QP step planned at the same knot k (not shifted; zeros
    before the first solve and after a ``on_qp_failure="hold"`` failure), as DAIRLab/c3's
    ``penalize_input_change`` (their default true). Off by default: it makes a plan depend on
    the solve history, and our results so far were computed without it."""

    lambda0_from_lcp: bool = False
    """When H_0 = 0 (the input cannot change the first knot's contact forces), fix the planned
    λ_0 of every QP step to the solution of LCP(F_0, E_0 x0 + c_0), as DAIRLab/c3 always does.
    No effect when H_0 ≠ 0."""

    first_step_forces: str = "plan"
    """The first knot's contact forces λ_0: "plan" (a free QP variable tied to the projection by
    G, Algorithm 1 as published) or "lcp-mode" (after the ADMM solve, the contact mode that the
    LCS takes at x0 under the planned u_0, from LCP(F_0, E_0 x0 + H_0 u_0 + c_0), fixes λ_0 to
    that mode's affine response λ_A = −F_AA⁺(E_A x0 + H_A u_0 + c_A), λ_I = 0, and the solve is
    repeated once with this equality coupling λ_0 to u_0 in every QP step). "lcp-mode" makes
    the applied first step dynamically feasible as long as the mode holds; it doubles the solve
    time. Per-step pivoting on a rough ground needs it (docs/c3.md, "Pivoting: the μ₃
    sweep"). Not with ``lambda0_from_lcp`` (both fix λ_0)."""

    discount_admm_weights: bool = True
    """With ``discount`` γ < 1: also scale knot i's G and U by γ^i (True, ours) or scale only Q
    and R (False, DAIRLab/c3's ``gamma``; the terminal cost is γ^N Q_N in both)."""

    projection_plan_states: str = "rerolled"
    """States returned with ``end_on_qp_step=False``: "rerolled" (the projection's λ and u
    re-rolled through the LCS from x0, so the plan is dynamically consistent) or "qp"
    (DAIRLab/c3: the final QP step's states next to the projection's λ and u)."""

    consensus_tolerance: float | None = 0.3
    """Largest ADMM consensus residual (:attr:`C3Result.consensus_residual`, dimensionless) of a
    plan reported as SOLVED; above it the status is ``NOT_CONVERGED`` (the plan is still returned
    and applied). The residual compares the final QP iterate z with the last projection δ, per
    block b of x, λ, u, over the entries G ties: ``‖z_b − δ_b‖∞ / (1 + max(‖z_b‖∞, ‖δ_b‖∞))``
    (Boyd et al.'s mixed absolute/relative primal tolerance with ε_abs = ε_rel), its maximum
    over the blocks. Measured on the own-robot examples' closed loops: converged plans (U = G)
    0.004-0.23, diverged ones (U = 1000 on x, 1 on λ, u, with G = 0.1·I) 0.38-1.0; 0.3 sits
    between (docs/c3.md, "The ADMM metric and the convergence check"). None: no check."""

    complementarity_tolerance: float | None = None
    """Largest relative complementarity violation
    (:attr:`C3Result.relative_complementarity_violation`, dimensionless) of a plan reported as
    SOLVED; above it the status is ``NOT_CONVERGED``. The measure puts each pair's slack in the
    units of its force (``s_i / F_ii``, the force that closes the slack through the pair's own
    Delassus entry) and divides the worst ``|min(λ_i, s_i / F_ii)|`` by the plan's largest
    force, so it does not depend on the robot's units or size (docs/c3.md, "The ADMM metric
    and the convergence check"). None: no check."""

    resimulate_plan: bool = True
    """Simulate the returned plan's inputs through the LCS after each solve and report the
    cost as ``C3Result.resimulated_cost`` (N LCP solves, ~0.1 ms for N = 5-10 with 10-16
    contacts); False skips it (``resimulated_cost`` stays inf) in latency-bound loops."""

    on_qp_failure: str = "shift"
    """Plan returned when a QP step fails (status QP_FAILED either way): "shift" (the last
    feasible plan shifted by one knot, NaN arrays when there is none) or "hold" (DAIRLab/c3's
    fallback: x_k = x0 for every knot, zero inputs and forces)."""

    c3plus_final_reference: str = "consensus"
    """C3+ only: reference of the final QP step, "consensus" (δ − w, as every ADMM QP step)
    or "projection" (δ, DAIRLab/c3's C3Plus: the final plan is pulled to the last
    projection)."""

    final_augmented_cost_contact_scaling: float | None = None
    """C3+ only (DAIRLab/c3's option of the same name): in the final QP step multiply the G
    weight of, for each pair listed in ``final_augmented_cost_contact_indices``, λ_i when the
    last projection set δ^λ_i = 0 and η_i otherwise, by this factor (> 0). Both options must
    be set. The final step is then condensed and factored at every solve."""

    final_augmented_cost_contact_indices: tuple[int, ...] | None = None
    """C3+ only: the complementarity pairs (indices into λ) that
    ``final_augmented_cost_contact_scaling`` applies to."""

    quaternion_weight: float = 0.0
    """DAIRLab/c3's ``quaternion_weight`` w: with w > 0 the 4×4 block of Q_k of each quaternion
    listed in ``quaternion_indices`` is replaced at every solve by γ^k w (∇²θ² + shift·I
    + φ r rᵀ + 1e-8 I), the PSD-shifted Hessian of the squared rotation angle θ between the
    current quaternion and the target r (c3mpc.quaternion_cost). 0 disables it."""

    quaternion_regularizer_fraction: float = 0.0
    """DAIRLab/c3's ``quaternion_regularizer_fraction`` φ (>= 0): weight of r rᵀ in that block."""

    quaternion_indices: tuple[int, ...] = ()
    """State indices where unit quaternions (w, x, y, z) start (e.g. the floating bases'
    orientation, ``plant.n_q`` layout); used by ``quaternion_weight``."""

    def __post_init__(self) -> None:
        """Check every field strictly (no strings for numbers, no non-bools for booleans);
        ints given for float fields are stored as floats. Errors carry ``.field``."""
        for name, check in _CHECKS.items():
            try:
                value = check(f"C3Options.{name}", getattr(self, name))
            except C3Error as e:
                e.field = name  # type: ignore[attr-defined]
                raise
            object.__setattr__(self, name, value)
        self._check_dairlab_semantics()

    def _check_dairlab_semantics(self) -> None:
        """The DAIRLab/c3-semantics fields the table of checks cannot say: index tuples
        (a list from YAML/TOML is stored as a tuple). Errors carry ``.field``."""
        if self.lambda0_from_lcp and self.first_step_forces != "plan":
            e = C3ValueError(f"lambda0_from_lcp=True and first_step_forces="
                             f"{self.first_step_forces!r} both fix λ_0; choose one")
            e.field = "first_step_forces"  # type: ignore[attr-defined]
            raise e
        for name in ("quaternion_indices", "final_augmented_cost_contact_indices"):
            try:
                self._check_index_tuple(name)
            except C3Error as e:
                e.field = name  # type: ignore[attr-defined]
                raise

    def _check_index_tuple(self, name: str) -> None:
        value = getattr(self, name)
        if isinstance(value, list):  # from YAML/TOML
            value = tuple(value)
            object.__setattr__(self, name, value)
        if value is None and name == "final_augmented_cost_contact_indices":
            return
        expected = (f"a tuple of indices >= 0{' or None' if name != 'quaternion_indices' else ''}"
                    f", got {value!r}")
        if not isinstance(value, tuple) or not all(
                isinstance(i, int) and not isinstance(i, bool) for i in value):
            raise C3TypeError(f"C3Options.{name} must be {expected}")
        if any(i < 0 for i in value):
            raise C3ValueError(f"C3Options.{name} must be {expected}")

    # ------------------------------------------------------------------ loading
    @classmethod
    def field_names(cls) -> list[str]:
        """The option names accepted by :meth:`from_dict`."""
        return [f.name for f in dataclasses.fields(cls)]

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "C3Options":
        """Options from a mapping; unknown keys raise ValueError listing the valid ones.

        Values must have their field's type, except that a float field also takes a string
        holding a float literal (YAML 1.1 reads ``1e-6``, without a dot, as a string). An int
        field does not take ``1e3`` or ``"10"``, a bool field does not take ``"false"``.

        Raises:
            C3ValueError / C3TypeError: an unknown key or a bad value (``.field`` names it).
        """
        if not isinstance(data, Mapping):
            raise C3TypeError(f"C3 options must be a mapping, got {type(data).__name__}")
        bad_keys = [k for k in data if not isinstance(k, str)]
        if bad_keys:
            raise C3TypeError(f"C3 option names must be strings, got {bad_keys[0]!r}")
        unknown = sorted(set(data) - set(cls.field_names()))
        if unknown:
            err = C3ValueError(f"unknown C3 option(s) {unknown}; valid options: "
                               f"{cls.field_names()}")
            err.field = unknown[0]  # type: ignore[attr-defined]
            raise err
        kwargs = dict(data)
        for name in _FLOAT_FIELDS:  # YAML 1.1 reads 1e-6 (no dot) as a string
            v = kwargs.get(name)
            if isinstance(v, str) and _FLOAT_LITERAL.fullmatch(v.strip()):
                kwargs[name] = float(v)
        return cls(**kwargs)

    @classmethod
    def from_yaml(cls, path: str | Path, key: str | None = None) -> "C3Options":
        """Options from a YAML file (optionally the mapping under ``key``).

        Raises:
            C3ValueError: the file cannot be read, is not YAML, exceeds the loader's limits
                (:mod:`c3mpc._yaml`), or holds a bad option; one line naming the file and the
                line of the offending key.
        """
        from ._yaml import read_yaml_file

        data, key_lines = read_yaml_file(path, C3ValueError)
        return cls._from_file_data(path, data or {}, key, key_lines)

    @classmethod
    def from_toml(cls, path: str | Path, key: str | None = None) -> "C3Options":
        """Options from a TOML file (optionally the table under ``key``)."""
        try:
            import tomllib
        except ImportError:  # Python 3.10
            import tomli as tomllib  # type: ignore[no-redef]

        text = _read_text(path)
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as e:
            raise C3ValueError(f"{path}: not valid TOML: {e}") from None
        lines = {}
        for i, raw in enumerate(text.splitlines(), start=1):  # `name = ...` lines
            m = re.match(r"\s*([A-Za-z_][\w-]*)\s*=", raw)
            if m:
                lines.setdefault((key, m.group(1)) if key else (m.group(1),), i)
        return cls._from_file_data(path, data, key, lines)

    @classmethod
    def _from_file_data(cls, path: str | Path, data: Any, key: str | None,
                        key_lines: Mapping[tuple[Any, ...], int]) -> "C3Options":
        if key:
            if not isinstance(data, Mapping) or key not in data:
                raise C3ValueError(f"{path}: no section {key!r} of C3 options")
            data = data[key]
        if not isinstance(data, Mapping):
            raise C3ValueError(f"{path}: C3 options must be a mapping, got "
                               f"{type(data).__name__}")
        try:
            return cls.from_dict(data)
        except C3Error as e:
            name = getattr(e, "field", None)
            line = key_lines.get((key, name) if key else (name,)) if name else None
            at = f", line {line}" if line else ""
            raise C3ValueError(f"{path}{at}: {e}") from None

    @classmethod
    def from_file(cls, path: str | Path, key: str | None = None) -> "C3Options":
        """Options from a ``.yaml``/``.yml`` or ``.toml`` file (errors: one line naming the
        file and the line)."""
        suffix = Path(path).suffix.lower()
        if suffix in (".yaml", ".yml"):
            return cls.from_yaml(path, key)
        if suffix == ".toml":
            return cls.from_toml(path, key)
        raise C3ValueError(f"options file must end in .yaml, .yml or .toml, got {path}")

    @classmethod
    def from_dairlab_yaml(cls, path: str | Path, projection: str | None = None,
                          **overrides: Any) -> "C3Options":
        """Options from a DAIRLab/c3 option file, unchanged (``C3ControllerOptions`` with
        ``c3_options``, or a bare ``C3Options`` file), with their semantics switched on.

        The costs, horizon and LCS factory settings of the file are in
        :func:`c3mpc.dairlab.load_dairlab_config`, which this calls; unknown keys raise
        :class:`c3mpc.dairlab.DairlabOptionError` with their line.
        """
        from .dairlab import load_dairlab_config

        return load_dairlab_config(path, projection, **overrides).options

    def replace(self, **changes: Any) -> "C3Options":
        """A copy with some options changed (validated)."""
        unknown = sorted(set(changes) - set(self.field_names()))
        if unknown:
            raise C3ValueError(f"unknown C3 option(s) {unknown}; valid options: "
                               f"{self.field_names()}")
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        """The options as a plain dict (round-trips through :meth:`from_dict`)."""
        d = dataclasses.asdict(self)
        d["extra"] = dict(self.extra)
        return d


def _read_text(path: str | Path) -> str:
    try:
        return Path(path).read_text()
    except (OSError, UnicodeDecodeError) as e:
        raise C3ValueError(f"cannot read options file {str(path)!r}: {e}") from None


_ERRORS = (C3TypeError, C3ValueError)
_MAX_COUNT = 2**31 - 1  # iteration and thread counts reach C code as 32-bit ints
_FLOAT_LITERAL = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")


def _num(**kw: Any) -> Callable[[str, Any], Any]:
    return lambda name, v: check_number(name, v, errors=_ERRORS, **kw)


def _count(minimum: int = 1) -> Callable[[str, Any], Any]:
    return _num(integer=True, minimum=minimum, maximum=_MAX_COUNT)


def _choice(choices: tuple[str, ...]) -> Callable[[str, Any], Any]:
    return lambda name, v: check_choice(name, v, choices, _ERRORS)


def _flag(name: str, v: Any) -> bool:
    return check_bool(name, v, _ERRORS)


def _mapping(name: str, v: Any) -> Any:
    if not isinstance(v, Mapping):
        raise C3TypeError(f"{name} must be a mapping, got {type(v).__name__}")
    return v


_CHECKS: dict[str, Callable[[str, Any], Any]] = {
    "projection": _choice(PROJECTIONS),
    "admm_iter": _count(),
    "rho": _num(minimum=0.0, exclusive_minimum=True),
    "rho_scale": _num(minimum=1.0),
    "big_m": _num(minimum=0.0, exclusive_minimum=True),
    "warm_start": _flag,
    "delta_init": _choice(("x0", "zeros")),
    "discount": _num(minimum=0.0, maximum=1.0, exclusive_minimum=True),
    "scale_lcs": _flag,
    "end_on_qp_step": _flag,
    "qp_alpha": _num(minimum=0.0, maximum=1.0, exclusive_minimum=True),
    "qp_epsilon": _num(minimum=0.0),
    "admm_projection_iter": _count(),
    "projection_time_limit": _num(minimum=0.0, exclusive_minimum=True, allow_none=True),
    "qp_solver": _choice(("active-set", "osqp")),
    "osqp_eps_abs": _num(minimum=0.0, exclusive_minimum=True),
    "osqp_eps_rel": _num(minimum=0.0, exclusive_minimum=True),
    "osqp_max_iter": _count(),
    "osqp_polish": _flag,
    "num_threads": _num(integer=True, minimum=1, maximum=4096),
    "blas_threads": _num(integer=True, minimum=1, maximum=4096, allow_none=True),
    "extra": _mapping,
    # DAIRLab/c3 semantics (docs/c3.md "Coming from DAIRLab/c3"); index tuples and cross-field
    # rules in C3Options._check_dairlab_semantics
    "penalize_input_change": _flag,
    "lambda0_from_lcp": _flag,
    "first_step_forces": _choice(("plan", "lcp-mode")),
    "discount_admm_weights": _flag,
    "projection_plan_states": _choice(("rerolled", "qp")),
    "resimulate_plan": _flag,
    "consensus_tolerance": _num(minimum=0.0, allow_none=True),
    "complementarity_tolerance": _num(minimum=0.0, allow_none=True),
    "on_qp_failure": _choice(("shift", "hold")),
    "c3plus_final_reference": _choice(("consensus", "projection")),
    "final_augmented_cost_contact_scaling": _num(minimum=0.0, exclusive_minimum=True,
                                                 allow_none=True),
    "quaternion_weight": _num(minimum=0.0),
    "quaternion_regularizer_fraction": _num(minimum=0.0),
}
"""One strict check per field (lcs._validation rules: the error names the field, what was
expected and what was given)."""

_FLOAT_FIELDS = tuple(n for n in ("rho", "rho_scale", "big_m", "discount", "qp_alpha",
                                  "qp_epsilon", "projection_time_limit", "osqp_eps_abs",
                                  "osqp_eps_rel", "final_augmented_cost_contact_scaling",
                                  "quaternion_weight", "quaternion_regularizer_fraction",
                                  "consensus_tolerance", "complementarity_tolerance"))
