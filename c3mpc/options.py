"""Options of the C3 controller: one frozen dataclass, defaults declared once, strict loading.

Every default lives in its field declaration below, with its meaning and unit in the field's
docstring. ``C3Options.from_yaml`` / ``from_toml`` / ``from_dict`` reject unknown keys (listing
the valid ones) and validate values in ``__post_init__``.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from .errors import C3TypeError, C3ValueError

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

    discount_admm_weights: bool = True
    """With ``discount`` γ < 1: also scale knot i's G and U by γ^i (True, ours) or scale only Q
    and R (False, DAIRLab/c3's ``gamma``; the terminal cost is γ^N Q_N in both)."""

    projection_plan_states: str = "rerolled"
    """States returned with ``end_on_qp_step=False``: "rerolled" (the projection's λ and u
    re-rolled through the LCS from x0, so the plan is dynamically consistent) or "qp"
    (DAIRLab/c3: the final QP step's states next to the projection's λ and u)."""

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
        def bad(name: str, expected: str) -> C3ValueError:
            return C3ValueError(f"C3Options.{name} must be {expected}, got "
                                f"{getattr(self, name)!r}")

        if self.projection not in PROJECTIONS:
            raise C3ValueError(f"C3Options.projection must be one of {list(PROJECTIONS)}, got "
                               f"{self.projection!r}")
        for name in ("admm_iter", "admm_projection_iter", "osqp_max_iter", "num_threads"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int):
                raise C3TypeError(f"C3Options.{name} must be an int, got {type(v).__name__}")
        if self.admm_iter < 1:
            raise bad("admm_iter", ">= 1")
        if self.admm_projection_iter < 1:
            raise bad("admm_projection_iter", ">= 1")
        if self.num_threads < 1:
            raise bad("num_threads", ">= 1")
        if not (self.rho > 0 and _finite(self.rho)):
            raise bad("rho", "a positive finite number")
        if not (self.rho_scale >= 1 and _finite(self.rho_scale)):
            raise bad("rho_scale", "a finite number >= 1")
        if not (self.big_m > 0 and _finite(self.big_m)):
            raise bad("big_m", "a positive finite number")
        if self.qp_solver not in ("active-set", "osqp"):
            raise bad("qp_solver", "'active-set' or 'osqp'")
        if self.delta_init not in ("x0", "zeros"):
            raise bad("delta_init", "'x0' or 'zeros'")
        if not (0 < self.discount <= 1):
            raise bad("discount", "in (0, 1]")
        if not (0 < self.qp_alpha <= 1):
            raise bad("qp_alpha", "in (0, 1]")
        if not (self.qp_epsilon >= 0 and _finite(self.qp_epsilon)):
            raise bad("qp_epsilon", ">= 0")
        if self.projection_time_limit is not None and not self.projection_time_limit > 0:
            raise bad("projection_time_limit", "None or a positive time in [s]")
        for name in ("osqp_eps_abs", "osqp_eps_rel"):
            if not getattr(self, name) > 0:
                raise bad(name, "positive")
        if self.blas_threads is not None and (isinstance(self.blas_threads, bool) or not
                                              isinstance(self.blas_threads, int)
                                              or self.blas_threads < 1):
            raise bad("blas_threads", "None or an int >= 1")
        if not isinstance(self.extra, Mapping):
            raise bad("extra", "a mapping")
        self._check_dairlab_semantics()

    def _check_dairlab_semantics(self) -> None:
        """Validate the DAIRLab/c3-semantics fields (kept apart so the checks stay additive)."""
        for name in ("penalize_input_change", "lambda0_from_lcp", "discount_admm_weights"):
            if not isinstance(getattr(self, name), bool):
                raise C3TypeError(f"C3Options.{name} must be a bool, got "
                                  f"{type(getattr(self, name)).__name__} "
                                  f"{getattr(self, name)!r}")
        if self.projection_plan_states not in ("rerolled", "qp"):
            raise C3ValueError(f"C3Options.projection_plan_states must be 'rerolled' or 'qp', "
                               f"got {self.projection_plan_states!r}")
        for name in ("quaternion_weight", "quaternion_regularizer_fraction"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not (
                    v >= 0 and _finite(v)):
                raise C3ValueError(f"C3Options.{name} must be a finite number >= 0, got {v!r}")
        if isinstance(self.quaternion_indices, list):  # from YAML/TOML
            object.__setattr__(self, "quaternion_indices", tuple(self.quaternion_indices))
        idx = self.quaternion_indices
        if not isinstance(idx, tuple) or not all(
                isinstance(i, int) and not isinstance(i, bool) and i >= 0 for i in idx):
            raise C3ValueError(f"C3Options.quaternion_indices must be a tuple of state indices "
                               f">= 0, got {idx!r}")
        if isinstance(self.final_augmented_cost_contact_indices, list):  # from YAML/TOML
            object.__setattr__(self, "final_augmented_cost_contact_indices",
                               tuple(self.final_augmented_cost_contact_indices))
        fs = self.final_augmented_cost_contact_scaling
        fi = self.final_augmented_cost_contact_indices
        if fs is not None and (isinstance(fs, bool) or not isinstance(fs, (int, float))
                               or not (fs > 0 and _finite(fs))):
            raise C3ValueError(f"C3Options.final_augmented_cost_contact_scaling must be None or "
                               f"a positive number, got {fs!r}")
        if fi is not None and (not isinstance(fi, tuple) or not all(
                isinstance(i, int) and not isinstance(i, bool) and i >= 0 for i in fi)):
            raise C3ValueError(f"C3Options.final_augmented_cost_contact_indices must be None or "
                               f"a tuple of indices >= 0, got {fi!r}")
        if self.c3plus_final_reference not in ("consensus", "projection"):
            raise C3ValueError(f"C3Options.c3plus_final_reference must be 'consensus' or "
                               f"'projection', got {self.c3plus_final_reference!r}")
        if self.on_qp_failure not in ("shift", "hold"):
            raise C3ValueError(f"C3Options.on_qp_failure must be 'shift' or 'hold', got "
                               f"{self.on_qp_failure!r}")

    # ------------------------------------------------------------------ loading
    @classmethod
    def field_names(cls) -> list[str]:
        """The option names accepted by :meth:`from_dict`."""
        return [f.name for f in dataclasses.fields(cls)]

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "C3Options":
        """Options from a mapping; unknown keys raise ValueError listing the valid ones."""
        if not isinstance(data, Mapping):
            raise C3TypeError(f"C3 options must be a mapping, got {type(data).__name__}")
        unknown = sorted(set(data) - set(cls.field_names()))
        if unknown:
            raise C3ValueError(f"unknown C3 option(s) {unknown}; valid options: "
                               f"{cls.field_names()}")
        kwargs = dict(data)
        for f in dataclasses.fields(cls):  # YAML reads 1e-6 as a string in some dialects
            if f.name in kwargs and f.type in ("float", "float | None") and isinstance(
                    kwargs[f.name], str):
                try:
                    kwargs[f.name] = float(kwargs[f.name])
                except ValueError:
                    raise C3ValueError(f"C3Options.{f.name} must be a number, got "
                                       f"{kwargs[f.name]!r}") from None
        return cls(**kwargs)

    @classmethod
    def from_yaml(cls, path: str | Path, key: str | None = None) -> "C3Options":
        """Options from a YAML file (optionally the mapping under ``key``)."""
        import yaml

        data = yaml.safe_load(Path(path).read_text()) or {}
        return cls.from_dict(data[key] if key else data)

    @classmethod
    def from_toml(cls, path: str | Path, key: str | None = None) -> "C3Options":
        """Options from a TOML file (optionally the table under ``key``)."""
        try:
            import tomllib
        except ImportError:  # Python 3.10
            import tomli as tomllib  # type: ignore[no-redef]

        data = tomllib.loads(Path(path).read_text())
        return cls.from_dict(data[key] if key else data)

    @classmethod
    def from_file(cls, path: str | Path, key: str | None = None) -> "C3Options":
        """Options from a ``.yaml``/``.yml`` or ``.toml`` file."""
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


def _finite(v: Any) -> bool:
    try:
        return float(v) == float(v) and abs(float(v)) != float("inf")
    except (TypeError, ValueError):
        return False
