"""Anderson acceleration of a fixed-point map q ↦ G(q) (type II, Walker & Ni 2011), as Peng et
al. 2018 ("Anderson Acceleration for Geometry Optimization and Physics Simulation", ACM TOG
37(4):42) apply it to the local-global iteration of Projective Dynamics. The math: ``docs/deformables.md`` §3.

With g_k = G(q_k), the residual f_k = g_k − q_k and the last j ≤ m differences
ΔG = [g_{i+1} − g_i], ΔF = [f_{i+1} − f_i] (i = k − j … k − 1), the accelerated iterate is

    θ* = argmin_θ ‖f_k − ΔF θ‖₂,   q_{k+1} = g_k − ΔG θ*

i.e. the affine combination of the last j + 1 images whose combined residual is least. With no
history (m = 0 or the first call) it returns g_k: the plain iteration. Peng et al.'s energy
safeguard is the caller's: it owns the energy. ΔG and ΔF do not change when G is shifted by a
constant, which lets a caller keep them from one time step to the next (:meth:`new_map`).
"""

from __future__ import annotations

from collections import deque

import numpy as np

__all__ = ["AndersonMixer"]


class AndersonMixer:
    """Type-II Anderson mixing with a window of the last ``window`` (m) differences.

    ``window = 0`` makes :meth:`mix` the identity on g (the plain fixed-point iteration).
    Arrays of any shape; they are flattened for the least-squares problem (size m, solved by
    ``numpy.linalg.lstsq``, so a rank-deficient ΔF gives the minimum-norm θ).
    """

    def __init__(self, window: int):
        if isinstance(window, bool) or not isinstance(window, (int, np.integer)) or window < 0:
            raise ValueError(f"window must be an integer >= 0, got {window!r}")
        self.window = int(window)
        self._dG: deque = deque(maxlen=max(self.window, 1))
        self._dF: deque = deque(maxlen=max(self.window, 1))
        self._last: tuple[np.ndarray, np.ndarray] | None = None

    @property
    def depth(self) -> int:
        """Differences held now (0 … window)."""
        return len(self._dF) if self.window else 0

    def reset(self) -> None:
        """Forget the differences (after a rejected iterate). The last pair (g_k, f_k) stays: the
        caller restarts from q_{k+1} = g_k, so the next call's difference is a true secant of G."""
        self._dG.clear()
        self._dF.clear()

    def new_map(self) -> None:
        """The map G changed by a constant (the next time step): keep the differences, which a
        constant shift of G leaves unchanged, and drop the last pair, whose difference with the
        next one would include the shift."""
        self._last = None

    def mix(self, q: np.ndarray, g: np.ndarray) -> np.ndarray:
        """Record the pair (q_k, g_k = G(q_k)) and return the accelerated q_{k+1} (shape of g)."""
        g = np.asarray(g, float)
        f = g - q
        if self.window == 0:
            return g
        if self._last is not None:
            g_prev, f_prev = self._last
            self._dG.append((g - g_prev).ravel())
            self._dF.append((f - f_prev).ravel())
        self._last = (g.copy(), f)
        if not self._dF:
            return g
        dF = np.stack(self._dF, axis=1)  # (N, j)
        theta = np.linalg.lstsq(dF, f.ravel(), rcond=None)[0]
        return g - (np.stack(self._dG, axis=1) @ theta).reshape(g.shape)
