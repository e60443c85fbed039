"""Rigid-body terms of a multi-tree model computed per chunk of whole kinematic trees.

A scene of many objects is one Pinocchio model of many independent trees (a free body is a tree of
two joints). Its mass matrix is block diagonal over the trees, and every term the stepper needs
(M(q), the bias forces C(q, v)v + g(q), the world-frame joint Jacobians and placements, the
energy) is computed tree by tree. One ``pinocchio.Data`` of the whole model is the wrong tool at
scale: Pinocchio allocates its second-order derivative tensors at n_v³ doubles each (3.1 GB at
n_v = 360, ~30 GB at n_v = 960), and its CRBA writes a dense n_v × n_v matrix.

:class:`TreeDynamics` copies consecutive whole trees into sub-models of at most
:data:`CHUNK_DOFS` dofs (a larger tree gets a chunk of its own) and runs the same Pinocchio
algorithms on each: the arithmetic per tree is the one the whole model's call performs, so the
results agree with it to round-off (``tests/test_sim_scale.py``), while the memory is
O(n_v · CHUNK_DOFS²) and the cost O(n_v).
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["CHUNK_DOFS", "TreeDynamics"]

CHUNK_DOFS = 36
"""Most dofs of one sub-model (six free bodies). A ``pinocchio.Data`` of n dofs takes ~2 MB at
n = 36, ~4 MB at 48 and ~31 MB at 96 (its n³ tensors), so small chunks keep the memory near linear
in n_v; larger chunks mean fewer Pinocchio calls per step (three per chunk)."""


class _Chunk:
    """Some consecutive whole trees of a model as a Pinocchio model of their own."""

    def __init__(self, model: Any, joints: list[int]):
        import pinocchio as pin

        sub = pin.Model()
        sub.gravity = model.gravity
        local = {0: 0}
        for j in joints:  # parents precede children in Pinocchio's joint order
            jid = sub.addJoint(local[int(model.parents[j])], model.joints[j], model.jointPlacements[j], model.names[j])
            sub.appendBodyToJoint(jid, model.inertias[j], pin.SE3.Identity())
            local[j] = jid
        first = model.joints[joints[0]]
        self.v = slice(int(first.idx_v), int(first.idx_v) + sub.nv)
        self.q = slice(int(first.idx_q), int(first.idx_q) + sub.nq)
        for j in joints:
            jm, lm = model.joints[j], sub.joints[local[j]]
            if jm.idx_v - self.v.start != lm.idx_v or jm.idx_q - self.q.start != lm.idx_q:
                raise ValueError("a chunk's joints must be contiguous in q and v (whole trees in joint order)")
        sub.armature = np.asarray(model.armature)[self.v].copy()  # rotor inertia on the diagonal of M
        self.model, self.data, self.local = sub, sub.createData(), local


class TreeDynamics:
    """M(q), bias forces, joint Jacobians, placements and energy of a multi-tree model, per chunk.

    Args:
        model: the scene's Pinocchio model (not modified).
        tree_starts: (n_trees + 1,) dof offsets of its trees (``Scene.tree_starts``).
        tree_of_joint: (n_joints,) tree of each joint (−1 for the universe; ``Scene.tree_of_joint``).
        chunk_dofs: most dofs per sub-model (:data:`CHUNK_DOFS`).
    """

    def __init__(self, model: Any, tree_starts: np.ndarray, tree_of_joint: np.ndarray, chunk_dofs: int = CHUNK_DOFS):
        self.nv = int(model.nv)
        starts = np.asarray(tree_starts, dtype=np.int64)
        tree_of_joint = np.asarray(tree_of_joint)
        groups: list[list[int]] = [[]]  # trees, consecutive, ≤ chunk_dofs dofs per group (or one tree)
        first = 0
        for t in range(starts.size - 1):
            if groups[-1] and starts[t + 1] - first > chunk_dofs:
                groups.append([])
                first = int(starts[t])
            groups[-1].append(t)
        chunk_of_tree = np.empty(starts.size - 1, dtype=np.int64)
        for c, ts in enumerate(groups):
            chunk_of_tree[ts] = c
        members: list[list[int]] = [[] for _ in groups]
        for j in range(1, model.njoints):  # once per model
            members[int(chunk_of_tree[tree_of_joint[j]])].append(j)
        self.chunks = [_Chunk(model, js) for js in members]
        self.chunk_v = np.array([ch.v.start for ch in self.chunks] + [self.nv], dtype=np.int64)  # dof offsets
        self.chunk_of_tree = chunk_of_tree
        self.joint_chunk = np.full(model.njoints, -1, dtype=np.int64)
        self.joint_local = np.zeros(model.njoints, dtype=np.int64)
        for c, ch in enumerate(self.chunks):
            for j, k in ch.local.items():
                if j:
                    self.joint_chunk[j], self.joint_local[j] = c, k

    def mass(self, q: np.ndarray, M: np.ndarray) -> None:
        """Write each chunk's CRBA block of M(q) into ``M`` (n_v, n_v) (upper triangles, as
        ``pinocchio.crba``); the entries between chunks are left as they are (zero)."""
        import pinocchio as pin

        for ch in self.chunks:  # loop over chunks (one Pinocchio call each)
            M[ch.v, ch.v] = pin.crba(ch.model, ch.data, q[ch.q])

    def mass_chunks(self, q: np.ndarray, out: np.ndarray) -> None:
        """Each chunk's CRBA block of M(q) (upper triangle, as ``pinocchio.crba``) into
        ``out[c, :n_c, :n_c]``, ``out`` (n_chunks, c_max, c_max) (:attr:`chunk_v`: their dofs):
        the compact form, without the n_v × n_v matrix."""
        import pinocchio as pin

        for c, ch in enumerate(self.chunks):
            n = ch.v.stop - ch.v.start
            out[c, :n, :n] = pin.crba(ch.model, ch.data, q[ch.q])

    def nonlinear_effects(self, q: np.ndarray, v: np.ndarray) -> np.ndarray:
        """(n_v,) C(q, v) v + g(q) [N or N·m]."""
        import pinocchio as pin

        out = np.empty(self.nv)
        for ch in self.chunks:
            out[ch.v] = pin.nonLinearEffects(ch.model, ch.data, q[ch.q], v[ch.v])
        return out

    def jacobians(self, q: np.ndarray, Jw: np.ndarray) -> None:
        """Forward kinematics and the world-frame joint Jacobians (``pinocchio.computeJointJacobians``)
        at q, written into ``Jw`` (6, n_v); :meth:`placement` then reads the joints' poses."""
        import pinocchio as pin

        for ch in self.chunks:
            Jw[:, ch.v] = pin.computeJointJacobians(ch.model, ch.data, q[ch.q])

    def placement(self, j: int) -> Any:
        """World placement (``pinocchio.SE3``) of joint j after :meth:`jacobians`."""
        return self.chunks[int(self.joint_chunk[j])].data.oMi[int(self.joint_local[j])]

    def energy(self, q: np.ndarray, v: np.ndarray) -> float:
        """Kinetic + gravitational energy [J] (``pinocchio.computeKineticEnergy`` +
        ``computePotentialEnergy`` summed over the chunks)."""
        import pinocchio as pin

        e = 0.0
        for ch in self.chunks:
            qc = q[ch.q]
            e += pin.computeKineticEnergy(ch.model, ch.data, qc, v[ch.v]) + pin.computePotentialEnergy(ch.model, ch.data, qc)
        return e

    def view(self, Jw: np.ndarray) -> "_KinematicsView":
        """The joint placements and Jacobians of the last :meth:`jacobians` call in the shape of a
        ``pinocchio.Data`` (``.oMi[j]``, ``.J``), for code written against one."""
        return _KinematicsView(self, Jw)


class _KinematicsView:
    def __init__(self, dyn: TreeDynamics, Jw: np.ndarray):
        self.oMi = _Placements(dyn)
        self.J = Jw


class _Placements:
    def __init__(self, dyn: TreeDynamics):
        self._dyn = dyn

    def __getitem__(self, j: int) -> Any:
        return self._dyn.placement(int(j))
