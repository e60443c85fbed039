"""SubADMM's body-split variant with joint-space rows (joint limits) and self-contacts.

Each joint-space row ``±e_k`` is a piece (a row, not a force at a body point), its β rᵀr joins the body-split matrix (a
diagonal β on the limited dof) and the iteration runs on piece rows. Rows that couple two branches
of a tree (a mimic coupler between fingers) leave the branch-induced pattern: those steps run the
``no_body`` variant. A self-contact (two bodies of one tree; ``contact_trees`` lists its tree
once) gets a piece per body, as the factorization assumes.

Independent references: the dense ``A + β Σ_p J_pᵀJ_p`` from ``ContactBodies.piece_rows`` (full
body rows) and the problem's own limit rows, and CANAL's solution of the same problem."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from plants.multibody.errors import ModelImportWarning
from plants.multibody.resources import example_robot_data_path
from plants.sim import CANALSolver, Simulator, SubADMMSolver
from plants.sim.geometry import Box, ContactParams
from plants.sim.scene import SceneBuilder, box_inertia
from plants.sim.subadmm import slack_pieces

ALLEGRO = "robots/allegro_hand_description/urdf/allegro_right_hand.urdf"
PANDA = "robots/panda_description/urdf/panda.urdf"
SOFT = ContactParams(1e5, 1e-3, 0.5)


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ModelImportWarning)
        yield


@pytest.fixture(scope="module")
def hand():
    """The Allegro hand upside down over a cube after 0.05 s of SAP: two fingers within reach of
    their limits, the cube on the ground (five trees: four fingers on the fixed palm, the cube)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ModelImportWarning)
        b = SceneBuilder()
        b.add_urdf(example_robot_data_path(ALLEGRO), SOFT, base_position=(0, 0, 0.25), base_quaternion=(1, 0, 0, 0),
                   joint_dynamics=False)
        h = 0.03
        b.add_free_body("cube", 0.1, box_inertia(0.1, (h, h, h)), [("box", Box((h, h, h)), SOFT)], position=(0, 0, h))
        b.add_ground(ContactParams(1e6, 1e-3, 0.5))
        sim = Simulator(b.build(), dt=1e-3)
        sim.run(0.05)
        problem = sim.contact_problem()[0]
    assert problem.n_limits == 2 and problem.n_geometric >= 4 and problem.n_trees == 5
    return problem


def test_limit_rows_are_pieces_of_their_own(hand):
    p = hand
    pieces = slack_pieces(p, "body")
    lim = pieces.contact >= p.n_geometric
    assert (pieces.joint[lim] == 0).all() and (pieces.joint[~lim] > 0).all()
    np.testing.assert_array_equal(np.unique(pieces.contact[lim]), np.arange(p.n_geometric, p.n_c))  # one each
    J = p.J.reshape(p.n_c, 3, p.n_v)
    np.testing.assert_array_equal(pieces.dense(p.n_v)[lim], J[pieces.contact[lim]])  # the rows ±e_k
    # the geometric pieces are the body pieces
    _, _, body_rows = p.bodies.piece_rows()
    np.testing.assert_allclose(pieces.dense(p.n_v)[~lim], body_rows, atol=1e-12)


@pytest.mark.parametrize("theta", [0.0, 0.3])
def test_body_split_matrix_holds_the_limit_rows(hand, theta):
    """The factored matrix is Â + β Σ over the body pieces and the limit rows (dense reference)."""
    p, beta = hand, 7.0
    solver = SubADMMSolver(theta=theta)
    assert solver._fits_body_split(p)
    pieces = slack_pieces(p, "body")
    factor = solver._factor(p, p.A, pieces, beta, "body")
    _, _, body_rows = p.bodies.piece_rows()
    limit_rows = p.J.reshape(p.n_c, 3, p.n_v)[p.n_geometric:]
    R = np.concatenate([body_rows, limit_rows]).reshape(-1, p.n_v)
    expected = p.A / (1.0 - theta) + beta * R.T @ R
    np.testing.assert_allclose(factor.matrix(), expected, rtol=1e-10, atol=1e-10 * np.abs(expected).max())


def test_body_variant_with_limits_reaches_the_canal_solution(hand):
    ref = CANALSolver(warm_start=False).solve(hand)
    assert ref.status.ok
    r = SubADMMSolver(max_iterations=3000, tol=1e-9, warm_start=False).solve(hand)
    assert r.solver == "subadmm[body]"  # no fallback to no_body any more
    assert r.status.ok
    assert np.abs(r.v - ref.v).max() <= 1e-5
    assert np.abs(r.gamma - ref.gamma).max() <= 2e-5 * np.abs(ref.gamma).max()


def test_a_coupler_between_two_branches_falls_back_to_no_body():
    """panda.urdf's finger_joint2 mimics finger_joint1: the coupler row couples two branches of the
    hand, outside the body-split matrix's pattern; that step runs no_body (and warns once)."""
    q0 = [0.0, -0.785, 0.0, -2.356, 0.0, 1.571, 0.785, 0.01, 0.01]
    b = SceneBuilder()
    b.add_urdf(example_robot_data_path(PANDA), SOFT, q0=q0, collision_links=["panda_leftfinger", "panda_rightfinger"])
    b.add_ground(SOFT)
    problem = Simulator(b.build(), dt=1e-3).contact_problem()[0]
    assert problem.n_limits >= 1
    assert not SubADMMSolver._fits_body_split(problem)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        r = SubADMMSolver(warm_start=False).solve(problem)
    assert r.solver == "subadmm[no_body]"


FOLDED_CHAIN = """<mujoco><worldbody>
  <body name="l1" pos="0 0 1"><joint name="j1" type="hinge" axis="0 1 0" range="-90 90"/>
    <geom name="g1" type="box" size="0.2 0.05 0.05" pos="0.2 0 0" mass="1"/>
    <body name="l2" pos="0.4 0 0"><joint name="j2" type="hinge" axis="0 1 0"/>
      <geom name="g2" type="box" size="0.03 0.03 0.06" pos="0 0 0.06" mass="0.3"/>
      <body name="l3" pos="0 0 0.12"><joint name="j3" type="hinge" axis="0 1 0"/>
        <geom name="g3" type="box" size="0.15 0.04 0.04" pos="-0.15 0 -0.05" mass="0.5"/>
  </body></body></body></worldbody></mujoco>"""


def test_a_self_contact_gets_a_piece_per_body(tmp_path):
    """A chain folded onto itself (link 3 on link 1, one tree, the pair included): the body
    variant splits the self-contact into its two bodies' pieces, so the factored matrix is
    Â + β Σ J_pᵀJ_p of the body pieces (before, one piece held the whole row while the factor
    added the point mass to one body only: 4.8 % off on a Go2 falling onto its legs, and SubADMM
    diverged); its solution is CANAL's."""
    path = tmp_path / "chain.xml"
    path.write_text(FOLDED_CHAIN)
    b = SceneBuilder()
    b.add_urdf(path, SOFT, self_collision_include=[("l1", "l3")])
    p = Simulator(b.build(), dt=1e-3).contact_problem()[0]
    self_contacts = np.flatnonzero((p.bodies.joints > 0).all(axis=1))
    ct = np.sort(p.contact_trees[self_contacts], axis=1)
    assert self_contacts.size >= 1 and (ct == [-1, 0]).all()  # the tree listed once
    pieces = slack_pieces(p, "body")
    for i in self_contacts:
        assert np.count_nonzero(pieces.contact == i) == 2
    beta = 3.0
    factor = SubADMMSolver()._factor(p, p.A, pieces, beta, "body")
    _, _, body_rows = p.bodies.piece_rows()
    R = np.concatenate([body_rows, p.J.reshape(p.n_c, 3, p.n_v)[p.n_geometric:]]).reshape(-1, p.n_v)
    expected = p.A + beta * R.T @ R
    np.testing.assert_allclose(factor.matrix(), expected, rtol=1e-10, atol=1e-12 * np.abs(expected).max())
    ref = CANALSolver(warm_start=False).solve(p)
    r = SubADMMSolver(max_iterations=3000, tol=1e-10, warm_start=False).solve(p)
    assert r.solver == "subadmm[body]" and r.status.ok
    assert np.abs(r.v - ref.v).max() <= 1e-6
