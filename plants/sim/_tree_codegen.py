"""Tree solves generated for the structure of a scene's trees (straight-line numba code).

The split variants of SubADMM solve one small system per tree every iteration: SubADMM with the
LTDL factors of its branch-sparse matrix (:func:`~plants.sim._subadmm_kernels.ltdl_solve_trees`),
No Body with a dense Cholesky factor (:func:`~plants.sim._subadmm_kernels.cholesky_solve_trees`).
The generic kernels walk the tree at run time: the LTDL solve follows ``dof_parent`` from every dof
to its root (a chain of dependent loads) and both loop over sizes read from arrays. But the
structure of a tree is fixed for a model (a Unitree A1: a free-flyer base and four 3-joint legs,
99 ancestor pairs), so the solve can be written out for it once: every multiply-add with constant
indices, the right-hand side in locals. That is what this module generates, per *structure*:

* ``"ltdl"``: the dof-parent pattern of a tree relative to its first dof (e.g. ``(-1, 0, 1, 2, 3,
  4, 5, 6, 7, 5, 9, ...)``), for :class:`~plants.sim.subadmm.CompiledBodySplitFactor`;
* ``"cholesky"``: the size of a tree, for :class:`~plants.sim.subadmm.TreeSplitFactor`.

With the model's joints, the ``"ltdl"`` module also writes out the body iteration's forward pass
of body velocities and backward pass of body wrenches over each tree's joints
(``iterate_body_passes``).

Both get the same treatment (Table III compares structures, so neither baseline is left with the
generic loop the other escaped). The generated solves perform the generic kernels' operations in the
same order, so they give the same bits (tested). Measured on 8 A1s (144 dofs): LTDL solve 2.1 →
1.2 µs, dense Cholesky solve 2.8 → 2.4 µs (docs/contact-solvers.md §4.4).

Each distinct set of structures becomes one Python module (the tree solves, a dispatch over the
trees, and the compiled iteration loops of :mod:`~plants.sim._subadmm_kernels` calling them),
written once to a cache directory (``$C3MPC_KERNEL_CACHE``, else ``$XDG_CACHE_HOME/c3mpc/kernels``,
else ``~/.cache/c3mpc/kernels``; a temporary directory if none is writable) and compiled by numba
with ``cache=True``: the first solve of a new robot compiles it (20–23 s for an A1's SubADMM
module, 5–6 s for its No Body module), later processes load it from disk. Structures whose solve would exceed :data:`MAX_PAIRS` multiply-adds per tree fall
back to the generic kernels (``None``).
"""

from __future__ import annotations

import hashlib
import importlib.util
import logging
import os
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import numpy as np

from . import _subadmm_kernels
from ._subadmm_kernels import HAVE_NUMBA

__all__ = ["GENERATOR_VERSION", "MAX_PAIRS", "GeneratedTreeSolves", "ltdl_tree_solves", "cholesky_tree_solves",
           "ltdl_structures", "tree_joints", "kernel_cache_dir", "BODY_GROUP_FIELDS", "ROWS_GROUP_FIELDS",
           "GROUP_GAP"]

GENERATOR_VERSION = 2
"""Bumped whenever the generated text changes (it is part of the module's file name)."""

MAX_PAIRS = 4000
"""Largest number of factor entries below the diagonal of one tree for which a solve is generated
(≈ 2 lines of code each; an A1 has 99, a dense 18-dof tree 153, a dense 80-dof tree 3160)."""

_KERNELS_DIGEST = hashlib.sha1(Path(_subadmm_kernels.__file__).read_bytes()).hexdigest()
"""Fingerprint of the kernels the generated modules call: it is written into their text, so that an
edited ``_subadmm_kernels.py`` gives new file names and numba never reuses a stale compiled loop
(numba's cache tracks a file's own timestamp, not the modules it calls into)."""

_LOADED: dict[str, tuple[ModuleType, Path]] = {}  # module name → (module, its file)
_LOG = logging.getLogger(__name__)
_BY_STRUCTURE: dict[tuple, "GeneratedTreeSolves | None"] = {}


@dataclass(frozen=True)
class GeneratedTreeSolves:
    """The generated kernels of one scene structure.

    Attributes:
        kind: ``"ltdl"`` or ``"cholesky"``.
        module: the loaded module: ``solve_trees(F, tree_starts, tree_group, y, out)`` (``out = K⁻¹
            y`` for all trees) and the iteration loops ``iterate_body`` / ``iterate_rows`` (``"ltdl"``)
            or ``iterate_rows`` (``"cholesky"``) with the generic loops' arguments, ``dof_parent``
            replaced by ``tree_group`` (``"ltdl"``) or ``tree_group`` inserted after ``tree_starts``.
        tree_group: (n_trees,) index of each tree's structure in ``structures``.
        structures: the distinct structures (dof-parent patterns or sizes).
        path: the generated source file.
        tree_joint0: (n_trees,) first joint of each tree when the body passes were generated
            (``module.iterate_body_passes``), else None.
    """

    kind: str
    module: ModuleType
    tree_group: np.ndarray
    structures: tuple
    path: Path
    tree_joint0: np.ndarray | None = None

    def solve(self, factors: np.ndarray, tree_starts: np.ndarray, y: np.ndarray, out: np.ndarray) -> np.ndarray:
        """``out = K⁻¹ y`` with the factors of all trees (n_trees, s, s); returns ``out``."""
        self.module.solve_trees(factors, tree_starts, self.tree_group, y, out)
        return out


def kernel_cache_dir() -> Path:
    """Where generated modules are written (created if needed): ``$C3MPC_KERNEL_CACHE``, else
    ``$XDG_CACHE_HOME/c3mpc/kernels``, else ``~/.cache/c3mpc/kernels``; a directory under the
    system's temporary directory if that is not writable."""
    env = os.environ.get("C3MPC_KERNEL_CACHE")
    if env:
        candidates = [Path(env)]
    else:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        candidates = [Path(base) / "c3mpc" / "kernels"]
    candidates.append(Path(tempfile.gettempdir()) / f"c3mpc-kernels-{os.getuid() if hasattr(os, 'getuid') else 0}")
    for d in candidates:
        try:
            d.mkdir(parents=True, exist_ok=True)
            if os.access(d, os.W_OK):
                return d
        except OSError:
            continue
    raise OSError(f"no writable directory for generated kernels among {[str(c) for c in candidates]}")


def _load(kind: str, source: str) -> tuple[ModuleType, Path]:
    """Write ``source`` once (content-addressed file name) and import it; cached per process."""
    digest = hashlib.sha1(source.encode()).hexdigest()[:16]
    name = f"c3mpc_generated_{kind}_v{GENERATOR_VERSION}_{digest}"
    path = kernel_cache_dir() / f"{name}.py"
    if name in _LOADED:  # the file it was loaded from (the cache directory may have changed since)
        return _LOADED[name]
    if not path.exists() or path.read_text() != source:
        _LOG.info("new tree structure: kernels written to %s; numba compiles them on first use (about 20 s "
                  "for a quadruped, once per machine)", path)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(source)
        os.replace(tmp, path)  # atomic: concurrent processes write the same text
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # numba's cache locates functions through their module
    spec.loader.exec_module(module)
    _LOADED[name] = (module, path)
    return module, path


def _ancestors(rel: tuple[int, ...], k: int) -> list[int]:
    """Ancestor dofs of dof ``k`` in the relative dof-parent pattern ``rel``, nearest first."""
    out, j = [], rel[k]
    while j >= 0:
        out.append(j)
        j = rel[j]
    return out


def _ltdl_solve_source(g: int, rel: tuple[int, ...]) -> list[str]:
    """Straight-line LTDL solve of one structure: the operations of ``ltdl_solve_trees`` in its order."""
    n = len(rel)
    lines = ["@njit(cache=True, inline='always')", f"def _solve_{g}(Kt, st, y, out):"]
    lines += [f"    x{k} = y[st + {k}]" for k in range(n)]
    for k in range(n - 1, -1, -1):  # x ← L⁻ᵀ x
        lines += [f"    x{j} -= Kt[{k}, {j}] * x{k}" for j in _ancestors(rel, k)]
    lines += [f"    x{k} /= Kt[{k}, {k}]" for k in range(n)]
    for k in range(n):  # x ← L⁻¹ x
        anc = _ancestors(rel, k)
        if anc:
            lines.append("    acc = 0.0")
            lines += [f"    acc += Kt[{k}, {j}] * x{j}" for j in anc]
            lines.append(f"    x{k} -= acc")
    lines += [f"    out[st + {k}] = x{k}" for k in range(n)]
    return lines


def _cholesky_solve_source(g: int, n: int) -> list[str]:
    """Straight-line ``(L Lᵀ)⁻¹ y`` of one size: the operations of ``cholesky_solve_trees`` in its order."""
    lines = ["@njit(cache=True, inline='always')", f"def _solve_{g}(Lt, st, y, out):"]
    for i in range(n):
        lines.append(f"    x{i} = y[st + {i}]")
        lines += [f"    x{i} -= Lt[{i}, {k}] * x{k}" for k in range(i)]
        lines.append(f"    x{i} = x{i} / Lt[{i}, {i}]")
    for i in range(n - 1, -1, -1):
        lines.append(f"    x{i} = x{i} / Lt[{i}, {i}]")
        lines += [f"    x{k} -= Lt[{i}, {k}] * x{i}" for k in range(i)]
    lines += [f"    out[st + {k}] = x{k}" for k in range(n)]
    return lines


def _body_forward_source(g: int, joints: tuple) -> list[str]:
    """Forward pass of one tree structure: the body velocities of all its joints in locals (the
    generic ``_body_forward`` visits the active joints with the same operations in the same order)."""
    lines = ["@njit(cache=True, inline='always')", f"def _forward_{g}(S, v, V, j0, st):"]
    for j, (parent, v0, nv) in enumerate(joints):
        lines += [f"    V{j}_{r} = {'0.0' if parent < 0 else f'V{parent}_{r}'}" for r in range(6)]
        for c in range(v0, v0 + nv):
            lines.append(f"    x = v[st + {c}]")
            lines += [f"    V{j}_{r} += S[st + {c}, {r}] * x" for r in range(6)]
        lines += [f"    V[j0 + {j}, {r}] = V{j}_{r}" for r in range(6)]
    return lines


def _body_backward_source(g: int, joints: tuple) -> list[str]:
    """Backward pass of one tree structure: each joint's wrench (pieces' part read from W, children
    added in descending order, as the generic ``_body_backward``) projected into ``rhs``; W left zero."""
    lines = ["@njit(cache=True, inline='always')", f"def _backward_{g}(S, W, rhs, j0, st):"]
    for j in range(len(joints)):
        lines += [f"    W{j}_{r} = W[j0 + {j}, {r}]" for r in range(6)]
    for j in range(len(joints) - 1, -1, -1):
        parent, v0, nv = joints[j]
        for c in range(v0, v0 + nv):
            terms = " + ".join(f"S[st + {c}, {r}] * W{j}_{r}" for r in range(6))
            lines.append(f"    rhs[st + {c}] += {terms}")
        if parent >= 0:
            lines += [f"    W{parent}_{r} += W{j}_{r}" for r in range(6)]
        lines += [f"    W[j0 + {j}, {r}] = 0.0" for r in range(6)]
    return lines


_DISPATCH = """
@njit(cache=True)
def solve_trees(F, tree_starts, tree_group, y, out):
    for t in range(tree_starts.size - 1):
        g = tree_group[t]
{branches}
"""

_ROW_ARGS = "blocks, cols, contact, count, v, lam, lam_prev, e, mu, rho, beta, b, rhs, alpha, z"
_BODY_ARGS = "Fp, piece_joint, contact, count, v, lam, lam_prev, e, mu, rho, beta, b, rhs, alpha, z, S"
_STEP_ARGS = "v, lam_prev, e, mu, rho, beta, b, lam, rhs, alpha, z"


def _loop(name: str, head: str, args: str, step: str) -> str:
    """The text of a compiled loop of k iterations: the generated tree solve, then ``step`` (the
    z/λ-step call), with the arguments of the generic loop of ``_subadmm_kernels`` except
    ``head`` (``dof_parent`` replaced by ``tree_group``, or ``tree_group`` added)."""
    return f"""

@njit(cache=True)
def {name}(k, F, {head}, {args}):
    dmax = 0.0
    for _ in range(k):
        solve_trees(F, tree_starts, tree_group, rhs, v)
        lam_prev[:] = lam
        dmax = {step}
    return dmax
"""


_ITERATE_LTDL = (
    _loop("iterate_body", "tree_group, tree_starts", _BODY_ARGS + ", active, joint_parent, joint_v, joint_nv, V, W",
          f"body_piece_step(Fp, piece_joint, contact, count, {_STEP_ARGS}, S, active, joint_parent, joint_v, "
          "joint_nv, V, W)")
    + _loop("iterate_rows", "tree_group, tree_starts", _ROW_ARGS,
            f"piece_step(blocks, cols, contact, count, {_STEP_ARGS})"))

_BODY_STEP = """
@njit(cache=True, inline='always')
def _passes(forward, S, v, V, W, rhs, tree_joint0, tree_active, tree_starts, tree_group):
    for t in range(tree_group.size):
        if not tree_active[t]:
            continue  # no piece on this tree: no velocity needed, no wrench
        g = tree_group[t]
        j0 = tree_joint0[t]
        st = tree_starts[t]
{branches}


@njit(cache=True)
def body_step(Fp, piece_joint, contact, count, v, lam, e, mu, rho, beta, b, lam_out, rhs_out, alpha, z, S,
              tree_joint0, tree_active, tree_starts, tree_group, V, W):
    _passes(True, S, v, V, W, rhs_out, tree_joint0, tree_active, tree_starts, tree_group)
    dmax = _body_pieces(Fp, piece_joint, contact, count, lam, e, mu, rho, beta, lam_out, alpha, z, V, W)
    rhs_out[:] = b
    _passes(False, S, v, V, W, rhs_out, tree_joint0, tree_active, tree_starts, tree_group)
    return dmax
""" + _loop("iterate_body_passes", "tree_group, tree_starts", _BODY_ARGS + ", tree_joint0, tree_active, V, W",
            f"body_step(Fp, piece_joint, contact, count, {_STEP_ARGS}, S, tree_joint0, tree_active, tree_starts, "
            "tree_group, V, W)")

_ITERATE_CHOLESKY = _loop("iterate_rows", "tree_starts, tree_group", _ROW_ARGS,
                          f"piece_step(blocks, cols, contact, count, {_STEP_ARGS})")


GROUP_GAP = _subadmm_kernels.GROUP_GAP
"""Rows left unused between two groups' parts of the arrays the iteration writes (upper-case
kinds below; the builders of :mod:`~plants.sim._subadmm_kernels` allocate them)."""
_SLICES = {"t": "[t0:t1]", "t1": "[t0 + g:t1 + g + 1]", "p": "[p0:p1]", "c": "[c0:c1]", "d": "[d0:d1]",
           "P": "[p0 + G:p1 + G]", "C": "[c0 + G:c1 + G]", "D": "[d0 + G:d1 + G]", "J": "[j0 + G:j1 + G]",
           None: ""}


def _groups_loop(name: str, loop: str, fields: tuple[tuple[str, str | None], ...]) -> str:
    """The text of the parallel driver of ``loop`` over groups of islands (``SubADMMOptions.threads``).

    ``fields``: the arguments of ``loop`` after ``k`` with the index space each is concatenated over
    (``t`` trees, ``t1`` tree starts (one more per group), ``p`` pieces, ``c`` contacts, ``d`` dofs;
    upper case ``P``, ``C``, ``D``, ``J`` (joints): written by the iteration, with
    :data:`GROUP_GAP` rows between groups; None: a scalar). Group g's part of each is the slice
    between the pointers ``tp/pp/cp/dp/jp[g]`` and ``[g + 1]`` (shifted by ``g × GROUP_GAP`` for the
    written ones). Each group copies its state in, runs ``k`` iterations of ``loop`` on its own
    slices (one thread per group; numba ``prange``) and copies it back.
    """
    arrays = ", ".join(n for n, kind in fields if kind is not None)
    call = ", ".join(n + _SLICES[kind] for n, kind in fields)
    return f"""

@njit(cache=True, parallel=True)
def {name}(k, tp, pp, cp, dp, jp, {arrays}, dofs, contacts, pieces, v, lam, z, rhs, rho, beta, alpha, dmax):
    for g in prange(tp.size - 1):
        t0, t1, p0, p1, c0, c1 = tp[g], tp[g + 1], pp[g], pp[g + 1], cp[g], cp[g + 1]
        d0, d1, j0, j1 = dp[g], dp[g + 1], jp[g], jp[g + 1]
        G = {GROUP_GAP} * g
        group_gather(dofs[d0:d1], contacts[c0:c1], pieces[p0:p1], rhs, lam, z, rho, rhs_l[d0 + G:d1 + G],
                     lam_l[c0 + G:c1 + G], z_l[p0 + G:p1 + G], rho_l[c0 + G:c1 + G])
        dmax[g] = {loop}(k, {call})
        group_scatter(dofs[d0:d1], contacts[c0:c1], pieces[p0:p1], v_l[d0 + G:d1 + G], rhs_l[d0 + G:d1 + G],
                      lam_l[c0 + G:c1 + G], z_l[p0 + G:p1 + G], v, rhs, lam, z)
"""


_STATE_FIELDS = (("count", "c"), ("v_l", "D"), ("lam_l", "C"), ("lam_prev_l", "C"), ("e_l", "c"), ("mu_l", "c"),
                 ("rho_l", "C"), ("beta", None), ("b_l", "d"), ("rhs_l", "D"), ("alpha", None), ("z_l", "P"))
BODY_GROUP_FIELDS = (("F", "t"), ("tree_group", "t"), ("tree_starts", "t1"), ("Fp", "p"), ("piece_joint", "p"),
                     ("contact", "p"), *_STATE_FIELDS, ("S_l", "d"), ("tree_joint0", "t"), ("tree_active", "t"),
                     ("V", "J"), ("W", "J"))
"""The arguments of ``iterate_body_passes`` after ``k``, with the index space of each (the parallel
driver's layout; :class:`plants.sim.subadmm._GroupRun` concatenates the groups' arrays in this order)."""
ROWS_GROUP_FIELDS = (("F", "t"), ("tree_starts", "t1"), ("tree_group", "t"), ("blocks", "p"), ("cols", "p"),
                     ("contact", "p"), *_STATE_FIELDS)
"""Likewise for the ``iterate_rows`` of the ``"cholesky"`` modules (No Body)."""
_BODY_GROUPS = _groups_loop("iterate_body_passes_groups", "iterate_body_passes", BODY_GROUP_FIELDS)
_ROWS_GROUPS = _groups_loop("iterate_rows_groups", "iterate_rows", ROWS_GROUP_FIELDS)

def _module_source(kind: str, solves: list[list[str]], passes: list[list[str]] | None = None) -> str:
    header = [f'"""Generated by plants.sim._tree_codegen (version {GENERATOR_VERSION}, kind {kind!r}): do not edit."""',
              f"# calls plants.sim._subadmm_kernels with sha1 {_KERNELS_DIGEST}",
              "from numba import njit, prange", "",
              "from plants.sim._subadmm_kernels import _body_pieces, body_piece_step, group_gather, group_scatter, "
              "piece_step", ""]
    body = []
    for lines in solves + (passes or []):
        body += ["", *lines, ""]
    branches = "\n".join(f"        {'if' if g == 0 else 'elif'} g == {g}:\n"
                         f"            _solve_{g}(F[t], tree_starts[t], y, out)" for g in range(len(solves)))
    text = "\n".join(header + body) + _DISPATCH.format(branches=branches)
    text += _ITERATE_LTDL if kind == "ltdl" else _ITERATE_CHOLESKY + _ROWS_GROUPS
    if passes:
        text += _BODY_STEP.format(branches="\n".join(
            f"        {'if' if g == 0 else 'elif'} g == {g}:\n"
            f"            if forward:\n                _forward_{g}(S, v, V, j0, st)\n"
            f"            else:\n                _backward_{g}(S, W, rhs, j0, st)" for g in range(len(solves))))
        text += _BODY_GROUPS
    return text


def ltdl_structures(dof_parent: np.ndarray, tree_starts: np.ndarray) -> tuple[list[tuple[int, ...]], np.ndarray]:
    """The distinct relative dof-parent patterns of the trees and each tree's index among them."""
    structures: list[tuple[int, ...]] = []
    group = np.empty(len(tree_starts) - 1, dtype=np.int64)
    for t in range(len(tree_starts) - 1):
        st, en = int(tree_starts[t]), int(tree_starts[t + 1])
        parents = [int(p) for p in dof_parent[st:en]]
        if any(p >= 0 and not st <= p < st + k for k, p in enumerate(parents)):
            raise ValueError(f"dof_parent of tree {t} is not a tree ordering (parent before child, within the tree)")
        rel = tuple(p - st if p >= 0 else -1 for p in parents)
        if rel not in structures:
            structures.append(rel)
        group[t] = structures.index(rel)
    return structures, group


def tree_joints(tree_starts: np.ndarray, joint_parent: np.ndarray, joint_v: np.ndarray,
                joint_nv: np.ndarray) -> tuple[list[tuple], np.ndarray] | None:
    """Per tree, its joints relative to its first joint: ``((parent or −1, first dof, dof count), ...)``,
    and the first joint of each tree; None if a tree's joints are not one ascending run of joints
    whose dofs tile the tree's dofs in order (then the body passes are not generated)."""
    starts = np.asarray(tree_starts, dtype=np.int64)
    out, first = [], np.empty(starts.size - 1, dtype=np.int64)
    jv = np.asarray(joint_v)
    for t in range(starts.size - 1):
        st, en = int(starts[t]), int(starts[t + 1])
        mine = np.flatnonzero((jv >= st) & (jv < en) & (np.arange(jv.size) > 0))
        if mine.size == 0 or not np.array_equal(mine, np.arange(mine[0], mine[0] + mine.size)):
            return None
        j0, dof = int(mine[0]), st
        joints = []
        for j in mine:
            p = int(joint_parent[j])
            if int(joint_v[j]) != dof or (p != 0 and not j0 <= p < j):
                return None
            joints.append((p - j0 if p else -1, dof - st, int(joint_nv[j])))
            dof += int(joint_nv[j])
        if dof != en:
            return None
        out.append(tuple(joints))
        first[t] = j0
    return out, first


def ltdl_tree_solves(dof_parent: np.ndarray, tree_starts: np.ndarray,
                     joints: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None) -> GeneratedTreeSolves | None:
    """Generated LTDL solves for trees with these dof parents (None without numba, or when a
    structure has more than :data:`MAX_PAIRS` ancestor pairs). With ``joints`` = (joint_parent,
    joint_v, joint_nv) of the model, also the body passes of the body-structured iteration
    (``module.iterate_body_passes``; ``tree_joint0`` set) when the trees' joints allow it
    (:func:`tree_joints`)."""
    if not HAVE_NUMBA:
        return None
    key = ("ltdl", np.asarray(dof_parent, np.int64).tobytes(), np.asarray(tree_starts, np.int64).tobytes(),
           None if joints is None else tuple(np.asarray(a, np.int64).tobytes() for a in joints))
    if key not in _BY_STRUCTURE:
        _BY_STRUCTURE[key] = _generate_ltdl(dof_parent, tree_starts, joints)
    return _BY_STRUCTURE[key]


def _generate_ltdl(dof_parent, tree_starts, joints):
    structures, group = ltdl_structures(np.asarray(dof_parent), np.asarray(tree_starts))
    if any(sum(len(_ancestors(s, k)) for k in range(len(s))) > MAX_PAIRS for s in structures):
        return None
    per_tree = tree_joints(tree_starts, *joints) if joints is not None else None
    tree_joint0, passes = None, None
    if per_tree is not None:  # one structure = (dof parents, joints); group again on both
        both = [(structures[g], j) for g, j in zip(group, per_tree[0])]
        distinct = list(dict.fromkeys(both))
        group = np.array([distinct.index(x) for x in both], dtype=np.int64)
        structures = [d for d, _ in distinct]
        passes = [[*_body_forward_source(g, j), "", "", *_body_backward_source(g, j)]
                  for g, (_, j) in enumerate(distinct)]
        tree_joint0 = per_tree[1]
    source = _module_source("ltdl", [_ltdl_solve_source(g, s) for g, s in enumerate(structures)], passes)
    module, path = _load("ltdl", source)
    return GeneratedTreeSolves("ltdl", module, group, tuple(structures), path, tree_joint0)


def cholesky_tree_solves(tree_starts: np.ndarray) -> GeneratedTreeSolves | None:
    """Generated dense Cholesky solves for trees of these sizes (None without numba, or when a tree
    has more than :data:`MAX_PAIRS` entries below the diagonal)."""
    if not HAVE_NUMBA:
        return None
    key = ("cholesky", np.asarray(tree_starts, np.int64).tobytes())
    if key not in _BY_STRUCTURE:  # looked up once per solve (No Body factors per solve): no re-hashing
        _BY_STRUCTURE[key] = _generate_cholesky(tree_starts)
    return _BY_STRUCTURE[key]


def _generate_cholesky(tree_starts):
    sizes = np.diff(np.asarray(tree_starts, dtype=np.int64))
    structures = sorted({int(s) for s in sizes})
    if any(n * (n - 1) // 2 > MAX_PAIRS for n in structures):
        return None
    group = np.array([structures.index(int(s)) for s in sizes], dtype=np.int64)
    source = _module_source("cholesky", [_cholesky_solve_source(g, n) for g, n in enumerate(structures)])
    module, path = _load("cholesky", source)
    return GeneratedTreeSolves("cholesky", module, group, tuple(structures), path)
