"""C3Options: defaults, validation, strict YAML/TOML loading."""

from __future__ import annotations

import pytest

from c3mpc import C3Options


def test_defaults_documented_and_valid():
    o = C3Options()
    assert (o.projection, o.admm_iter, o.rho, o.rho_scale) == ("miqp", 10, 1.0, 2.0)
    for f in C3Options.field_names():  # every option has a docstring in the source
        assert f in C3Options.__doc__ or f in open(C3Options.__module__.replace(".", "/")
                                                   + ".py").read()


@pytest.mark.parametrize("kwargs, word", [
    (dict(rho=-1.0), "rho"), (dict(rho_scale=0.5), "rho_scale"), (dict(admm_iter=0), "admm_iter"),
    (dict(projection="gurobi"), "projection"), (dict(discount=1.5), "discount"),
    (dict(qp_alpha=0.0), "qp_alpha"), (dict(delta_init="ones"), "delta_init"),
    (dict(big_m=float("nan")), "big_m"),
])
def test_invalid_values_name_the_option(kwargs, word):
    with pytest.raises(ValueError, match=word):
        C3Options(**kwargs)


def test_wrong_type():
    with pytest.raises(TypeError, match="admm_iter"):
        C3Options(admm_iter=2.5)


def test_yaml_and_toml_roundtrip(tmp_path):
    y = tmp_path / "c3.yaml"
    y.write_text("projection: lcp\nadmm_iter: 4\nrho_scale: 1.5\nqp_epsilon: 1e-7\n")
    o = C3Options.from_yaml(y)
    assert (o.projection, o.admm_iter, o.rho_scale, o.qp_epsilon) == ("lcp", 4, 1.5, 1e-7)
    t = tmp_path / "c3.toml"
    t.write_text('[c3]\nprojection = "qp"\nrho = 0.5\n')
    assert C3Options.from_file(t, key="c3").rho == 0.5
    assert C3Options.from_dict(o.to_dict()) == o


def test_unknown_key_lists_valid_ones(tmp_path):
    y = tmp_path / "bad.yaml"
    y.write_text("projection: lcp\nadmm_iters: 4\n")
    with pytest.raises(ValueError, match="admm_iters.*valid options"):
        C3Options.from_yaml(y)
    with pytest.raises(ValueError, match="unknown"):
        C3Options().replace(rhoo=1.0)
