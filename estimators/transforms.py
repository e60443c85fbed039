"""Rigid transforms and rotations (4x4 homogeneous matrices, unit quaternions w-x-y-z).

Transforms are named by the direction they map points: ``transform_a_to_b @ [p_a; 1] =
[p_b; 1]``.
"""

from __future__ import annotations

import numpy as np

from ._validation import as_float_array
from .errors import EstimatorValueError

__all__ = ["make_transform", "invert_transform", "apply_transform", "rotation_from_rotvec",
           "rotvec_from_rotation", "quaternion_from_rotvec", "quaternion_multiply",
           "rotation_from_quaternion", "rotation_angle_between", "look_at"]


def make_transform(R: np.ndarray, t: np.ndarray) -> np.ndarray:
    """The 4x4 transform [[R, t], [0, 1]] from a (3, 3) rotation and a (3,) translation."""
    T = np.eye(4)
    T[:3, :3] = as_float_array("R", R, (3, 3))
    T[:3, 3] = as_float_array("t", t, (3,))
    return T


def invert_transform(T: np.ndarray) -> np.ndarray:
    """Inverse of a rigid 4x4 transform (transform_a_to_b -> transform_b_to_a)."""
    T = as_float_array("T", T, (4, 4))
    R, t = T[:3, :3], T[:3, 3]
    out = np.eye(4)
    out[:3, :3] = R.T
    out[:3, 3] = -R.T @ t
    return out


def apply_transform(T: np.ndarray, points: np.ndarray) -> np.ndarray:
    """Map (N, 3) or (3,) points by the 4x4 transform T."""
    p = np.asarray(points, dtype=float)
    return p @ T[:3, :3].T + T[:3, 3]


def _skew(w: np.ndarray) -> np.ndarray:
    return np.array([[0.0, -w[2], w[1]], [w[2], 0.0, -w[0]], [-w[1], w[0], 0.0]])


def rotation_from_rotvec(rotvec: np.ndarray) -> np.ndarray:
    """Rotation matrix exp([w]x) of a rotation vector (axis * angle in [rad]), Rodrigues."""
    w = as_float_array("rotvec", rotvec, (3,))
    theta = float(np.linalg.norm(w))
    if theta < 1e-12:
        return np.eye(3) + _skew(w)
    k = _skew(w / theta)
    return np.eye(3) + np.sin(theta) * k + (1.0 - np.cos(theta)) * (k @ k)


def rotvec_from_rotation(R: np.ndarray) -> np.ndarray:
    """Rotation vector (axis * angle, angle in [0, pi]) of a rotation matrix."""
    R = as_float_array("R", R, (3, 3))
    q = _quaternion_from_rotation(R)
    w, v = q[0], q[1:]
    s = float(np.linalg.norm(v))
    if s < 1e-12:
        return 2.0 * v
    angle = 2.0 * np.arctan2(s, w)
    if angle > np.pi:
        angle -= 2.0 * np.pi
    return v / s * angle


def _quaternion_from_rotation(R: np.ndarray) -> np.ndarray:
    # Shepperd's method: pick the largest of w, x, y, z to divide by.
    tr = np.trace(R)
    cands = np.array([tr, R[0, 0], R[1, 1], R[2, 2]])
    i = int(np.argmax(cands))
    if i == 0:
        s = np.sqrt(1.0 + tr) * 2
        q = [0.25 * s, (R[2, 1] - R[1, 2]) / s, (R[0, 2] - R[2, 0]) / s, (R[1, 0] - R[0, 1]) / s]
    elif i == 1:
        s = np.sqrt(1.0 + R[0, 0] - R[1, 1] - R[2, 2]) * 2
        q = [(R[2, 1] - R[1, 2]) / s, 0.25 * s, (R[0, 1] + R[1, 0]) / s, (R[0, 2] + R[2, 0]) / s]
    elif i == 2:
        s = np.sqrt(1.0 + R[1, 1] - R[0, 0] - R[2, 2]) * 2
        q = [(R[0, 2] - R[2, 0]) / s, (R[0, 1] + R[1, 0]) / s, 0.25 * s, (R[1, 2] + R[2, 1]) / s]
    else:
        s = np.sqrt(1.0 + R[2, 2] - R[0, 0] - R[1, 1]) * 2
        q = [(R[1, 0] - R[0, 1]) / s, (R[0, 2] + R[2, 0]) / s, (R[1, 2] + R[2, 1]) / s, 0.25 * s]
    q = np.asarray(q)
    return q / np.linalg.norm(q) * (1.0 if q[0] >= 0 else -1.0)


def quaternion_from_rotvec(rotvec: np.ndarray) -> np.ndarray:
    """Unit quaternion (w, x, y, z) of a rotation vector."""
    w = np.asarray(rotvec, dtype=float)
    theta = float(np.linalg.norm(w))
    if theta < 1e-12:
        q = np.array([1.0, 0.5 * w[0], 0.5 * w[1], 0.5 * w[2]])
        return q / np.linalg.norm(q)
    return np.concatenate([[np.cos(theta / 2)], np.sin(theta / 2) * w / theta])


def quaternion_multiply(q1: np.ndarray, q2: np.ndarray) -> np.ndarray:
    """Hamilton product q1 * q2 of (w, x, y, z) quaternions (rotation q2 first, then q1)."""
    w1, x1, y1, z1 = q1
    w2, x2, y2, z2 = q2
    return np.array([w1 * w2 - x1 * x2 - y1 * y2 - z1 * z2,
                     w1 * x2 + x1 * w2 + y1 * z2 - z1 * y2,
                     w1 * y2 - x1 * z2 + y1 * w2 + z1 * x2,
                     w1 * z2 + x1 * y2 - y1 * x2 + z1 * w2])


def rotation_from_quaternion(q: np.ndarray) -> np.ndarray:
    """Rotation matrix of a (w, x, y, z) quaternion (normalised first)."""
    q = as_float_array("q", q, (4,))
    n = np.linalg.norm(q)
    if n == 0:
        raise EstimatorValueError("q must be a non-zero quaternion")
    w, x, y, z = q / n
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                     [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                     [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])


def rotation_angle_between(R1: np.ndarray, R2: np.ndarray) -> float:
    """Angle in [rad] of the relative rotation R1^T R2 (geodesic distance on SO(3))."""
    c = (np.trace(np.asarray(R1).T @ np.asarray(R2)) - 1.0) / 2.0
    return float(np.arccos(np.clip(c, -1.0, 1.0)))


def look_at(eye: np.ndarray, target: np.ndarray, up: np.ndarray = (0.0, 0.0, 1.0)) -> np.ndarray:
    """transform_world_to_camera of an OpenCV camera (x right, y down, z forward) at ``eye``
    looking at ``target``, with ``up`` pointing up in the image."""
    eye = as_float_array("eye", eye, (3,))
    target = as_float_array("target", target, (3,))
    up = as_float_array("up", up, (3,))
    z = target - eye
    if np.linalg.norm(z) == 0:
        raise EstimatorValueError("eye and target must differ")
    z = z / np.linalg.norm(z)
    x = np.cross(z, up)
    if np.linalg.norm(x) < 1e-9:
        raise EstimatorValueError("up must not be parallel to the viewing direction")
    x = x / np.linalg.norm(x)
    y = np.cross(z, x)
    R_camera_to_world = np.column_stack([x, y, z])
    return invert_transform(make_transform(R_camera_to_world, eye))
