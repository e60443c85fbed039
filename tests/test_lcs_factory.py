"""Tests of the pure-numpy multibody -> LCS factory (lcs.factory) and of its use by plants.

The factory's matrices are checked against a direct, contact-by-contact evaluation of the
semi-implicit Euler step and of the complementarity rows of seed 003 eqs. (8)-(9), (12)-(13)
and the spring model (written with loops, independent of the vectorized assembly).
"""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lcs import LCS, ContactData, SmoothLinearization, build_lcs, euler_kinematics, lambda_size
from lcs.factory import CONTACT_MODELS
from plants.multibody import Box, ContactPair, HalfSpace, ModelBuilder, Sphere


# ---------------------------------------------------------------------------- synthetic data
def random_problem(rng, n_q=7, n_v=6, n_u=3, d=(2, 4, 1)):
    """Random but well-formed linearization + contact data (Minv SPD)."""
    L = rng.normal(size=(n_v, n_v))
    Minv = L @ L.T + n_v * np.eye(n_v)
    K_q = np.eye(n_q) + 0.01 * rng.normal(size=(n_q, n_q))
    K_v = 0.01 * rng.normal(size=(n_q, n_v))
    lin = SmoothLinearization(
        Minv=Minv, Jf_q=rng.normal(size=(n_v, n_q)), Jf_v=rng.normal(size=(n_v, n_v)),
        Jf_u=rng.normal(size=(n_v, n_u)), d_v=rng.normal(size=n_v), K_q=K_q, K_v=K_v,
        q_c=rng.normal(size=n_q), N_plus=rng.normal(size=(n_v, n_q)), q_star=rng.normal(size=n_q))
    ne = 2 * np.array(d)
    contacts = ContactData(phi=rng.normal(size=len(d)), J_n=rng.normal(size=(len(d), n_v)),
                           J_t=rng.normal(size=(int(ne.sum()), n_v)),
                           mu=rng.uniform(0.1, 1.0, size=len(d)), num_edges=ne)
    return lin, contacts


def direct_step_and_rows(lin, con, model, dt, x, u, lam, k):
    """x+ and w = E x + F lam + H u + c, evaluated contact by contact (reference)."""
    n_q = lin.n_q
    q, v = x[:n_q], x[n_q:]
    n_c = con.n_c
    edges_of = []  # (contact, row of J_t)
    r = 0
    for i in range(n_c):
        for _ in range(int(con.num_edges[i])):
            edges_of.append((i, r))
            r += 1
    # generalized contact force tau_c = J_lam^T lam (a force, scaled by dt in v+)
    tau = np.zeros(lin.n_v)
    if model == "stewart_trinkle":
        lam_n = lam[n_c:2 * n_c]
        lam_t = lam[2 * n_c:]
        for i in range(n_c):
            tau += con.J_n[i] * lam_n[i]
        for e, (i, row) in enumerate(edges_of):
            tau += con.J_t[row] * lam_t[e]
    elif model == "anitescu":
        for e, (i, row) in enumerate(edges_of):
            tau += (con.J_n[i] + con.mu[i] * con.J_t[row]) * lam[e]
    else:
        for i in range(n_c):
            tau += con.J_n[i] * lam[i]
    a = lin.Jf_q @ q + lin.Jf_v @ v + lin.Jf_u @ u + lin.d_v
    v_next = v + dt * a + dt * lin.Minv @ tau
    q_next = lin.K_q @ q + lin.K_v @ v_next + lin.q_c
    dq = lin.N_plus @ (q - lin.q_star)  # tangent displacement from q*
    w = []
    if model == "stewart_trinkle":
        gamma, lam_n, lam_t = lam[:n_c], lam[n_c:2 * n_c], lam[2 * n_c:]
        for i in range(n_c):  # friction cone: mu lam_n - sum of the contact's edge forces
            w.append(con.mu[i] * lam_n[i] - sum(lam_t[e] for e, (j, _) in enumerate(edges_of)
                                                 if j == i))
        for i in range(n_c):  # predicted gap (eq. 9)
            w.append(con.phi[i] + con.J_n[i] @ dq + dt * con.J_n[i] @ v_next)
        for e, (i, row) in enumerate(edges_of):  # tangential velocity + slack
            w.append(gamma[i] + con.J_t[row] @ v_next)
    elif model == "anitescu":
        for e, (i, row) in enumerate(edges_of):  # eq. (13)
            w.append((con.phi[i] + con.J_n[i] @ dq) / dt
                     + (con.J_n[i] + con.mu[i] * con.J_t[row]) @ v_next)
    else:
        for i in range(n_c):
            w.append(lam[i] + k * (con.phi[i] + con.J_n[i] @ dq))
    return np.concatenate([q_next, v_next]), np.array(w)


@pytest.mark.parametrize("model", CONTACT_MODELS)
@pytest.mark.parametrize("dims", [(7, 6, 3), (4, 4, 0), (9, 9, 9)])
def test_factory_matches_direct_semi_implicit_euler(model, dims):
    rng = np.random.default_rng(11)
    n_q, n_v, n_u = dims
    lin, con = random_problem(rng, n_q, n_v, n_u)
    dt, k = 0.02, 350.0
    lcs = build_lcs(lin, con, model, dt, spring_stiffness=k)
    assert lcs.n_lambda == lambda_size(model, con.num_edges)
    for _ in range(3):
        x = rng.normal(size=n_q + n_v)
        u = rng.normal(size=n_u)
        lam = rng.uniform(0, 2, size=lcs.n_lambda)
        x_ref, w_ref = direct_step_and_rows(lin, con, model, dt, x, u, lam, k)
        np.testing.assert_allclose(lcs.A @ x + lcs.B @ u + lcs.D @ lam + lcs.d, x_ref,
                                   rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(lcs.E @ x + lcs.F @ lam + lcs.H @ u + lcs.c, w_ref,
                                   rtol=1e-12, atol=1e-11)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n_v=st.integers(1, 8), extra_q=st.integers(0, 2),
       n_u=st.integers(0, 3), d=st.lists(st.integers(1, 5), min_size=0, max_size=4),
       model=st.sampled_from(CONTACT_MODELS), dt=st.sampled_from([1e-3, 0.01, 0.05]))
def test_factory_matches_direct_evaluation_property(seed, n_v, extra_q, n_u, d, model, dt):
    rng = np.random.default_rng(seed)
    lin, con = random_problem(rng, n_v + extra_q, n_v, n_u, d=tuple(d))
    lcs = build_lcs(lin, con, model, dt, spring_stiffness=80.0)
    assert lcs.n_lambda == lambda_size(model, con.num_edges)
    x = rng.normal(size=lin.n_q + n_v)
    u = rng.normal(size=n_u)
    lam = rng.uniform(0, 2, size=lcs.n_lambda)
    x_ref, w_ref = direct_step_and_rows(lin, con, model, dt, x, u, lam, 80.0)
    np.testing.assert_allclose(lcs.A @ x + lcs.B @ u + lcs.D @ lam + lcs.d, x_ref,
                               rtol=1e-11, atol=1e-11)
    if lcs.n_lambda:
        np.testing.assert_allclose(lcs.E @ x + lcs.F @ lam + lcs.H @ u + lcs.c, w_ref,
                                   rtol=1e-11, atol=1e-9)


def test_paper_matrices_for_identity_kinematics():
    """With N = I and the Euler step (anchor-c3 §2): the published block forms."""
    rng = np.random.default_rng(2)
    n, dt = 5, 0.01
    lin, con = random_problem(rng, n, n, 2, d=(2, 3))
    K_q, K_v, q_c = euler_kinematics(np.eye(n), dt)
    lin = SmoothLinearization(lin.Minv, lin.Jf_q, lin.Jf_v, lin.Jf_u, lin.d_v, K_q, K_v, q_c,
                              np.eye(n), lin.q_star)
    L = build_lcs(lin, con, "stewart_trinkle", dt)
    I = np.eye(n)
    np.testing.assert_allclose(L.A, np.block([[I + dt**2 * lin.Jf_q, dt * I + dt**2 * lin.Jf_v],
                                              [dt * lin.Jf_q, I + dt * lin.Jf_v]]), atol=1e-14)
    np.testing.assert_allclose(L.B, np.vstack([dt**2 * lin.Jf_u, dt * lin.Jf_u]), atol=1e-14)
    np.testing.assert_allclose(L.d, np.concatenate([dt**2 * lin.d_v, dt * lin.d_v]), atol=1e-14)
    n_c = con.n_c
    J_n, J_t = con.J_n, con.J_t
    np.testing.assert_allclose(L.D[n:, n_c:2 * n_c], dt * lin.Minv @ J_n.T, atol=1e-13)
    np.testing.assert_allclose(L.D[:, :n_c], 0.0)  # the slack gamma is not a force
    np.testing.assert_allclose(L.F[n_c:2 * n_c, n_c:2 * n_c], dt**2 * J_n @ lin.Minv @ J_n.T,
                               atol=1e-13)
    np.testing.assert_allclose(L.F[2 * n_c:, 2 * n_c:], dt * J_t @ lin.Minv @ J_t.T, atol=1e-13)
    np.testing.assert_allclose(L.E[n_c:2 * n_c], np.hstack([J_n + dt**2 * J_n @ lin.Jf_q,
                                                             dt * J_n + dt**2 * J_n @ lin.Jf_v]),
                               atol=1e-13)
    E_t = np.zeros((n_c, con.n_e))
    E_t[0, :4] = E_t[1, 4:] = 1.0
    np.testing.assert_allclose(L.F[:n_c, 2 * n_c:], -E_t)
    np.testing.assert_allclose(L.F[2 * n_c:, :n_c], E_t.T)
    np.testing.assert_allclose(np.diag(L.F[:n_c, n_c:2 * n_c]), con.mu)


def test_time_varying_stack_and_lambda_size():
    rng = np.random.default_rng(0)
    lin, con = random_problem(rng)
    L = build_lcs(lin, con, "anitescu", 0.01, N=5)
    assert L.is_time_varying and L.N == 5
    assert lambda_size("stewart_trinkle", [4, 8, 2]) == 2 * 3 + 14
    assert lambda_size("anitescu", [4, 8, 2]) == 14
    assert lambda_size("frictionless_spring", [4, 8, 2]) == 3
    assert lambda_size("stewart_and_trinkle", [4]) == 6  # the authors' YAML spelling


def test_factory_rejects_bad_input():
    rng = np.random.default_rng(0)
    lin, con = random_problem(rng)
    with pytest.raises(ValueError, match="contact_model"):
        build_lcs(lin, con, "coulomb")
    with pytest.raises(ValueError, match="dt"):
        build_lcs(lin, con, dt=-0.1)
    with pytest.raises(ValueError, match="mu"):
        build_lcs(lin, ContactData(con.phi, con.J_n, con.J_t, -con.mu, con.num_edges))
    with pytest.raises(ValueError, match="num_edges"):
        build_lcs(lin, ContactData(con.phi, con.J_n, con.J_t, con.mu, con.num_edges + 1))
    bad = con.J_n.copy()
    bad[0, 0] = np.nan
    with pytest.raises(ValueError, match="J_n"):
        build_lcs(lin, ContactData(con.phi, bad, con.J_t, con.mu, con.num_edges))
    with pytest.raises(ValueError, match="Jf_q"):
        build_lcs(SmoothLinearization(lin.Minv, lin.Jf_q[:, :-1], lin.Jf_v, lin.Jf_u, lin.d_v,
                                      lin.K_q, lin.K_v, lin.q_c, lin.N_plus, lin.q_star), con)
    with pytest.raises(ValueError, match="spring_stiffness"):
        build_lcs(lin, con, "frictionless_spring", spring_stiffness=0.0)
    with pytest.raises(ValueError, match="N"):
        build_lcs(lin, con, N=0)


# ---------------------------------------------------------------------------- plants
def mixed_scene():
    """Two balls and a cube on the ground: pairs with d = 2, 4 and a planar d = 1 pair."""
    b = ModelBuilder()
    b.add_body("ground", joint="fixed", mass=0, shape=HalfSpace())
    b.add_body("ball1", joint="free", mass=0.5, shape=Sphere(0.05))
    b.add_body("ball2", joint="free", mass=0.8, shape=Sphere(0.08))
    b.add_body("cube", joint="free", mass=1.0, shape=Box(0.1, 0.1, 0.1))
    pairs = [ContactPair("ball1", "ground", mu=0.4, num_friction_directions=2),
             ContactPair("ball2", "ground", mu=0.6, num_friction_directions=4),
             ContactPair("cube", "ground", mu=0.5, num_friction_directions=1,
                         planar_normal=(0, 1, 0)),
             ContactPair("ball1", "ball2", mu=0.2, num_friction_directions=3)]
    return b.build(pairs, actuation=np.eye(18)[:, :4])


def random_state(plant, rng):
    q = pin.neutral(plant.model)
    for k in range(3):  # three free flyers: positions near the ground, random orientations
        q[7 * k:7 * k + 3] = [0.3 * k, 0.0, 0.0] + rng.uniform(-0.05, 0.1, size=3)
        quat = rng.normal(size=4)
        q[7 * k + 3:7 * k + 7] = quat / np.linalg.norm(quat)
    return np.concatenate([q, rng.normal(size=plant.n_v)])


@pytest.mark.parametrize("model,expected", [("stewart_trinkle", 2 * 4 + (4 + 8 + 2 + 6)),
                                            ("anitescu", 4 + 8 + 2 + 6),
                                            ("frictionless_spring", 4)])
def test_lambda_dimensions_mixed_friction_directions(model, expected):
    plant = mixed_scene()
    rng = np.random.default_rng(0)
    x = random_state(plant, rng)
    x[7 * 2 + 3:7 * 2 + 7] = [0, 0, 0, 1]  # cube upright: its contact normal is in the x-z plane
    L = plant.lcs(x, np.zeros(4), contact_model=model, dt=0.01)
    assert L.n_lambda == expected == plant.num_lambda(model)
    assert (L.n_x, L.n_u) == (plant.n_x, 4) == (21 + 18, 4)


def test_lambda_dimensions_authors_cases():
    """anchor-c3 §2: ST 2 contacts x 4 dirs -> 20, Anitescu 3 x 2 -> 12, spring 3 -> 3."""
    b = ModelBuilder()
    b.add_body("ground", joint="fixed", mass=0, shape=HalfSpace())
    for i in range(3):
        b.add_body(f"b{i}", joint="free", mass=1.0, shape=Sphere(0.1))
    two = b.build([ContactPair(f"b{i}", "ground", mu=0.5, num_friction_directions=4)
                   for i in range(2)])
    three = b.build([ContactPair(f"b{i}", "ground", mu=0.5, num_friction_directions=2)
                     for i in range(3)])
    assert two.num_lambda("stewart_trinkle") == 20 == two.n_lambda
    assert three.num_lambda("anitescu") == 12
    assert three.num_lambda("frictionless_spring") == 3
    x = np.concatenate([pin.neutral(three.model), np.zeros(three.n_v)])
    x[2] = x[9] = x[16] = 0.1
    assert three.lcs(x, contact_model="anitescu").n_lambda == 12


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_anitescu_F_is_psd_on_random_states(seed):
    plant = mixed_scene()
    rng = np.random.default_rng(seed)
    x = random_state(plant, rng)
    x[7 * 2 + 3:7 * 2 + 7] = [0, 0, np.sin(0.5 * rng.uniform()), np.cos(0.5 * rng.uniform())]
    x[7 * 2 + 3:7 * 2 + 7] /= np.linalg.norm(x[7 * 2 + 3:7 * 2 + 7])
    dt = rng.choice([0.005, 0.01, 0.05])
    L = plant.lcs(x, rng.normal(size=4), contact_model="anitescu", dt=dt)
    F = L.F
    np.testing.assert_allclose(F, F.T, atol=1e-12 * max(1.0, np.abs(F).max()))
    assert np.linalg.eigvalsh(0.5 * (F + F.T)).min() >= -1e-10


def test_stewart_trinkle_and_spring_structure_on_a_plant():
    plant = mixed_scene()
    x = random_state(plant, np.random.default_rng(3))
    x[7 * 2 + 3:7 * 2 + 7] = [0, 0, 0, 1]
    st_lcs = plant.lcs(x, np.zeros(4), contact_model="stewart_trinkle")
    n_c = plant.n_contacts
    assert np.all(st_lcs.D[:, :n_c] == 0)  # slack columns carry no force
    spring = plant.lcs(x, np.zeros(4), contact_model="frictionless_spring",
                       spring_stiffness=500.0)
    np.testing.assert_array_equal(spring.F, np.eye(n_c))
    phi = np.array([c.phi for c in plant.contact_descriptions(x)])
    # at x* the spring row is lam + k phi(q*)
    np.testing.assert_allclose(spring.E @ x + spring.c, 500.0 * phi, atol=1e-10)


def test_factory_speed_smoke(capsys):
    """Not a benchmark (see benchmarks/): one rebuild of a 4-contact LCS stays well under 20 ms."""
    import time

    plant = mixed_scene()
    x = random_state(plant, np.random.default_rng(0))
    x[7 * 2 + 3:7 * 2 + 7] = [0, 0, 0, 1]
    plant.lcs(x, np.zeros(4))
    t0 = time.perf_counter()
    for _ in range(20):
        lcs = plant.lcs(x, np.zeros(4))
    per_call = (time.perf_counter() - t0) / 20
    assert isinstance(lcs, LCS) and per_call < 0.02
