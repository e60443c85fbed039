"""c3mpc.terminal_cost: a contact mode's linear dynamics and Riccati terminal cost."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg

from c3mpc.errors import C3ValueError
from c3mpc.terminal_cost import contact_mode_dare, contact_mode_dynamics
from plants import load_plant


def test_no_active_contact_is_the_plain_dare():
    """Cart-pole away from the walls: the mode with no contact is (A, B); its DARE is scipy's on
    (A, B), which the paper defaults use as QN."""
    plant = load_plant("cartpole-softwalls")
    d = plant.defaults
    lcs = plant.lcs()
    P = contact_mode_dare(lcs, d.Q, d.R, active=())
    np.testing.assert_allclose(P, scipy.linalg.solve_discrete_are(lcs.A, lcs.B, d.Q, d.R),
                               rtol=1e-10)
    np.testing.assert_allclose(P, d.QN, rtol=1e-10)


@pytest.mark.parametrize("seed", range(3))
def test_mode_dynamics_match_the_lcs_where_that_mode_is_the_lcp_solution(seed):
    """Cart-pole pressed into the right wall (λ_right > 0, λ_left = 0): LCS.step equals the
    mode's affine map; the same map predicts wrongly once the wall is left."""
    plant = load_plant("cartpole-softwalls")
    lcs = plant.lcs()
    rng = np.random.default_rng(seed)
    Am, Bm, dm = contact_mode_dynamics(lcs, active=[0])
    # tip beyond the right wall at 0.35 m: x − l_p θ > 0.35
    x = np.array([0.4 + 0.1 * rng.random(), -0.05 * rng.random(), rng.normal(), rng.normal()])
    u = rng.normal(size=1)
    x_next, lam = lcs.step(x, u)
    assert lam[0] > 0 and lam[1] == 0
    np.testing.assert_allclose(x_next, Am @ x + Bm @ u + dm, atol=1e-12)
    x_free = np.array([0.0, 0.0, rng.normal(), rng.normal()])
    x_next, lam = lcs.step(x_free, u)
    assert np.all(lam == 0)
    assert np.abs(x_next - (Am @ x_free + Bm @ u + dm)).max() > 1e-3


def test_pivoting_sticking_mode_gives_a_stabilising_terminal_cost():
    plant = load_plant("pivoting")
    d = plant.defaults
    lcs = plant.lcs(d.x_goal)
    P = contact_mode_dare(lcs, d.Q, d.R, active=[7, 9])
    Am, Bm, _ = contact_mode_dynamics(lcs, [7, 9])
    K = np.linalg.solve(d.R + Bm.T @ P @ Bm, Bm.T @ P @ Am)
    assert np.abs(np.linalg.eigvals(Am - Bm @ K)).max() < 1.0  # the LQR of the mode is stable
    assert np.all(np.linalg.eigvalsh(P) > 0)


def test_bad_modes_are_rejected():
    plant = load_plant("cartpole-softwalls")
    d = plant.defaults
    with pytest.raises(C3ValueError, match="active"):
        contact_mode_dynamics(plant.lcs(), [5])
    with pytest.raises(C3ValueError, match="active"):
        contact_mode_dynamics(plant.lcs(), [0, 0])
    with pytest.raises(C3ValueError, match="shape"):
        contact_mode_dare(plant.lcs(), np.eye(3), d.R, [])
    with pytest.raises(C3ValueError, match="singular"):
        contact_mode_dynamics(load_plant("pivoting").lcs(), [6])  # F_66 = 0: γ undetermined
