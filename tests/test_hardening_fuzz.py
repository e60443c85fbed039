"""Fuzzing the public entry points (issue 26, part 5): clear error or correct result, never a
silent coercion, never a raw builtin/third-party exception, never a success with non-finite
content.

Hypothesis draws the inputs (seeded by the profile below, so runs are reproducible). "Clear
error" means the package's own error class (``LCSError`` / ``C3Error`` / argparse's exit 2)
whose message names the argument.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from c3mpc import C3, C3Options
from c3mpc.cli import build_parser
from c3mpc.errors import C3Error
from c3mpc.options import _CHECKS
from lcs import LCS, solve_lcp
from lcs.errors import LCSError
from lcs.lcp import LCPStatus

FUZZ = settings(max_examples=60, deadline=None,
                suppress_health_check=[HealthCheck.too_slow])

#: values that are never a number: they must be rejected, not converted
NOT_NUMBERS = st.one_of(st.text(max_size=8), st.booleans(), st.none(),
                        st.complex_numbers(allow_nan=False, allow_infinity=False),
                        st.lists(st.floats(allow_nan=False), min_size=1, max_size=3),
                        st.binary(max_size=4))
ANY_NUMBER = st.one_of(st.floats(allow_nan=True, allow_infinity=True),
                       st.integers(min_value=-(10**500), max_value=10**500))


# ------------------------------------------------------------ solve_lcp
@FUZZ
@given(data=st.data(), n=st.integers(1, 6))
def test_solve_lcp_returns_a_true_solution_or_an_honest_status(data, n):
    elements = st.floats(-1e3, 1e3, allow_nan=False, width=64)
    F = data.draw(hnp.arrays(np.float64, (n, n), elements=elements))
    q = data.draw(hnp.arrays(np.float64, (n,), elements=elements))
    sol = solve_lcp(F, q)
    if sol.status is LCPStatus.SOLVED:
        assert np.all(np.isfinite(sol.z)) and np.all(np.isfinite(sol.w))
        scale = max(1.0, np.abs(q).max())
        natural = np.abs(np.minimum(sol.z, F @ sol.z + q)).max() / scale
        assert natural <= 1e-9 * 1.0001 + 1e-15
    elif sol.status is not LCPStatus.INACCURATE:
        assert np.all(np.isnan(sol.z)) and not sol.found


@FUZZ
@given(bad=NOT_NUMBERS)
def test_solve_lcp_rejects_non_number_tolerances(bad):
    with pytest.raises(LCSError, match="tol"):
        solve_lcp(np.eye(2), [1.0, -1.0], tol=bad)


@FUZZ
@given(tol=ANY_NUMBER)
def test_solve_lcp_accepts_exactly_the_meaningful_tolerances(tol):
    meaningful = isinstance(tol, float) and 0 < tol < 1
    try:
        sol = solve_lcp(-np.eye(2), -np.ones(2), tol=tol)
    except LCSError as e:
        assert "tol" in str(e)
        assert not meaningful
        return
    assert meaningful
    assert not sol.found  # this LCP has no solution: no tolerance may call it solved


@FUZZ
@given(value=st.one_of(
    hnp.arrays(np.complex128, (2,), elements=st.complex_numbers(max_magnitude=10)),
    st.lists(st.text(max_size=3), min_size=2, max_size=2),
    hnp.arrays(np.bool_, (2,)),
    hnp.arrays(np.float64, st.sampled_from([(2, 2), (1, 2), (4,), (2, 1, 1)]))))
def test_lcs_step_rejects_wrongly_typed_or_shaped_states(value):
    lcs = LCS(np.eye(2), np.ones((2, 1)), np.ones((2, 1)), np.zeros(2), np.ones((1, 2)),
              np.eye(1), np.zeros((1, 1)), np.ones(1), dt=0.1)
    with pytest.raises(LCSError, match="x"):
        lcs.step(value, [0.0])


# ------------------------------------------------------------ C3Options
_DEFAULTS = C3Options()
_FIELDS = [f.name for f in dataclasses.fields(C3Options) if f.name != "extra"]


@FUZZ
@given(field=st.sampled_from(_FIELDS), value=st.one_of(NOT_NUMBERS, ANY_NUMBER))
def test_options_never_coerce(field, value):
    default = getattr(_DEFAULTS, field)
    try:
        opts = C3Options(**{field: value})
    except C3Error as e:
        assert f"C3Options.{field}" in str(e) and getattr(e, "field", None) == field
        return
    stored = getattr(opts, field)
    if isinstance(default, bool):
        assert type(value) is bool and stored is value
    elif isinstance(default, str):
        assert type(value) is str and stored == value
    elif isinstance(value, bool) or not isinstance(value, (int, float)):
        assert value is None and stored is None  # None only where the field allows it
    else:
        assert stored == value and math.isfinite(float(stored))
        if isinstance(default, int) and not isinstance(default, bool):
            assert type(value) is int


@FUZZ
@given(field=st.sampled_from(_FIELDS),
       text=st.one_of(st.sampled_from(["1e3", "1.0", "true", "no", "'false'", "null", "[1, 2]",
                                       "{a: 1}", "0x10", ".inf", "-.inf", ".nan", "10", "1e-6",
                                       "2147483648", "~", "&a [*a]", "[1"]),
                      st.text(alphabet="0123456789.e-+xyz[]{}:'\" ", max_size=8)))
def test_options_file_is_loaded_strictly_or_rejected_in_one_line(tmp_path_factory, field, text):
    path = tmp_path_factory.mktemp("opts") / "c3.yaml"
    path.write_text(f"projection: lcp\n{field}: {text}\n")
    try:
        opts = C3Options.from_file(path)
    except C3Error as e:
        msg = str(e)
        assert "\n" not in msg and str(path) in msg
        return
    assert opts.projection == "lcp"
    _CHECKS[field](field, getattr(opts, field))  # what was stored passes the strict check


# ------------------------------------------------------------ C3.solve
def _controller(bounds: bool) -> C3:
    lcs = LCS([[1.0, 0.1], [0.0, 1.0]], [[0.0], [0.1]], [[0.0], [0.1]], [0.0, 0.0],
              [[1.0, 0.0]], [[1.0]], [[0.0]], [0.5], dt=0.1)
    ctrl = C3(lcs, np.eye(2), np.eye(1), np.eye(4), np.eye(4), N=4,
              options=C3Options(projection="lcp", admm_iter=3))
    if bounds:
        ctrl.set_bounds(x_lower=[-10.0, -10.0], x_upper=[10.0, 10.0], u_lower=-100.0,
                        u_upper=100.0)
    return ctrl


_CTRL = {b: _controller(b) for b in (False, True)}


@FUZZ
@given(x0=hnp.arrays(np.float64, (2,), elements=st.floats(allow_nan=True,
                                                          allow_infinity=True)),
       bounds=st.booleans())
def test_c3_solve_is_an_honest_status_for_any_state(x0, bounds):
    ctrl = _CTRL[bounds]
    try:
        res = ctrl.solve(x0)
    except C3Error as e:
        assert not np.all(np.isfinite(x0)) and "x0" in str(e)
        return
    assert np.all(np.isfinite(x0))
    if res.ok:
        assert math.isfinite(res.cost) and math.isfinite(res.complementarity_violation)
        assert np.all(np.isfinite(res.x)) and np.all(np.isfinite(res.u))
        assert np.all(np.isfinite(res.lam))
    else:
        assert res.message


# ------------------------------------------------------------ the CLI parser
_PARSER = build_parser()
_FLAGS = {"--duration": float, "--horizon": int, "--replan-every": int, "--noise": float,
          "--seed": int}


@FUZZ
@given(flag=st.sampled_from(sorted(_FLAGS)),
       text=st.one_of(st.sampled_from(["0", "-0", "-5", "inf", "-inf", "nan", "1e400", "1e-400",
                                       "2.5", "3", "0x10", " 7", "1_000", "", "2147483648"]),
                      st.text(alphabet="0123456789.e-+nai", min_size=1, max_size=6)))
def test_cli_numbers_are_valid_or_rejected(flag, text):
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err):
            args = _PARSER.parse_args(["run", "cartpole-softwalls", flag, text])
    except SystemExit as e:
        assert e.code == 2
        assert f"argument {flag}" in err.getvalue()
        return
    value = getattr(args, flag.lstrip("-").replace("-", "_"))
    assert isinstance(value, _FLAGS[flag]) and not isinstance(value, bool)
    assert math.isfinite(value)
    if flag in ("--duration",):
        assert value > 0
    if flag in ("--horizon", "--replan-every"):
        assert value >= 1
    if flag in ("--noise", "--seed"):
        assert value >= 0


# ------------------------------------------------------------ study files
@FUZZ
@given(value=st.one_of(st.sampled_from(["1e3", "-1", "0", "[1, 2]", "{low: 1}", "&a [*a]",
                                         "{low: 2, high: 1}", "{low: .nan, high: 1}",
                                         "[1", "true", "~", "'x'", "1e400"]),
                       st.text(alphabet="0123456789.e-+[]{}:,' lowhigh", max_size=12)),
       key=st.sampled_from(["trials", "seeds", "duration", "timeout", "noise",
                            "search_space.admm_iter", "sampler"]))
def test_study_files_are_valid_or_one_clear_error(value, key):
    from c3mpc.sweep.study import StudyFileError, parse_study

    base = {"name": "fuzz", "task": "cartpole-softwalls", "objectives": "accumulated_cost",
            "search_space": "{admm_iter: {low: 2, high: 6}}", "trials": "4"}
    head, _, sub = key.partition(".")
    if sub:
        base[head] = f"{{{sub}: {value}}}"
    else:
        base[head] = value
    text = "".join(f"{k}: {v}\n" for k, v in base.items())
    try:
        study = parse_study(text, source="fuzz.yaml")
    except StudyFileError as e:
        assert "\n" not in str(e).strip() and "fuzz.yaml" in str(e)
        return
    assert study.trials >= 1 and len(study.seeds) >= 1
    assert math.isfinite(study.timeout) and study.timeout > 0
