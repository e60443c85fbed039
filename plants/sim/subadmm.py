"""SubADMM: subsystem-based ADMM (seed 000 §VI, Algorithm 2) and its two ablations (Table III).

Subsystems are the ground-rooted trees of the :class:`ContactProblem` (a free body or a whole
robot). Every contact is split into *pieces*, each with its own slack copy ``z_ij = J_ij v̂_j``
(eq. 29-32); ``|Z_i|`` is the number of pieces of contact ``i``. With ``u_ij = −λ_i`` (eq. 39) one
iteration is

    (A_j + β Σ_i J_ijᵀ J_ij) v̂_j = b_j + Σ_i J_ijᵀ (β z_ij + λ_i)                (eq. 34)
    λ_i ← T(λ_i − β (Σ_j J_ij v̂_j + e_i)/|Z_i|)  (strict operator, ρ = 1 + βc/|Z_i|)  (eq. 38)
    z_ij ← J_ij v̂_j + (λ_i⁺ − λ_i)/β

Variants (``SubADMMOptions.variant``):

* ``"body"`` (SubADMM as the seed writes it; **the default**): body-level Jacobian splitting
  (eq. 30-31). One piece per (contact, body side) ``J_ij = ±F_i [I −[p_i]] J_b`` (an intra-tree
  body–body contact gets two stacked pieces). The subsystem matrix is ``J_Bᵀ diag(H_b) J_B`` with
  ``H_b = M_b + β Σ_i [I −[p_i]; [p_i] −[p_i]²]`` (eq. 40-41, 44): a contact adds a point mass β at
  ``p_i`` to its body. It is built by the composite-rigid-body recursion and factored by
  Featherstone's LTDL with branch-induced sparsity, in one compiled pass over all trees
  (:class:`CompiledBodySplitFactor`); :class:`BodySplitFactor` does the same with Pinocchio's CRBA
  and ``pinocchio.cholesky`` (the reference, ``body_factorization="pinocchio"``). The iteration
  uses the same structure: piece velocities from one forward pass of body velocities and the
  contact point's velocity ``±F_i (v_b + ω_b × p_i)`` per piece, the right-hand side from one
  backward pass of body wrenches (``body_iteration="bodies"``; ``"rows"`` = dense piece rows, the
  ablation). The per-tree solve and the two passes are straight-line code generated for the
  model's tree structure (:mod:`~plants.sim._tree_codegen`, ``generated_solves``). Needs
  ``problem.bodies``; a problem without it (hand-built or loaded from a file) falls back to
  ``"no_body"`` and the result says so (``solver`` = ``"subadmm[no_body]"``).
* ``"no_body"`` (prior work [34]): one piece per (contact, tree); ``A_j + β Σ J_ijᵀJ_ij`` is
  assembled from the pieces and factored by dense Cholesky per tree (compiled,
  :class:`TreeSplitFactor`; its solve generated per tree size, as SubADMM's per tree structure).
  The pieces equal the body pieces unless a contact joins two bodies of one tree, which the scenes
  never produce (pairs within one tree are not tested).
* ``"no_sub"``: plain ADMM on the whole system (eq. 28): one slack per contact and the coupled
  matrix ``A + β JᵀJ`` factored **as one matrix** by a general sparse LU (SuperLU, symmetric mode).
  Factoring it per island of coupled trees would already be a subsystem split, so we do not.

The matrices are factored once per solve and again only when β changes (adaptive penalty, eq. 43).
Residuals ``θ_p = max ‖J_ij v̂_j − z_ij‖`` and ``θ_d = max_j ‖A_j v̂_j − b_j − Σ_i J_ijᵀ λ_i‖``
(eq. 42); β₀ from the pseudo-density (§VI-D). Math and measurements: ``docs/contact-solvers.md`` §4.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from scipy.linalg import LinAlgError
from scipy.sparse.linalg import splu

from ._subadmm_kernels import (
    HAVE_NUMBA,
    body_piece_structure,
    body_pseudo_density,
    body_scatter,
    body_split_ltdl,
    body_velocity,
    cholesky_solve_trees,
    gather_piece_rows,
    group_body_arrays,
    group_rows_arrays,
    iterate_body,
    iterate_rows_cholesky,
    iterate_rows_ltdl,
    iterate_rows_sparse_lu,
    ldlt_solve_trees,
    ldlt_solve_trees_numpy,
    ltdl_solve_trees,
    piece_index,
    piece_step,
    piece_step_numpy,
    rows_scatter,
    rows_velocity,
    strict_triangles,
    tree_dual_residual,
    tree_matvec,
    tree_split_cholesky,
    whole_system_csc,
)
from ._tree_codegen import cholesky_tree_solves, ltdl_tree_solves
from .accuracy import contact_residual, metric_tolerance, natural_map_residual
from .canal import ALSolverResult, WarmStartedSolver
from .contact_laws import rigid_contact_form
from .contact_problem import (
    ContactBodies,
    ContactProblem,
    ContactSolverStatus,
    SolverPresets,
    register_contact_solver,
)

__all__ = ["SubADMMOptions", "SubADMMSolver", "SlackPieces", "slack_pieces", "pseudo_density_beta",
           "BodySplitFactor", "CompiledBodySplitFactor", "TreeSplitFactor",
           "whole_system_factor", "VARIANTS"]

VARIANTS = ("body", "no_body", "no_sub")
"""SubADMM with body splitting, without body splitting ([34]), and full-system ADMM (eq. 28)."""


@dataclass(frozen=True)
class SubADMMOptions(SolverPresets):
    """Options of :class:`SubADMMSolver` (presets: ``"default"``, ``"realtime"`` (:meth:`realtime`)).

    ADMM converges linearly; the seed runs it for a fixed budget (Table III: 100 iterations) and
    reports the accuracy reached. A solve that uses its budget returns its last iterate with
    status MAX_ITERATIONS, and the next step starts from its impulses (warm start). Measured at
    the defaults: cube-rest-3 step 0 reaches 7.8e-7 (‖λ‖/n_c ≈ 6e-4) in 100 iterations, i.e.
    about 3 digits, at the linear rate 0.93 per iteration.

    Attributes:
        variant: one of :data:`VARIANTS` (see the module docstring): ``"body"`` (SubADMM, eq. 30-31,
            40-41; default), ``"no_body"`` (subsystems without body splitting) or ``"no_sub"``
            (full-system ADMM, eq. 28).
        max_iterations: iteration budget l_max (Table III: 100).
        tol: stop when the accuracy metric of seed 000 §VII ≤ tol + rel_tol ‖λ‖/n_c.
        rel_tol: scale-aware part of the threshold (:func:`~plants.sim.accuracy.metric_tolerance`;
            default 0: ``tol`` alone, the precision the tests check; the realtime preset uses 1e-6).
        residual_tol: also stop when θ_p + θ_d ≤ residual_tol (θ_th; 0 disables).
        metric_every: evaluate the accuracy metric (the ``tol`` test, one Â⁻¹ solve) every k
            iterations and at the last one; θ_d is computed only when needed (adaptive penalty,
            ``residual_tol``, last iteration). ``residual_history`` has one entry per evaluation.
        beta: fixed initial β [kg]; None = the pseudo-density rule (:func:`pseudo_density_beta`).
        beta_rule: ``"tree"`` (default: geometric mean over the trees in contact of tree mass / its
            contact pieces) or ``"body"`` (the seed: over the bodies in contact, body mass / its
            contact pieces; needs ``problem.bodies``, else the tree rule). Both coincide for free
            bodies; on 8 A1s the tree rule (β₀ = 1.7 kg vs 0.70 kg) reached 1e-6 in 52 instead of
            131 iterations (median of 10 perturbed cases), hence the default.
        adaptive_penalty: the optional rule of eq. (43).
        gamma: γ > 1 of eq. (43) (ours: 10).
        penalty_rule: ``"seed"`` (eq. 43 on θ_p/θ_d as they are) or ``"normalized"`` (each
            residual divided by the size of its terms, as OSQP does; measured worse, docs §4.3).
        body_factorization: how ``"body"`` builds and factors eq. (40-41): ``"compiled"``
            (:class:`CompiledBodySplitFactor`: composite-rigid-body recursion of the point masses
            plus Featherstone's LTDL, one compiled pass) or ``"pinocchio"``
            (:class:`BodySplitFactor`: Pinocchio's CRBA and LDLᵀ on chunked model copies with the
            inertias modified per body; the reference). Same matrix to round-off.
        relaxation: over-relaxation α ∈ (0, 2) of the z/λ-step (``α J v̂ + (1 − α) z`` in place of
            ``J v̂``; Boyd et al. 2011 §3.4.3; not in the seed). 1 = the seed's iteration.
        theta: mid-step θ of the constraint velocity (as CANAL).
        warm_start: start from the previous solve's impulses when the contact set is the same.
        body_iteration: how ``"body"`` (compiled factorization) iterates: ``"bodies"`` (default: the
            piece velocities from one forward pass over the bodies and the right-hand side from one
            backward pass of body wrenches, eq. 30-31; :func:`~plants.sim._subadmm_kernels.body_piece_step`)
            or ``"rows"`` (each piece as a dense row block over its tree's dofs, as the other
            variants; the ablation of the body-structured iteration). Same iterates to round-off.
        blas_threads: BLAS threads during the solve.
        generated_solves: solve the per-tree systems of ``"body"`` (LTDL) and ``"no_body"`` (dense
            Cholesky) with straight-line code generated for the scene's tree structures
            (:mod:`~plants.sim._tree_codegen`; compiled once per structure and cached on disk). Same
            bits as the generic kernels (False), faster (docs §4.4). Ignored without numba.
        threads: run the islands (trees coupled through contacts) of ``"body"`` and ``"no_body"`` in
            up to this many groups on parallel threads (numba ``prange``; the seed's SubADMM is
            parallel over subsystems, §VI-VII). Islands share no contact, so each group iterates
            independently, with the same operations as the serial run (same bits). Applies with
            the generated solves (``generated_solves``, the body iteration ``"bodies"``) when the
            problem has two islands or more; otherwise serial. Default 1 (serial). ``"no_sub"``
            factors the whole system and always runs serially. The groups run on numba's thread
            pool (``NUMBA_NUM_THREADS``, default: the number of cores), which bounds the speed-up.
    """

    variant: str = "body"
    max_iterations: int = 100
    tol: float = 1e-10
    rel_tol: float = 0.0
    residual_tol: float = 0.0
    beta: float | None = None
    beta_rule: str = "tree"
    metric_every: int = 1
    adaptive_penalty: bool = False
    gamma: float = 10.0
    relaxation: float = 1.0
    penalty_rule: str = "seed"
    body_factorization: str = "compiled"
    theta: float = 0.0
    warm_start: bool = True
    blas_threads: int | None = 1
    body_iteration: str = "bodies"
    generated_solves: bool = True
    threads: int = 1

    def __post_init__(self) -> None:
        if self.variant not in VARIANTS:
            raise ValueError(f"variant must be one of {VARIANTS}, got {self.variant!r}")
        if self.beta_rule not in ("body", "tree"):
            raise ValueError(f"beta_rule must be 'body' or 'tree', got {self.beta_rule!r}")
        if int(self.max_iterations) < 1:
            raise ValueError(f"max_iterations must be >= 1, got {self.max_iterations}")
        if int(self.metric_every) < 1:
            raise ValueError(f"metric_every must be >= 1, got {self.metric_every}")
        if not (np.isfinite(self.tol) and self.tol > 0):
            raise ValueError(f"tol must be finite and > 0, got {self.tol}")
        if not self.residual_tol >= 0:
            raise ValueError(f"residual_tol must be >= 0, got {self.residual_tol}")
        if not (np.isfinite(self.rel_tol) and self.rel_tol >= 0):
            raise ValueError(f"rel_tol must be finite and >= 0, got {self.rel_tol}")
        if self.beta is not None and not (np.isfinite(self.beta) and self.beta > 0):
            raise ValueError(f"beta must be None or finite and > 0, got {self.beta}")
        if self.body_factorization not in ("compiled", "pinocchio"):
            raise ValueError(f"body_factorization must be 'compiled' or 'pinocchio', got {self.body_factorization!r}")
        if self.body_iteration not in ("bodies", "rows"):
            raise ValueError(f"body_iteration must be 'bodies' or 'rows', got {self.body_iteration!r}")
        if self.penalty_rule not in ("seed", "normalized"):
            raise ValueError(f"penalty_rule must be 'seed' or 'normalized', got {self.penalty_rule!r}")
        if not 0 < self.relaxation < 2:
            raise ValueError(f"relaxation must lie in (0, 2), got {self.relaxation}")
        if not self.gamma > 1:
            raise ValueError(f"gamma must be > 1, got {self.gamma}")
        if not 0 <= self.theta < 1:
            raise ValueError(f"theta must lie in [0, 1), got {self.theta}")
        for name in ("adaptive_penalty", "warm_start", "generated_solves"):
            if not isinstance(getattr(self, name), (bool, np.bool_)):
                raise TypeError(f"{name} must be a bool, got {getattr(self, name)!r}")
        if isinstance(self.threads, (bool, np.bool_)) or not isinstance(self.threads, (int, np.integer)):
            raise TypeError(f"threads must be an int, got {self.threads!r}")
        if self.threads < 1:
            raise ValueError(f"threads must be >= 1, got {self.threads}")

    @classmethod
    def realtime(cls, **overrides) -> "SubADMMOptions":
        """The seed's fixed budget (Table III: 100 iterations), the accuracy metric evaluated once,
        at the end (``metric_every=100``: no per-iteration Â⁻¹ solve), ``rel_tol = 1e-6``."""
        return cls(**{"max_iterations": 100, "metric_every": 100, "rel_tol": 1e-6, **overrides})


# ----------------------------------------------------------------------------- pieces
@dataclass(frozen=True)
class SlackPieces:
    """The slack pieces of a variant, sorted by contact, as compact row blocks.

    Attributes:
        contact: (n_p,) contact of each piece (non-decreasing).
        blocks: (n_p, 3, s) rows of ``J_ij`` restricted to ``cols`` (None when gathered without
            rows, ``slack_pieces(..., rows=False)``).
        cols: (n_p, s) dof of each block column, padded with the index n_v (a zero column), or None.
        count: (n_c,) ``|Z_i|``, the number of pieces of each contact.
        joint: (n_p,) body (Pinocchio joint) of each piece (``"body"`` variant), else None.
        local_point: (n_p, 3) contact point in that joint's frame (``"body"``), else None.
        side: (n_p,) 0 for side a (``J_ij = −F_i [I −[p_i]] J_b``), 1 for side b (``+``)
            (``"body"``), else None.
    """

    contact: np.ndarray
    blocks: np.ndarray
    cols: np.ndarray
    count: np.ndarray
    joint: np.ndarray | None = None
    local_point: np.ndarray | None = None
    side: np.ndarray | None = None

    def dense(self, n_v: int) -> np.ndarray:
        """(n_p, 3, n_v) full rows of the pieces (tests, references)."""
        out = np.zeros((self.blocks.shape[0], 3, n_v + 1))
        np.put_along_axis(out, np.broadcast_to(self.cols[:, None, :], self.blocks.shape), self.blocks, axis=2)
        return out[:, :, :n_v]


def _tree_cols(problem: ContactProblem, trees: np.ndarray, width: int) -> np.ndarray:
    """(len(trees), width) dofs of each tree (−1 = none), padded with n_v."""
    ts = problem.tree_starts
    sizes = np.diff(ts)
    has = trees >= 0
    start = np.where(has, ts[np.maximum(trees, 0)], 0)
    size = np.where(has, sizes[np.maximum(trees, 0)], 0)
    k = np.arange(width)
    return np.where(k[None, :] < size[:, None], start[:, None] + k[None, :], problem.n_v)


def _gather(J: np.ndarray, rows: np.ndarray, cols: np.ndarray, n_v: int) -> np.ndarray:
    """(n_p, 3, s) blocks of J (3 n_c, n_v) for contacts ``rows`` at columns ``cols``."""
    r = 3 * rows[:, None, None] + np.arange(3)[None, :, None]
    c = cols[:, None, :]
    return np.where(c < n_v, J[r, np.minimum(c, n_v - 1)], 0.0)


def _piece_rows(problem, J, ci, tree_a, tree_b, width):
    """(blocks, cols) of pieces on the dofs of trees ``tree_a`` ∪ ``tree_b`` (compiled gather with
    numba, else :func:`_tree_cols` / :func:`_gather`)."""
    n_v = problem.n_v
    if not HAVE_NUMBA:
        if (tree_b < 0).all():
            cols = _tree_cols(problem, tree_a, width)
        else:
            cols = np.concatenate([_tree_cols(problem, tree_a, width),
                                   _tree_cols(problem, np.where(tree_b != tree_a, tree_b, -1), width)], axis=1)
            cols = np.sort(cols, axis=1)[:, :width]  # the padding (index n_v) last
        return _gather(J, ci, cols, n_v), cols
    blocks, cols = np.empty((ci.size, 3, width)), np.empty((ci.size, width), dtype=np.int64)
    gather_piece_rows(np.ascontiguousarray(J, float), np.ascontiguousarray(ci, np.int64),
                      np.ascontiguousarray(tree_a, np.int64), np.ascontiguousarray(tree_b, np.int64),
                      np.asarray(problem.tree_starts, np.int64), width, blocks, cols)
    return blocks, cols


_LIMITS_WARNED = [False]


def _warn_limits_once() -> None:
    """Warn (once per process) that a step with joint limits runs without body splitting."""
    if not _LIMITS_WARNED[0]:
        import warnings

        _LIMITS_WARNED[0] = True
        warnings.warn("subadmm: steps with joint-space constraints that couple two branches of a tree "
                      "(e.g. a mimic coupler between fingers), or with body_factorization='pinocchio', run "
                      "the 'no_body' variant (their rows leave the branch-induced pattern of the body-split "
                      "matrix)", RuntimeWarning, stacklevel=3)


def slack_pieces(problem: ContactProblem, variant: str, J: np.ndarray | None = None,
                 rows: bool = True) -> SlackPieces:
    """The pieces of ``variant`` (one of :data:`VARIANTS`) for ``problem``.

    * ``"body"``: one per (contact, non-world body side), ``J_ij = ±F_i [I −[p_i]] J_b`` (− on side
      a) from ``problem.bodies``; the pieces of a contact sum to ``J_i``.
    * ``"no_body"``: one per (contact, tree touched): the tree's columns of ``J_i`` (a contact within
      one tree is one piece).
    * ``"no_sub"``: one per contact: ``J_i`` on the columns of both trees.

    Args:
        problem: the step.
        variant: see above.
        J: (3 n_c, n_v) rows to split (default ``problem.J``; ``"body"`` takes the pieces of
            contacts within one tree from ``problem.bodies``).
        rows: also gather the pieces' row blocks (``blocks``, ``cols``). ``False`` only for
            ``"body"``: the body-structured iteration needs the bodies and contact points, never the
            rows ``J_ij`` (eq. 30-31); ``blocks`` and ``cols`` are then None.
    """
    if variant not in VARIANTS:
        raise ValueError(f"variant must be one of {VARIANTS}, got {variant!r}")
    if not rows and variant != "body":
        raise ValueError(f"rows=False needs variant 'body', got {variant!r}")
    J = problem.J if J is None else J
    n_c = problem.n_c
    ct = problem.contact_trees
    if variant == "no_sub":
        ci = np.arange(n_c)
        sizes = np.append(np.diff(problem.tree_starts), 0)  # index −1: no tree
        width = max(int((sizes[ct[:, 0]] + np.where(ct[:, 1] != ct[:, 0], sizes[ct[:, 1]], 0)).max(initial=0)), 1)
        blocks, cols = _piece_rows(problem, J, ci, ct[:, 0], ct[:, 1], width)
        return SlackPieces(ci, blocks, cols, np.ones(n_c))
    body_ct = None
    if variant == "body" and problem.bodies is not None:
        # a piece per body side: the sides' trees from the bodies, since contact_trees lists a
        # self-contact's tree once (its two bodies are two pieces here, eq. 30-31 footnote)
        n_geo = problem.n_geometric
        body_ct = _body_side_trees(problem)
        ci, tj, side, count = _piece_index(body_ct, True)
        if problem.n_limits:
            # joint-space rows (limits, couplers, ...) are no forces at body points: one piece
            # per (row, tree touched), as without body splitting, after the geometric contacts
            ci_l, tj_l, side_l, count_l = _piece_index(ct[n_geo:], False)
            ci, tj = np.concatenate([ci, ci_l + n_geo]), np.concatenate([tj, tj_l])
            side, count = np.concatenate([side, side_l]), np.concatenate([count, count_l])
    else:
        ci, tj, side, count = _piece_index(ct, variant == "body")
    if rows:
        s_max = int(np.diff(problem.tree_starts).max())
        blocks, cols = _piece_rows(problem, J, ci, tj, np.full_like(tj, -1), s_max)
    else:
        blocks = cols = None
    if variant == "no_body":
        return SlackPieces(ci, blocks, cols, count)
    b = problem.bodies
    if b is None:
        raise ValueError("variant 'body' needs problem.bodies (the stepper attaches them)")
    geo = ci < problem.n_geometric
    joint = np.zeros(ci.size, dtype=np.int64)  # 0 on the pieces of joint-space rows
    joint[geo] = b.joints[ci[geo], side[geo]]
    if (joint[geo] <= 0).any():
        raise ValueError("problem.bodies.joints disagree with problem.contact_trees (a tree side on the world)")
    local = np.zeros((ci.size, 3))
    local[geo] = b.local_points[ci[geo], side[geo]]
    # A piece on one side of a contact between two trees (or a tree and the world) is the tree's
    # part of J_i. Only a contact between two bodies of one tree is split differently: its two
    # stacked pieces ±F_i [I −[p_i]] J_b come from the body Jacobians (eq. 30-31, footnote).
    same = ()
    if rows and geo.any():
        sides = body_ct[ci[geo]]
        same = np.flatnonzero(geo)[sides[:, 0] == sides[:, 1]]
    if len(same):
        sign = np.where(side[same] == 0, -1.0, 1.0)
        cs = cols[same]
        Jw = np.concatenate([b.world_jacobian, np.zeros((6, 1))], axis=1)[:, cs]  # (6, n_s, s)
        support = np.take_along_axis(
            np.concatenate([b.joint_support[joint[same]], np.zeros((same.size, 1))], axis=1), cs, 1)
        F = b.frames[ci[same]]
        C = np.cross(b.points[ci[same]][:, None, :], F)  # rows p × f: F (v_o − p × ω) = F v_o + (p × F) ω
        blocks[same] = (F @ Jw[:3].transpose(1, 0, 2) + C @ Jw[3:].transpose(1, 0, 2)) * (
            sign[:, None] * support)[:, None, :]
    return SlackPieces(ci, blocks, cols, count, joint, local, side)


def _body_side_trees(problem: ContactProblem) -> np.ndarray:
    """(n_geometric, 2) tree of each side's body (−1: the world) from ``problem.bodies``: as
    ``contact_trees``, except that a contact between two bodies of one tree has that tree on both
    sides (``contact_trees`` lists it once)."""
    b = problem.bodies
    first_dof = np.argmax(b.joint_support, axis=1)  # a dof moving each joint (joint 0: none)
    tree = np.searchsorted(problem.tree_starts, first_dof, side="right") - 1
    tree[~b.joint_support.any(axis=1)] = -1
    return np.ascontiguousarray(np.where(b.joints > 0, tree[b.joints], -1), dtype=np.int64)


def _piece_index(ct: np.ndarray, split_same_tree: bool) -> tuple[np.ndarray, ...]:
    """(contact, tree, side, count) of the pieces of contacts with trees ``ct`` (n, 2): compiled
    (:func:`~plants.sim._subadmm_kernels.piece_index`), or the numpy reference without numba."""
    if HAVE_NUMBA:  # one compiled pass; the numpy below is its reference
        return piece_index(np.ascontiguousarray(ct, np.int64), split_same_tree)
    # side b of a contact within one tree is a piece of its own only with body splitting
    sides = [np.flatnonzero(ct[:, 0] >= 0),
             np.flatnonzero((ct[:, 1] >= 0) & ((ct[:, 1] != ct[:, 0]) | split_same_tree))]
    ci = np.concatenate(sides)
    tj = np.concatenate([ct[sides[0], 0], ct[sides[1], 1]])
    order = np.argsort(ci, kind="stable")
    ci, tj = ci[order], tj[order]
    side = np.concatenate([np.zeros(sides[0].size, int), np.ones(sides[1].size, int)])[order]
    count = np.maximum(np.bincount(ci, minlength=ct.shape[0]), 1).astype(float)
    return ci, tj, side, count


def pseudo_density_beta(problem: ContactProblem, rule: str = "body", body_mass: np.ndarray | None = None) -> float:
    """β₀ of §VI-D: the geometric mean of "pseudo-densities" mass / number of contact pieces.

    ``rule="body"`` (the seed): over the bodies in contact, body mass from the Pinocchio model
    (needs ``problem.bodies``; without it the tree rule is used). ``rule="tree"``: over the trees
    in contact, tree mass = the largest diagonal entry of its block of ``A`` (the total mass for a
    free body or a floating base with world-frame linear velocity first). ``body_mass``
    (n_joints,): the model's body masses, if already known (else read from the model).
    """
    if rule not in ("body", "tree"):
        raise ValueError(f"rule must be 'body' or 'tree', got {rule!r}")
    ct = problem.contact_trees
    if problem.n_c == 0:
        return 1.0
    b = problem.bodies
    if rule == "body" and b is not None:
        if HAVE_NUMBA and body_mass is not None:  # one compiled pass (the numpy below is its reference)
            beta = body_pseudo_density(np.ascontiguousarray(b.joints, np.int64), body_mass)
            if beta > 0:
                return float(beta)
        else:
            joints, counts = np.unique(b.joints[b.joints > 0], return_counts=True)
            if body_mass is None:
                inertias = b.model.inertias
                mass = np.array([inertias[int(j)].mass for j in joints])
            else:
                mass = body_mass[joints]
            has = mass > 0
            if has.any():
                return float(np.exp(np.mean(np.log(mass[has] / counts[has]))))
    trees = ct[ct >= 0]
    counts = np.bincount(trees, minlength=problem.n_trees)
    mass = np.maximum.reduceat(np.diag(problem.A), problem.tree_starts[:-1])
    has = counts > 0
    return float(np.exp(np.mean(np.log(mass[has] / counts[has]))))


# ----------------------------------------------------------------------------- factorizations
def _point_mass_parameters(local: np.ndarray, weight: float) -> np.ndarray:
    """(n, 10) Pinocchio dynamic parameters ``(m, m c, I_xx, I_xy, I_yy, I_xz, I_yz, I_zz)`` (inertia
    about the joint origin) of point masses ``weight`` at the points ``local`` (n, 3)."""
    x, y, z = local[:, 0], local[:, 1], local[:, 2]
    one = np.ones_like(x)
    inertia = [y * y + z * z, -x * y, x * x + z * z, -x * z, -y * z, x * x + y * y]
    return weight * np.stack([one, x, y, z, *inertia], axis=1)


CHUNK_DOFS = 96
"""Largest number of dofs of one Pinocchio sub-model of :class:`BodySplitFactor` (whole trees are
grouped up to it). Pinocchio allocates n_v³-sized derivative tensors per ``Data`` (3.7 GB for the
486-dof 27-A1 model), so the factorization must not create a ``Data`` of the whole model; chunks of
≤ 96 dofs need a few MB each and keep the number of CRBA/LDLᵀ calls small."""


class _ChunkModel:
    """Some whole trees of a multi-tree Pinocchio model as a model of their own."""

    def __init__(self, model, joints: list[int]):
        import pinocchio as pin

        self.model = pin.Model()
        local = {0: 0}
        for j in joints:  # parents precede children in Pinocchio's joint order
            jid = self.model.addJoint(local[int(model.parents[j])], model.joints[j], model.jointPlacements[j],
                                      model.names[j])
            self.model.appendBodyToJoint(jid, model.inertias[j], pin.SE3.Identity())
            local[j] = jid
        self.local = local
        self.data = self.model.createData()
        self.q_index = np.concatenate([np.arange(model.joints[j].idx_q, model.joints[j].idx_q + model.joints[j].nq)
                                       for j in joints])
        self.v_start = int(model.joints[joints[0]].idx_v)
        if any(model.joints[j].idx_v - self.v_start != self.model.joints[local[j]].idx_v for j in joints):
            raise ValueError("a chunk's dofs must be contiguous and in joint order")
        self.base = [self.model.inertias[k].copy() for k in range(self.model.njoints)]
        self.base_parameters = np.array([I.toDynamicParameters() for I in self.base])
        self.zero = None  # a copy with zero inertias (the additive form), made on first use


class BodySplitFactor:
    """The body-split subsystem matrix ``Â + β Σ_ij J_ijᵀJ_ij = J_Bᵀ diag(H_b) J_B`` (eq. 40-41)
    built by CRBA and factored by Featherstone's branch-sparse LDLᵀ (Pinocchio C++), per tree.

    ``H_b`` is a spatial inertia (App. A): the body's own plus a point mass β at each of its contact
    points, so CRBA runs unchanged on copies of the model (whole trees grouped in chunks of
    ≤ :data:`CHUNK_DOFS` dofs) whose inertias are modified for the bodies in contact (and restored
    afterwards). The problem's ``Â = A/(1−θ)`` with
    ``A = M(mass_q) + diag(mass_diagonal)``; when ``mass_q`` is the configuration of the contacts
    (the default stepper) the diagonal is added after CRBA, otherwise CRBA runs with the point
    masses alone and the chunk's block of ``A`` is added. The solve (:func:`ldlt_solve_trees`) uses
    the factors of all chunks in one compiled pass.

    Args:
        model: the Pinocchio model of ``ContactBodies`` (not modified; each tree is copied).
        tree_starts: (n_trees + 1,) dof offsets of the trees.
    """

    def __init__(self, model, tree_starts: np.ndarray):
        self.source = model
        self.tree_starts = np.asarray(tree_starts, dtype=np.int64)
        parents = np.asarray(model.parents)
        root = np.zeros(model.njoints, dtype=np.int64)
        for j in range(1, model.njoints):  # once per model
            root[j] = j if parents[j] == 0 else root[parents[j]]
        start_of_root = {int(r): int(model.joints[int(r)].idx_v) for r in np.unique(root[1:])}
        tree_of_start = {int(t): k for k, t in enumerate(self.tree_starts[:-1])}
        members: dict[int, list[int]] = {}
        for j in range(1, model.njoints):
            members.setdefault(tree_of_start[start_of_root[int(root[j])]], []).append(j)
        chunks: list[list[int]] = [[]]  # consecutive trees, ≤ CHUNK_DOFS dofs per chunk (or one tree)
        starts = [0]
        for t in range(len(self.tree_starts) - 1):
            if chunks[-1] and self.tree_starts[t + 1] - starts[-1] > CHUNK_DOFS:
                chunks.append([])
                starts.append(int(self.tree_starts[t]))
            chunks[-1].extend(members[t])
        self.chunks = [_ChunkModel(model, sorted(js)) for js in chunks]
        self.chunk_starts = np.array(starts + [int(self.tree_starts[-1])], dtype=np.int64)
        self.joint_chunk = np.full(model.njoints, -1, dtype=np.int64)
        self.joint_local = np.zeros(model.njoints, dtype=np.int64)
        for c, cm in enumerate(self.chunks):
            for j, k in cm.local.items():
                if j:
                    self.joint_chunk[j], self.joint_local[j] = c, k
        sizes = np.diff(self.chunk_starts)
        self.U = np.zeros((sizes.size, int(sizes.max()), int(sizes.max())))
        self.D = np.ones(int(self.tree_starts[-1]))
        self.D_inv = self.D.copy()
        self.nv_subtree = np.concatenate([np.asarray(cm.data.nvSubtree_fromRow, dtype=np.int64) for cm in self.chunks])
        self._scale = 1.0

    def factor(self, bodies: ContactBodies, joint: np.ndarray, local: np.ndarray, beta: float, theta: float,
               A: np.ndarray) -> "BodySplitFactor":
        """Factor ``(1 − θ)(Â + β Σ J_ijᵀJ_ij)`` for pieces on bodies ``joint`` (n_p,) at points
        ``local`` (n_p, 3) in the joints' frames. Returns self (``solve`` uses the factor)."""
        import pinocchio as pin

        literal = bodies.mass_q is bodies.q or np.array_equal(bodies.mass_q, bodies.q)
        order = np.argsort(joint, kind="stable")
        js = joint[order]
        first = np.flatnonzero(np.r_[True, js[1:] != js[:-1]]) if js.size else js
        uj = js[first]
        params = np.add.reduceat(_point_mass_parameters(local[order], beta * (1.0 - theta)), first, axis=0) \
            if js.size else np.zeros((0, 10))
        chunk_of, local_of = self.joint_chunk[uj], self.joint_local[uj]
        bounds = np.searchsorted(chunk_of, np.arange(len(self.chunks) + 1))  # uj sorted => chunks sorted
        from_params, zero = pin.Inertia.FromDynamicParameters, pin.Inertia.Zero()
        q = bodies.q
        has_diagonal = bool(bodies.mass_diagonal.any())
        for t, tm in enumerate(self.chunks):  # loop over chunks of trees (Pinocchio calls per chunk)
            if literal:
                model, data, base = tm.model, tm.data, tm.base
            else:
                if tm.zero is None:
                    zm = tm.model.copy()
                    for k in range(zm.njoints):
                        zm.inertias[k] = zero
                    tm.zero = (zm, zm.createData())
                model, data = tm.zero
            inertias = model.inertias
            mine = range(bounds[t], bounds[t + 1])
            for k in mine:
                lk = int(local_of[k])
                inertias[lk] = from_params(params[k] + tm.base_parameters[lk] if literal else params[k])
            pin.crba(model, data, q[tm.q_index])  # upper triangle of data.M
            for k in mine:
                lk = int(local_of[k])
                inertias[lk] = base[lk] if literal else zero
            sl = slice(self.chunk_starts[t], self.chunk_starts[t + 1])
            if not literal:
                data.M[:] += A[sl, sl]
            elif has_diagonal:
                M = data.M
                M[np.diag_indices_from(M)] += bodies.mass_diagonal[sl]
            pin.cholesky.decompose(model, data)
            n = sl.stop - sl.start
            self.U[t, :n, :n] = data.U
            self.D[sl] = data.D
        if not np.all(np.isfinite(self.D)) or (self.D <= 0).any():
            raise LinAlgError("the body-split subsystem matrix is not positive definite")
        self.D_inv = 1.0 / self.D
        self._scale = 1.0 - theta
        return self

    def matrix(self) -> np.ndarray:
        """(n_v, n_v) the factored matrix ``Â + β Σ J_ijᵀJ_ij`` = ``U D Uᵀ / (1 − θ)`` per tree
        (dense; for tests and inspection)."""
        n_v = int(self.tree_starts[-1])
        K = np.zeros((n_v, n_v))
        for t in range(len(self.chunks)):
            sl = slice(self.chunk_starts[t], self.chunk_starts[t + 1])
            n = sl.stop - sl.start
            U = self.U[t, :n, :n]
            K[sl, sl] = U @ np.diag(self.D[sl]) @ U.T / self._scale
        return K

    def solve(self, rhs: np.ndarray) -> np.ndarray:
        """``(Â + β Σ J_ijᵀJ_ij)⁻¹ rhs`` for rhs (n_v,)."""
        out = np.empty_like(rhs)
        (ldlt_solve_trees if HAVE_NUMBA else ldlt_solve_trees_numpy)(
            self.U, self.D_inv, self.nv_subtree, self.chunk_starts,
            rhs if self._scale == 1.0 else self._scale * rhs, out)
        return out


class CompiledBodySplitFactor:
    """The body-split subsystem matrix of eq. (40-41), built and factored in one compiled pass
    (:func:`~plants.sim._subadmm_kernels.body_split_ltdl`): ``Â`` plus the composite-rigid-body
    recursion of the point-mass inertias ``H_b − M_b = β Σ_i [I −[p_i]; [p_i] −[p_i]²]`` (CRBA is
    linear in the inertias, and ``Â`` already holds the ``M_b`` part), then Featherstone's LTDL with
    branch-induced sparsity. Same matrix as :class:`BodySplitFactor` (Pinocchio's CRBA and
    LDLᵀ, the tested reference) without a Python call per body or per tree.

    Args:
        model: the Pinocchio model of ``ContactBodies`` (read once: parents, dof ranges).
        tree_starts: (n_trees + 1,) dof offsets of the trees.
        generated: solve with straight-line code generated for the trees' structures
            (:func:`~plants.sim._tree_codegen.ltdl_tree_solves`; ``self.generated``, None if not
            generated), else with the generic :func:`~plants.sim._subadmm_kernels.ltdl_solve_trees`.
    """

    def __init__(self, model, tree_starts: np.ndarray, generated: bool = True):
        self.source = model
        self.tree_starts = np.asarray(tree_starts, dtype=np.int64)
        nj = model.njoints
        self.joint_parent = np.array([int(model.parents[j]) for j in range(nj)], dtype=np.int64)
        self.joint_v = np.array([model.joints[j].idx_v if j else -1 for j in range(nj)], dtype=np.int64)
        self.joint_nv = np.array([model.joints[j].nv if j else 0 for j in range(nj)], dtype=np.int64)
        self.joint_tree = np.searchsorted(self.tree_starts, self.joint_v, side="right") - 1
        n_v = int(self.tree_starts[-1])
        self.dof_parent = np.full(n_v, -1, dtype=np.int64)
        for j in range(1, nj):  # once per model
            v0, p = self.joint_v[j], self.joint_parent[j]
            self.dof_parent[v0] = self.joint_v[p] + self.joint_nv[p] - 1 if p > 0 else -1
            self.dof_parent[v0 + 1 : v0 + self.joint_nv[j]] = np.arange(v0, v0 + self.joint_nv[j] - 1)
        sizes = np.diff(self.tree_starts)
        s = int(sizes.max())
        self.related = np.zeros((sizes.size, s, s), dtype=bool)
        for t, st in enumerate(self.tree_starts[:-1]):  # ancestor-or-self pairs (once per model)
            for k in range(sizes[t]):
                a = st + k
                while a >= 0:
                    self.related[t, k, a - st] = self.related[t, a - st, k] = True
                    a = self.dof_parent[a]
        self.K = np.zeros((sizes.size, s, s))
        self.generate = bool(generated)
        self.generated = (ltdl_tree_solves(self.dof_parent, self.tree_starts,
                                           (self.joint_parent, self.joint_v, self.joint_nv)) if generated else None)

    def factor(self, bodies: ContactBodies, joint: np.ndarray, points: np.ndarray, beta: float, theta: float,
               A: np.ndarray) -> "CompiledBodySplitFactor":
        """Factor ``Â + β Σ J_ijᵀJ_ij`` for pieces on bodies ``joint`` (n_p,) at world ``points``
        (n_p, 3). Returns self. ValueError if ``A`` is not branch-sparse (not ``M + diag``)."""
        status = body_split_ltdl(A, 1.0 / (1.0 - theta), np.ascontiguousarray(bodies.world_jacobian),
                                 np.ascontiguousarray(joint, np.int64), np.ascontiguousarray(points, float),
                                 float(beta),
                                 self.joint_parent, self.joint_v, self.joint_nv, self.joint_tree, self.tree_starts,
                                 self.dof_parent, self.related, self.K)
        if status == 2:
            raise ValueError("A has entries outside the branch-induced pattern of the model's mass matrix")
        if status == 1:
            raise LinAlgError("the body-split subsystem matrix is not positive definite")
        return self

    def matrix(self) -> np.ndarray:
        """(n_v, n_v) the factored matrix ``Lᵀ D L`` per tree (dense; tests and inspection)."""
        n_v = int(self.tree_starts[-1])
        out = np.zeros((n_v, n_v))
        for t in range(self.tree_starts.size - 1):
            st, n = self.tree_starts[t], self.tree_starts[t + 1] - self.tree_starts[t]
            Kt, rel = self.K[t, :n, :n], self.related[t, :n, :n]
            L = np.where(rel, np.tril(Kt, -1), 0.0) + np.eye(n)
            out[st : st + n, st : st + n] = L.T @ np.diag(np.diag(Kt)) @ L
        return out

    def solve(self, rhs: np.ndarray) -> np.ndarray:
        """``(Â + β Σ J_ijᵀJ_ij)⁻¹ rhs`` for rhs (n_v,)."""
        out = np.empty_like(rhs)
        if self.generated is not None:
            return self.generated.solve(self.K, self.tree_starts, rhs, out)
        ltdl_solve_trees(self.K, self.dof_parent, self.tree_starts, rhs, out)
        return out


def _select(pieces: SlackPieces, mask: np.ndarray) -> SlackPieces:
    """The pieces where ``mask`` (their row blocks only)."""
    return SlackPieces(pieces.contact[mask], pieces.blocks[mask], pieces.cols[mask], pieces.count)


def _assembled_matrix(A: np.ndarray, pieces: SlackPieces, beta: float) -> np.ndarray:
    """Dense ``A + β Σ_p J_pᵀ J_p`` from the compact blocks (reference for tests)."""
    n_v = A.shape[0]
    B = np.einsum("pks,pkt->pst", pieces.blocks, pieces.blocks)
    cols = pieces.cols
    flat = (cols[:, :, None] * (n_v + 1) + cols[:, None, :]).reshape(-1)
    JtJ = np.bincount(flat, weights=B.reshape(-1), minlength=(n_v + 1) ** 2).reshape(n_v + 1, n_v + 1)
    return A + beta * JtJ[:n_v, :n_v]


class TreeSplitFactor:
    """"No Body" ([34]): per tree, ``A_j + β Σ_i J_ijᵀJ_ij`` assembled from the pieces (one per
    contact and tree) and factored by dense Cholesky.

    ``compiled=True`` (default with numba) builds and factors all trees in one compiled pass
    (:func:`~plants.sim._subadmm_kernels.tree_split_cholesky`), the counterpart of
    :class:`CompiledBodySplitFactor` for Table III; ``False`` is the numpy reference (einsum,
    ``bincount`` and LAPACK Cholesky batched over trees of one size, explicit inverses).

    Args:
        A: (n_v, n_v) block diagonal over ``tree_starts``; pieces: per-tree pieces (``"no_body"``);
        beta: penalty; compiled: see above.
        generated: with ``compiled``, solve with straight-line code generated for the tree sizes
            (:func:`~plants.sim._tree_codegen.cholesky_tree_solves`; ``self.generated``), else with
            the generic :func:`~plants.sim._subadmm_kernels.cholesky_solve_trees`.
    """

    def __init__(self, A: np.ndarray, pieces: SlackPieces, tree_starts: np.ndarray, beta: float,
                 compiled: bool = HAVE_NUMBA, generated: bool = True):
        ts = np.asarray(tree_starts, dtype=np.int64)
        self.tree_starts = ts
        sizes = np.diff(ts)
        tree = np.searchsorted(ts, pieces.cols[:, 0], side="right") - 1  # a piece's first column is its tree's
        self.compiled = compiled
        self.generated = cholesky_tree_solves(ts) if compiled and generated else None
        if compiled:
            s = int(sizes.max())
            self.L = np.zeros((sizes.size, s, s))
            status = tree_split_cholesky(A, np.ascontiguousarray(pieces.blocks),
                                         np.ascontiguousarray(pieces.cols, np.int64), tree.astype(np.int64), ts,
                                         float(beta), self.L)
            if status:
                raise LinAlgError("the subsystem matrix is not positive definite")
            return
        self.groups = []
        for size in np.unique(sizes):  # loop over tree sizes (one for robots of one kind)
            trees = np.flatnonzero(sizes == size)
            idx = ts[trees][:, None] + np.arange(size)[None, :]
            blocks = A[idx[:, :, None], idx[:, None, :]]
            pos = np.full(sizes.size, -1)
            pos[trees] = np.arange(trees.size)
            mine = np.flatnonzero(pos[tree] >= 0)
            if mine.size:
                Jl = pieces.blocks[mine, :, :size]
                B = beta * np.einsum("pks,pkt->pst", Jl, Jl)
                flat = (pos[tree[mine]][:, None] * (size * size) + np.arange(size * size)[None, :]).reshape(-1)
                blocks = blocks + np.bincount(flat, weights=B.reshape(-1), minlength=trees.size * size * size
                                              ).reshape(trees.size, size, size)
            L = np.linalg.cholesky(blocks)  # LinAlgError if not SPD
            Linv = np.linalg.inv(L)
            inverse = np.ascontiguousarray(np.swapaxes(Linv, 1, 2) @ Linv)
            self.groups.append((np.ascontiguousarray(idx, np.int64), inverse))

    def solve(self, rhs: np.ndarray) -> np.ndarray:
        """``(A + β Σ J_pᵀJ_p)⁻¹ rhs`` for rhs (n_v,)."""
        out = np.empty_like(rhs)
        if self.generated is not None:
            return self.generated.solve(self.L, self.tree_starts, rhs, out)
        if self.compiled:
            cholesky_solve_trees(self.L, self.tree_starts, rhs, out)
            return out
        for idx, inv in self.groups:
            out[idx] = np.einsum("tij,tj->ti", inv, rhs[idx])
        return out


_PATTERN_CACHE: dict[tuple, tuple[np.ndarray, np.ndarray]] = {}


def _block_pattern(tree_starts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(rows, cols) of the nonzeros of a matrix block diagonal over ``tree_starts`` (cached)."""
    key = tuple(int(t) for t in tree_starts)
    if key not in _PATTERN_CACHE:
        tree_of = np.repeat(np.arange(len(key) - 1), np.diff(tree_starts))
        _PATTERN_CACHE.clear()  # one scene at a time
        _PATTERN_CACHE[key] = np.nonzero(tree_of[:, None] == tree_of[None, :])
    return _PATTERN_CACHE[key]


def whole_system_factor(A: np.ndarray, pieces: SlackPieces, tree_starts: np.ndarray, beta: float,
                        factors: bool = False, compiled: bool = HAVE_NUMBA):
    """"No Sub" (eq. 28): the whole sparse ``A + β JᵀJ``, no split, factored by SuperLU in symmetric
    mode (minimum-degree ordering of the symmetric pattern, no pivoting: an LDLᵀ-like sparse
    factorization). Returns its ``solve`` (``factors=True``: the ``SuperLU`` object, whose ``L``,
    ``U``, ``perm_r``, ``perm_c`` the compiled iteration solves with). ``compiled``: build the CSC
    matrix in one compiled pass (:func:`~plants.sim._subadmm_kernels.whole_system_csc`; default
    with numba), else with numpy and ``scipy.sparse`` (the reference)."""
    n_v = A.shape[0]
    cols = pieces.cols
    if compiled:  # one compiled pass, as the SubADMM and No Body builds
        indptr, indices, data = whole_system_csc(np.ascontiguousarray(A, float), np.asarray(tree_starts, np.int64),
                                                 np.ascontiguousarray(pieces.blocks),
                                                 np.ascontiguousarray(cols, np.int64), float(beta))
        K = sp.csc_matrix((data, indices, indptr), shape=(n_v, n_v))
    else:  # the numpy / scipy.sparse reference (duplicates summed by scipy)
        B = beta * np.einsum("pks,pkt->pst", pieces.blocks, pieces.blocks)
        r = np.broadcast_to(cols[:, :, None], B.shape).reshape(-1)
        c = np.broadcast_to(cols[:, None, :], B.shape).reshape(-1)
        keep = (r < n_v) & (c < n_v)
        ra, ca = _block_pattern(tree_starts)
        K = sp.csc_matrix((np.concatenate([A[ra, ca], B.reshape(-1)[keep]]),
                           (np.concatenate([ra, r[keep]]), np.concatenate([ca, c[keep]]))), shape=(n_v, n_v))
    try:
        lu = splu(K, permc_spec="MMD_AT_PLUS_A", diag_pivot_thresh=0.0, options={"SymmetricMode": True})
    except RuntimeError as err:  # singular
        raise LinAlgError(str(err)) from err
    return lu if factors else lu.solve


# ----------------------------------------------------------------------------- the solver
def _initial_metric(form, lam: np.ndarray) -> float:
    """The accuracy metric of the starting impulses (no Â⁻¹ solve when they are zero)."""
    if form.n_c == 0:
        return 0.0
    if lam.any():
        return contact_residual(form, lam.reshape(-1)).residual
    y = (form.J @ form.v_free).reshape(form.n_c, 3) + form.e
    return float(np.linalg.norm(natural_map_residual(lam, y, form.mu, form.compliance)) / form.n_c)


class _SparseLU:
    """SuperLU's factors as CSC arrays for :func:`~plants.sim._subadmm_kernels.iterate_rows_sparse_lu`."""

    def __init__(self, lu):
        self.solve = lu.solve
        L, U = lu.L, lu.U
        self.arrays = (*strict_triangles(L.indptr, L.indices, L.data, U.indptr, U.indices, U.data),
                       np.ascontiguousarray(lu.perm_r, np.int64), np.ascontiguousarray(lu.perm_c, np.int64),
                       np.empty(lu.shape[0]))


_EMPTY_W = np.zeros((0, 3))


def _body_structure(problem, pieces, f):
    """(Fp, piece joints, active joints, S, V, W) of the body-structured iteration
    (:func:`~plants.sim._subadmm_kernels.body_piece_structure`)."""
    bodies = problem.bodies
    pj = np.ascontiguousarray(pieces.joint, np.int64)
    Fp = np.empty((pj.size, 4, 3))
    active = body_piece_structure(np.ascontiguousarray(bodies.frames, float), np.ascontiguousarray(bodies.points, float),
                                  np.ascontiguousarray(pieces.contact, np.int64),
                                  np.ascontiguousarray(pieces.side, np.int64), pj, f.joint_parent, Fp,
                                  np.zeros(f.joint_parent.size, dtype=np.bool_))
    S = np.ascontiguousarray(bodies.world_jacobian.T)
    return Fp, pj, active, S, np.zeros((f.joint_parent.size, 6)), np.zeros((f.joint_parent.size, 6))


class _GroupRun:
    """The compiled loop of a split variant run on groups of islands in parallel
    (``SubADMMOptions.threads``). One compiled pass
    (:func:`~plants.sim._subadmm_kernels.group_body_arrays` / ``group_rows_arrays``) assigns whole
    islands (trees coupled through contacts) to groups, lays trees, contacts, pieces and dofs out
    group after group and gathers the static arrays (factor blocks, pieces, bias, …) in that order,
    with dofs, joints and contacts renumbered from 0 in each group. The generated driver
    (``iterate_body_passes_groups`` / ``iterate_rows_groups``) copies the iteration state in and out
    around each group's serial loop, one group per thread."""

    def __init__(self, driver, n_used: int, ptrs: tuple, arrays: tuple):
        self.driver, self.ptrs, self.arrays, self.dmax = driver, ptrs, arrays, np.zeros(n_used)

    def __call__(self, k, beta, rho, v, lam, z, rhs, alpha) -> float:
        self.driver(k, *self.ptrs, *self.arrays, v, lam, z, rhs, rho, float(beta), float(alpha), self.dmax)
        return float(self.dmax.max())

    @classmethod
    def body(cls, problem, factor, body_arrays, arrays, n_groups) -> "_GroupRun | None":
        """Groups of the body iteration with generated passes (``factor.generated.tree_joint0`` set);
        None when the problem has a single island."""
        Fp, pj, active, S, V, W = body_arrays
        Jp, cols, ci, nz, v, lam, lam_prev, e, mu, b, rhs, alpha, z = arrays
        g = factor.generated
        n_used, ptrs, values = group_body_arrays(
            int(n_groups), factor.tree_starts, np.ascontiguousarray(problem.contact_trees, np.int64), ci,
            np.asarray(nz, float), e, np.ascontiguousarray(mu, float), b, factor.K, g.tree_group, Fp, pj, S,
            factor.joint_tree, g.tree_joint0)
        return cls(g.module.iterate_body_passes_groups, n_used, ptrs, values) if n_used > 1 else None

    @classmethod
    def rows(cls, problem, factor, arrays, n_groups) -> "_GroupRun | None":
        """Groups of No Body's row iteration with generated Cholesky solves; None for a single island."""
        Jp, cols, ci, nz, v, lam, lam_prev, e, mu, b, rhs, alpha, z = arrays
        g = factor.generated
        n_used, ptrs, values = group_rows_arrays(
            int(n_groups), factor.tree_starts, np.ascontiguousarray(problem.contact_trees, np.int64), ci,
            np.asarray(nz, float), e, np.ascontiguousarray(mu, float), b, factor.L, g.tree_group, Jp, cols)
        return cls(g.module.iterate_rows_groups, n_used, ptrs, values) if n_used > 1 else None


class _Iteration:
    """The iteration of a variant on the arrays ``(Jp, cols, ci, nz, v, lam, lam_prev, e, mu, b, rhs, alpha,
    z)`` (``Jp``, ``cols`` None for the body-structured iteration):

    * ``run(k, beta, rho)``: k iterations (v-step eq. 34, z/λ-step eq. 35-38) in place; returns the last
      ``max ‖λ⁺ − λ‖``. One compiled call per k iterations (``loop``: a loop of
      :mod:`~plants.sim._subadmm_kernels` or its generated twin with the tree solves written out,
      :mod:`~plants.sim._tree_codegen`) when numba is there and the factor has compiled solves (all
      but ``body_factorization="pinocchio"``), else a Python loop.
    * ``velocity(v)``: (n_p, 3) the piece velocities ``J_p v``; ``scatter(w, out)``: ``out += Σ_p J_pᵀ
      (w_p + λ_i)`` (``w`` None: zero). Compiled (the body forward / backward passes for the body
      iteration, the row blocks otherwise), numpy without numba.
    """

    def __init__(self, factor, variant: str, body_iteration: str, problem, pieces, arrays, threads: int = 1):
        self.arrays = arrays
        self.loop = None  # the compiled loop run calls (None: a Python loop over compiled steps)
        self.groups = None  # the parallel groups of islands (threads > 1), else None
        Jp, cols, ci, nz, v, lam, lam_prev, e, mu, b, rhs, alpha, z = arrays
        self.body = None
        if HAVE_NUMBA and isinstance(factor, CompiledBodySplitFactor) and body_iteration == "bodies":
            f = factor
            self.body = Fp, pj, active, S, V, W = _body_structure(problem, pieces, f)
            self._walk = (active, f.joint_parent, f.joint_v, f.joint_nv, S)
            g = f.generated
            if g is not None and g.tree_joint0 is not None:
                # generated: the tree solves and the body passes written out for the trees' structure
                tree_active = np.zeros(f.tree_starts.size - 1, dtype=np.bool_)
                tree_active[f.joint_tree[pj]] = True
                self.loop = loop = g.module.iterate_body_passes
                self.run = lambda k, beta, rho: loop(k, f.K, g.tree_group, f.tree_starts, Fp, pj, ci, nz, v, lam,
                                                     lam_prev, e, mu, rho, beta, b, rhs, alpha, z, S, g.tree_joint0,
                                                     tree_active, V, W)
                if threads > 1:
                    self.groups = _GroupRun.body(problem, f, self.body, arrays, threads)
                    if self.groups is not None:
                        run_groups = self.groups
                        self.run = lambda k, beta, rho: run_groups(k, beta, rho, v, lam, z, rhs, alpha)
                return
            # generated: the same loop with the tree solves written out for the trees' structure
            loop, tree_arg = (g.module.iterate_body, g.tree_group) if g is not None else (iterate_body, f.dof_parent)
            self.loop = loop
            self.run = lambda k, beta, rho: loop(k, f.K, tree_arg, f.tree_starts, Fp, pj, ci, nz, v,
                                                 lam, lam_prev, e, mu, rho, beta, b, rhs, alpha, z, S,
                                                 active, f.joint_parent, f.joint_v, f.joint_nv, V, W)
            return
        rows = (Jp, cols, ci, nz, v, lam, lam_prev, e, mu)
        if HAVE_NUMBA and isinstance(factor, CompiledBodySplitFactor):
            loop, tree_arg = ((factor.generated.module.iterate_rows, factor.generated.tree_group)
                              if factor.generated is not None else (iterate_rows_ltdl, factor.dof_parent))
            self.loop = loop
            self.run = lambda k, beta, rho: loop(k, factor.K, tree_arg, factor.tree_starts, *rows, rho, beta, b, rhs,
                                                 alpha, z)
        elif HAVE_NUMBA and isinstance(factor, TreeSplitFactor) and factor.generated is not None:
            g = factor.generated
            self.loop = g.module.iterate_rows
            self.run = lambda k, beta, rho: g.module.iterate_rows(k, factor.L, factor.tree_starts, g.tree_group,
                                                                  *rows, rho, beta, b, rhs, alpha, z)
            if threads > 1:
                self.groups = _GroupRun.rows(problem, factor, arrays, threads)
                if self.groups is not None:
                    run_groups = self.groups
                    self.run = lambda k, beta, rho: run_groups(k, beta, rho, v, lam, z, rhs, alpha)
        elif HAVE_NUMBA and isinstance(factor, TreeSplitFactor) and factor.compiled:
            self.loop = iterate_rows_cholesky
            self.run = lambda k, beta, rho: iterate_rows_cholesky(k, factor.L, factor.tree_starts, *rows, rho, beta,
                                                                  b, rhs, alpha, z)
        elif HAVE_NUMBA and isinstance(factor, _SparseLU):
            self.loop = iterate_rows_sparse_lu
            self.run = lambda k, beta, rho: iterate_rows_sparse_lu(k, *factor.arrays, *rows, rho, beta, b, rhs,
                                                                   alpha, z)
        else:
            step = piece_step if HAVE_NUMBA else piece_step_numpy

            def run(k, beta, rho):
                dmax = 0.0
                for _ in range(k):
                    v[:] = factor.solve(rhs)
                    lam_prev[:] = lam
                    dmax = step(Jp, cols, ci, nz, v, lam_prev, e, mu, rho, beta, b, lam, rhs, alpha, z)
                return dmax
            self.run = run
        if not HAVE_NUMBA:
            self._flat_cols = cols.reshape(-1)
            self._v_ext = np.zeros(v.size + 1)  # index n_v = the padding column

    def velocity(self, v: np.ndarray) -> np.ndarray:
        Jp, cols = self.arrays[0], self.arrays[1]
        if self.body is not None:
            Fp, pj, active, S, V, W = self.body
            out = np.empty((pj.size, 3))
            body_velocity(Fp, pj, active, self._walk[1], self._walk[2], self._walk[3], S, v, V, out)
            return out
        if HAVE_NUMBA:
            out = np.empty((cols.shape[0], 3))
            rows_velocity(Jp, cols, v, out)
            return out
        self._v_ext[:-1] = v
        return np.einsum("pks,ps->pk", Jp, self._v_ext[cols])

    def scatter(self, w: np.ndarray | None, out: np.ndarray) -> np.ndarray:
        Jp, cols, ci, lam = self.arrays[0], self.arrays[1], self.arrays[2], self.arrays[5]
        if self.body is not None:
            Fp, pj, active, S, V, W = self.body
            body_scatter(Fp, pj, ci, _EMPTY_W if w is None else w, lam, active, self._walk[1], self._walk[2],
                         self._walk[3], S, W, out)
            return out
        if HAVE_NUMBA:
            rows_scatter(Jp, cols, ci, _EMPTY_W if w is None else w, lam, out)
            return out
        weight = lam[ci] if w is None else w + lam[ci]
        contrib = np.einsum("pks,pk->ps", Jp, weight)
        out += np.bincount(self._flat_cols, weights=contrib.reshape(-1), minlength=out.size + 1)[:-1]
        return out


@register_contact_solver("subadmm")
class SubADMMSolver(WarmStartedSolver):
    """SubADMM (seed 000 Algorithm 2). ``SubADMMSolver(options=None, **overrides)``."""

    name = "subadmm"
    options_type = SubADMMOptions

    def _masses(self, problem) -> np.ndarray | None:
        """Body masses of the problem's model (cached per model), or None without bodies."""
        if problem.bodies is None:
            return None
        cache = getattr(self, "_mass_cache", None)
        if cache is None or cache[0] is not problem.bodies.model:
            inertias = problem.bodies.model.inertias
            cache = self._mass_cache = (problem.bodies.model, np.array([I.mass for I in inertias]))
        return cache[1]

    @staticmethod
    def _fits_body_split(problem) -> bool:
        """The joint-space rows of ``problem`` keep the body-split matrix inside the branch-induced
        pattern of a mass matrix: each row's dofs lie on one path to the root (a limit, a PD
        actuator or dry friction of one dof always; a coupler of two branches never)."""
        rows = problem.J.reshape(problem.n_c, 3, -1)[problem.n_geometric:, 2]
        support = problem.bodies.joint_support  # [j, k] = 1: dof k moves joint j
        for r in rows:
            dofs = np.flatnonzero(r)
            if dofs.size <= 1:
                continue
            # dofs are numbered depth-first: the last one is the deepest candidate; its joint is
            # the one, among the joints it moves, that the fewest dofs move
            moved = np.flatnonzero(support[:, dofs[-1]])
            owner = moved[np.argmin(support[moved].sum(axis=1))]
            if not support[owner, dofs].all():
                return False
        return True

    def _factor(self, problem, A, pieces, beta, variant):
        if variant == "body":
            bodies = problem.bodies
            compiled = self.options.body_factorization == "compiled"
            kind = CompiledBodySplitFactor if compiled else BodySplitFactor
            cache = getattr(self, "_body_factor", None)
            if (not isinstance(cache, kind) or cache.source is not bodies.model
                    or not np.array_equal(cache.tree_starts, problem.tree_starts)
                    or (compiled and cache.generate != self.options.generated_solves)):
                cache = self._body_factor = (kind(bodies.model, problem.tree_starts, self.options.generated_solves)
                                             if compiled else kind(bodies.model, problem.tree_starts))
            geo = pieces.joint > 0
            points = bodies.points[pieces.contact[geo]] if compiled else pieces.local_point[geo]
            A_body = problem.A
            if not geo.all():  # joint-space rows: β rᵀr in the matrix (a diagonal β for a limit)
                A_body = _assembled_matrix(problem.A, _select(pieces, ~geo), beta * (1.0 - self.options.theta))
            return cache.factor(bodies, pieces.joint[geo], points, beta, self.options.theta, A_body)
        if variant == "no_body":
            return TreeSplitFactor(A, pieces, problem.tree_starts, beta, generated=self.options.generated_solves)
        return _SparseLU(whole_system_factor(A, pieces, problem.tree_starts, beta, factors=True))

    def _solve(self, problem, v_guess, lambda_guess) -> ALSolverResult:
        o = self.options
        t0 = time.perf_counter()
        variant = o.variant if (o.variant != "body" or problem.bodies is not None) else "no_body"
        body_iteration = o.body_iteration
        if variant == "body" and problem.n_limits:
            # joint-space rows (±e_k for a limit) are no forces at body points: their pieces are
            # rows, added to the body-split matrix, and the iteration runs on piece rows
            if o.body_factorization != "compiled" or not self._fits_body_split(problem):
                variant = "no_body"
                _warn_limits_once()
            body_iteration = "rows"
        form = rigid_contact_form(problem, o.theta)
        n_c, n_v = form.n_c, form.n_v
        A, mu, c = form.A, form.mu, form.compliance
        if HAVE_NUMBA:  # A is block diagonal over the trees: only its blocks are multiplied
            b = np.empty(n_v)
            tree_matvec(A, np.asarray(problem.tree_starts, np.int64), form.v_free, b)
        else:
            b = A @ form.v_free
        body_walk = (HAVE_NUMBA and variant == "body" and o.body_factorization == "compiled"
                     and body_iteration == "bodies")  # the body iteration needs no piece rows
        pieces = slack_pieces(problem, variant, form.J, rows=not body_walk)
        ci, nz = np.ascontiguousarray(pieces.contact, np.int64), pieces.count
        cols = None if body_walk else np.ascontiguousarray(pieces.cols, np.int64)
        Jp = None if body_walk else np.ascontiguousarray(pieces.blocks)  # contiguous: one compiled signature
        beta = float(o.beta) if o.beta is not None else pseudo_density_beta(problem, o.beta_rule, self._masses(problem))
        v = np.array(form.mid_velocity(np.asarray(problem.v0 if v_guess is None else v_guess, float)), dtype=float)
        if v.shape != (n_v,) or not np.isfinite(v).all():
            raise ValueError(f"v_guess must be a finite array of shape ({n_v},)")
        lam = self._initial_impulses(problem, lambda_guess)

        solver_name = f"subadmm[{variant}]"
        t_factor = time.perf_counter()
        try:
            factor = self._factor(problem, A, pieces, beta, variant)
        except (LinAlgError, ValueError) as err:
            return self._fail(form, v, lam, t0, f"factorization failed: {err}", solver_name)
        t_factor = time.perf_counter() - t_factor
        n_factor = 1
        ts = problem.tree_starts
        t_metric = time.perf_counter()
        history = [_initial_metric(form, lam)]
        t_metric = time.perf_counter() - t_metric
        status, message = ContactSolverStatus.MAX_ITERATIONS, f"no convergence in {o.max_iterations} iterations"
        theta_p = theta_d = np.nan
        it = 0
        if n_c == 0:
            v = form.v_free.copy()
            status, message = ContactSolverStatus.SOLVED, ""
        e, mu = np.ascontiguousarray(form.e), np.ascontiguousarray(mu)
        rho = 1.0 + beta * c / nz
        alpha = float(o.relaxation)
        lam = np.array(lam, dtype=float)  # updated in place (never the warm-start store's array)
        lam_prev = np.empty_like(lam)
        rhs = np.empty(n_v)
        z = np.empty((ci.size, 3))
        arrays = (Jp, cols, ci, nz, v, lam, lam_prev, e, mu, b, rhs, alpha, z)
        iteration = _Iteration(factor, variant, body_iteration, problem, pieces, arrays, o.threads)
        z[:] = iteration.velocity(v)  # z⁰ = J v̂⁰
        rhs[:] = b
        iteration.scatter(beta * z, rhs)  # b + Σ J_pᵀ (β z_p + λ_i)
        run = iteration.run
        every_iteration = o.adaptive_penalty or o.residual_tol > 0  # θ_d needed after each iteration
        t_iterate = 0.0
        while not status.ok and it < o.max_iterations:
            # k iterations up to the next accuracy evaluation (one compiled call):
            # (a) v-step per subsystem (eq. 34), (b) z/λ-step per constraint (eq. 35-38),
            # (c) u = −λ (eq. 39) and the next right-hand side
            k = 1 if every_iteration else min(o.max_iterations - it, o.metric_every - it % o.metric_every)
            ti = time.perf_counter()
            dmax = run(k, beta, rho)
            t_iterate += time.perf_counter() - ti
            it += k
            theta_p = dmax / beta
            last = it == o.max_iterations
            if o.adaptive_penalty or o.residual_tol > 0 or last:
                Jtl = iteration.scatter(None, np.zeros(n_v))
                if HAVE_NUMBA:  # A is block diagonal over the trees: only its blocks are multiplied
                    Av = np.empty(n_v)
                    theta_d = tree_dual_residual(A, ts, v, b, Jtl, Av)
                else:
                    Av = A @ v
                    r = Av - b - Jtl
                    theta_d = float(np.sqrt(np.max(np.add.reduceat(r * r, ts[:-1]))))
            if it % o.metric_every and not last:
                continue  # the accuracy metric (stopping test) only every metric_every iterations
            tm = time.perf_counter()
            accuracy = contact_residual(form, lam.reshape(-1))
            t_metric += time.perf_counter() - tm
            acc = accuracy.residual
            history.append(acc)
            if not np.isfinite(acc):
                status, message = ContactSolverStatus.NUMERICAL_ERROR, "non-finite impulses"
                break
            if (acc <= metric_tolerance(lam, o.tol, o.rel_tol)
                    or (o.residual_tol > 0 and theta_p + theta_d <= o.residual_tol)):
                status, message = ContactSolverStatus.SOLVED, ""
                v = accuracy.v_hat  # the velocities of the converged impulses (dynamics exact)
                break
            if o.adaptive_penalty and o.penalty_rule == "normalized":
                # OSQP-style: both residuals relative to the size of their terms (dimensionless)
                primal_scale = max(np.abs(z).max(initial=0.0), np.abs(iteration.velocity(v)).max(initial=0.0),
                                   1e-300)
                dual_scale = max(np.abs(Av).max(), np.abs(b).max(), np.abs(Jtl).max(), 1e-300)
                ratio = (theta_p / primal_scale) / (theta_d / dual_scale)
            else:
                ratio = theta_p / theta_d if theta_d > 0 else np.inf
            if o.adaptive_penalty and theta_p > 0 and theta_d > 0 and (ratio > o.gamma or ratio * o.gamma < 1):
                beta *= np.sqrt(ratio)  # eq. (43)
                rho = 1.0 + beta * c / nz
                rhs[:] = b
                iteration.scatter(beta * z, rhs)
                tf = time.perf_counter()
                factor = self._factor(problem, A, pieces, beta, variant)
                iteration = _Iteration(factor, variant, body_iteration, problem, pieces, arrays, o.threads)
                run = iteration.run
                t_factor += time.perf_counter() - tf
                n_factor += 1
        if o.warm_start and status is not ContactSolverStatus.NUMERICAL_ERROR:
            self._warm.put(problem, lam)
        return ALSolverResult(
            status=status, v=form.next_velocity(v), gamma=lam.reshape(-1).copy(), iterations=it,
            residual=history[-1], solve_time=time.perf_counter() - t0,
            timings={"factor": t_factor, "metric": t_metric, "iterate": t_iterate, "factorizations": float(n_factor),
                     "theta_p": theta_p, "theta_d": theta_d,
                     "pieces": float(ci.size)},
            residual_history=tuple(history), solver=solver_name, message=message, beta=beta, primal_residual=theta_p,
        )

    def _fail(self, form, v, lam, t0, message, solver_name):
        return ALSolverResult(
            status=ContactSolverStatus.NUMERICAL_ERROR, v=form.next_velocity(v), gamma=lam.reshape(-1),
            iterations=0, solve_time=time.perf_counter() - t0, solver=solver_name, message=message,
        )
