r"""Multibody -> LCS factory (seed 003 §IV), pure numpy.

Given the linearization of a multibody system's smooth dynamics at :math:`(x^*, u^*)` and the
contact quantities at :math:`q^*`, build the discrete LCS (seed 003 eq. 1) in one of three
contact models:

* ``"stewart_trinkle"`` (eqs. 8-9): :math:`\lambda = [\gamma; \lambda_n; \lambda_t]`,
  :math:`n_\lambda = 2 n_c + \sum_i 2 d_i`;
* ``"anitescu"`` (eqs. 12-13): one :math:`\lambda` per friction-cone edge,
  :math:`n_\lambda = \sum_i 2 d_i`, and :math:`F \succeq 0`;
* ``"frictionless_spring"``: one normal force per contact, :math:`n_\lambda = n_c`.

Conventions (derivation in ``docs/lcs-factory.md``): state :math:`x = [q; v]` with
:math:`n_q \ne n_v` allowed; :math:`\lambda` is a **force** (not an impulse); semi-implicit
Euler

.. math::

    v^+ &= v + \Delta t\,(J_{f,q} q + J_{f,v} v + J_{f,u} u + d_v) + \Delta t\, M^{-1} J_\lambda^T
           \lambda, \\
    q^+ &= K_q q + K_v v^+ + q_c ,

where :math:`(K_q, K_v, q_c)` is the (linearized) kinematic step. For the paper's
:math:`q^+ = q + \Delta t N(q^*) v^+` use :func:`euler_kinematics`. The factory knows nothing
about Pinocchio: ``plants.multibody`` computes the inputs.

The module is vectorized: no Python loop over contacts or friction directions.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ._validation import check_number
from .errors import LCSTypeError, LCSValueError
from .lcs import LCS

__all__ = [
    "CONTACT_MODELS",
    "canonical_contact_model",
    "SmoothLinearization",
    "ContactData",
    "euler_kinematics",
    "lambda_size",
    "build_lcs",
    "build_lcs_matrices",
]

CONTACT_MODELS = ("stewart_trinkle", "anitescu", "frictionless_spring")
#: Other accepted spellings (the authors' YAML uses ``stewart_and_trinkle``).
CONTACT_MODEL_ALIASES = {"stewart_and_trinkle": "stewart_trinkle"}


@dataclass(frozen=True)
class SmoothLinearization:
    r"""Linearization of the smooth dynamics and of the kinematic step at :math:`(x^*, u^*)`.

    All arrays are float64. Shapes use n_q (configuration coordinates), n_v (velocities) and
    n_u (inputs).

    Attributes:
        Minv: (n_v, n_v) inverse mass matrix :math:`M(q^*)^{-1}`.
        Jf_q: (n_v, n_q) :math:`\partial f / \partial q` of the smooth acceleration
            :math:`f(q, v, u) = M^{-1}(B u - C(q, v))` (in configuration coordinates).
        Jf_v: (n_v, n_v) :math:`\partial f / \partial v`.
        Jf_u: (n_v, n_u) :math:`\partial f / \partial u`.
        d_v: (n_v,) :math:`f^* - J_{f,q} q^* - J_{f,v} v^* - J_{f,u} u^*`.
        K_q: (n_q, n_q) kinematic step, :math:`q^+ = K_q q + K_v v^+ + q_c`.
        K_v: (n_q, n_v) idem (for the paper's Euler step, :math:`\Delta t\, N(q^*)`).
        q_c: (n_q,) idem.
        N_plus: (n_v, n_q) :math:`N^+(q^*)`, maps a configuration change :math:`q - q^*` to a
            velocity-space (tangent) displacement; the identity when :math:`n_q = n_v`.
        q_star: (n_q,) the configuration of the linearization.
    """

    Minv: np.ndarray
    Jf_q: np.ndarray
    Jf_v: np.ndarray
    Jf_u: np.ndarray
    d_v: np.ndarray
    K_q: np.ndarray
    K_v: np.ndarray
    q_c: np.ndarray
    N_plus: np.ndarray
    q_star: np.ndarray

    @property
    def n_q(self) -> int:
        """Number of configuration coordinates."""
        return int(self.q_star.shape[0])

    @property
    def n_v(self) -> int:
        """Number of velocities."""
        return int(self.Minv.shape[0])

    @property
    def n_u(self) -> int:
        """Number of inputs."""
        return int(self.Jf_u.shape[1])

    def check(self) -> None:
        """Raise ValueError naming the first array with a wrong shape or a non-finite entry."""
        n_q, n_v, n_u = self.n_q, self.n_v, self.n_u
        shapes = {"Minv": (n_v, n_v), "Jf_q": (n_v, n_q), "Jf_v": (n_v, n_v),
                  "Jf_u": (n_v, n_u), "d_v": (n_v,), "K_q": (n_q, n_q), "K_v": (n_q, n_v),
                  "q_c": (n_q,), "N_plus": (n_v, n_q), "q_star": (n_q,)}
        for name, shape in shapes.items():
            arr = getattr(self, name)
            if not isinstance(arr, np.ndarray) or arr.shape != shape:
                raise LCSValueError(f"SmoothLinearization.{name} must have shape {shape}, got "
                                    f"{getattr(arr, 'shape', type(arr).__name__)}")
            if arr.dtype.kind not in "fiu":
                raise LCSTypeError(f"SmoothLinearization.{name} must hold real numbers, got dtype "
                                   f"{arr.dtype}")
            if not np.all(np.isfinite(arr)):
                raise LCSValueError(f"SmoothLinearization.{name} has a non-finite entry")


@dataclass(frozen=True)
class ContactData:
    r"""Contact quantities at :math:`q^*` for :math:`n_c` contacts.

    Attributes:
        phi: (n_c,) signed distances :math:`\phi(q^*)` in [m].
        J_n: (n_c, n_v) normal Jacobians (:math:`\dot\phi = J_n v`).
        J_t: (n_e, n_v) tangent Jacobians, one row per friction-polytope edge, grouped by contact
            (:math:`n_e = \sum_i 2 d_i`).
        mu: (n_c,) friction coefficients (>= 0).
        num_edges: (n_c,) integer 2 d_i per contact (each >= 2 and even).
    """

    phi: np.ndarray
    J_n: np.ndarray
    J_t: np.ndarray
    mu: np.ndarray
    num_edges: np.ndarray

    @property
    def n_c(self) -> int:
        """Number of contacts."""
        return int(self.phi.shape[0])

    @property
    def n_e(self) -> int:
        """Total number of friction-polytope edges."""
        return int(self.J_t.shape[0])

    def check(self, n_v: int) -> None:
        """Raise ValueError on inconsistent shapes, negative mu, odd/short edge counts, NaN."""
        n_c = self.n_c
        ne = np.asarray(self.num_edges)
        if ne.shape != (n_c,) or (n_c and (ne.min() < 2 or np.any(ne % 2))):
            raise LCSValueError(f"ContactData.num_edges must be ({n_c},) even integers >= 2 "
                                f"(2 d per contact), got {ne!r}")
        shapes = {"phi": (n_c,), "J_n": (n_c, n_v), "J_t": (int(ne.sum()), n_v), "mu": (n_c,)}
        for name, shape in shapes.items():
            arr = getattr(self, name)
            if not isinstance(arr, np.ndarray) or arr.shape != shape:
                raise LCSValueError(f"ContactData.{name} must have shape {shape}, got "
                                    f"{getattr(arr, 'shape', type(arr).__name__)}")
            if arr.dtype.kind not in "fiu":
                raise LCSTypeError(f"ContactData.{name} must hold real numbers, got dtype "
                                   f"{arr.dtype}")
            if not np.all(np.isfinite(arr)):
                raise LCSValueError(f"ContactData.{name} has a non-finite entry")
        if n_c and self.mu.min() < 0:
            raise LCSValueError(f"ContactData.mu must be >= 0, got {self.mu}")


def euler_kinematics(N: np.ndarray, dt: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    r"""The paper's kinematic step :math:`q^+ = q + \Delta t\, N v^+` as ``(K_q, K_v, q_c)``.

    Args:
        N: (n_q, n_v) velocity-to-:math:`\dot q` map at :math:`q^*`.
        dt: time step in [s].
    """
    N = np.asarray(N, dtype=float)
    return np.eye(N.shape[0]), dt * N, np.zeros(N.shape[0])


def canonical_contact_model(contact_model: str) -> str:
    """The canonical name of ``contact_model`` (one of :data:`CONTACT_MODELS`).

    Raises:
        ValueError: an unknown name (the message lists the valid ones).
    """
    name = CONTACT_MODEL_ALIASES.get(contact_model, contact_model) \
        if isinstance(contact_model, str) else contact_model
    if name not in CONTACT_MODELS:
        raise LCSValueError(f"contact_model must be one of {CONTACT_MODELS}, got "
                            f"{contact_model!r}")
    return name


def lambda_size(contact_model: str, num_edges: Any) -> int:
    """n_lambda of ``contact_model`` for contacts with ``num_edges`` = 2 d_i each."""
    contact_model = canonical_contact_model(contact_model)
    ne = np.asarray(num_edges, dtype=int).reshape(-1)
    n_c, n_e = ne.shape[0], int(ne.sum())
    if contact_model == "stewart_trinkle":
        return 2 * n_c + n_e
    if contact_model == "anitescu":
        return n_e
    if contact_model == "frictionless_spring":
        return n_c
    raise LCSValueError(f"contact_model must be one of {CONTACT_MODELS}, got {contact_model!r}")


def build_lcs_matrices(
    lin: SmoothLinearization,
    contacts: ContactData,
    contact_model: str = "stewart_trinkle",
    dt: float = 0.01,
    *,
    spring_stiffness: float = 1000.0,
    check: bool = True,
) -> tuple[np.ndarray, ...]:
    r"""The eight LCS matrices ``(A, B, D, d, E, F, H, c)`` (see :func:`build_lcs`)."""
    contact_model = canonical_contact_model(contact_model)
    dt = check_number("dt", dt, minimum=0.0, exclusive_minimum=True)
    spring_stiffness = check_number("spring_stiffness", spring_stiffness, minimum=0.0,
                                    exclusive_minimum=True)
    if check:
        lin.check()
        contacts.check(lin.n_v)
    n_q, n_v = lin.n_q, lin.n_v
    n_c, n_e = contacts.n_c, contacts.n_e
    phi, J_n, J_t, mu = contacts.phi, contacts.J_n, contacts.J_t, contacts.mu
    num_edges = np.asarray(contacts.num_edges, dtype=int)
    owner = np.repeat(np.arange(n_c), num_edges)  # contact of each edge: E_t = onehot(owner)^T

    # v+ = Vq q + Vv v + Vu u + Vc + V_lam lam  (semi-implicit Euler, lam a force)
    Vq = dt * lin.Jf_q
    Vv = dt * lin.Jf_v
    Vv[np.diag_indices(n_v)] += 1.0
    Vu = dt * lin.Jf_u
    Vc = dt * lin.d_v
    # generalized-force map J_lam (n_lam, n_v) and the rows' "velocity" Jacobian per model
    if contact_model == "stewart_trinkle":
        J_force = np.concatenate([J_n, J_t], axis=0)  # gamma has no force
    elif contact_model == "anitescu":
        J_force = J_n[owner] + mu[owner, None] * J_t  # J_c = E_t^T J_n + mu J_t
    else:
        J_force = J_n
    MinvJT = lin.Minv @ J_force.T  # (n_v, n_force)
    V_lam = dt * MinvJT
    n_lam = lambda_size(contact_model, num_edges)
    off = n_c if contact_model == "stewart_trinkle" else 0  # gamma columns carry no force

    # q+ = K_q q + K_v v+ + q_c
    A = np.empty((n_q + n_v, n_q + n_v))
    A[n_q:, :n_q] = Vq
    A[n_q:, n_q:] = Vv
    A[:n_q, :n_q] = lin.K_q + lin.K_v @ Vq
    A[:n_q, n_q:] = lin.K_v @ Vv
    B = np.empty((n_q + n_v, Vu.shape[1]))
    B[n_q:] = Vu
    B[:n_q] = lin.K_v @ Vu
    D = np.zeros((n_q + n_v, n_lam))
    D[n_q:, off:] = V_lam
    D[:n_q, off:] = lin.K_v @ V_lam
    d = np.empty(n_q + n_v)
    d[n_q:] = Vc
    d[:n_q] = lin.K_v @ Vc + lin.q_c

    # tangent-space configuration change: dq = N+ (q - q*)
    JnP = J_n @ lin.N_plus  # (n_c, n_q)
    gap0 = phi - JnP @ lin.q_star  # phi(q*) + J_n N+ (q - q*) = gap0 + JnP q
    E = np.zeros((n_lam, n_q + n_v))
    F = np.zeros((n_lam, n_lam))
    H = np.zeros((n_lam, Vu.shape[1]))
    c = np.zeros(n_lam)
    if contact_model == "stewart_trinkle":
        # rows: [gamma (n_c); lam_n (n_c); lam_t (n_e)]
        n0, t0 = n_c, 2 * n_c
        # friction cone: mu lam_n - E_t lam_t
        F[np.arange(n_c), n0 + np.arange(n_c)] = mu
        F[owner, t0 + np.arange(n_e)] = -1.0
        # normal: phi + J_n N+ (q - q*) + dt J_n v+
        Jn_dt = dt * J_n
        E[n0:t0, :n_q] = JnP + Jn_dt @ Vq
        E[n0:t0, n_q:] = Jn_dt @ Vv
        H[n0:t0] = Jn_dt @ Vu
        c[n0:t0] = gap0 + Jn_dt @ Vc
        F[n0:t0, n_c:] = Jn_dt @ V_lam
        # tangent: E_t^T gamma + J_t v+
        E[t0:, :n_q] = J_t @ Vq
        E[t0:, n_q:] = J_t @ Vv
        H[t0:] = J_t @ Vu
        c[t0:] = J_t @ Vc
        F[t0:, n_c:] = J_t @ V_lam
        F[t0 + np.arange(n_e), owner] = 1.0
    elif contact_model == "anitescu":
        # rows: E_t^T (phi + J_n N+ (q - q*)) / dt + J_c v+
        J_c = J_force
        E[:, :n_q] = JnP[owner] / dt + J_c @ Vq
        E[:, n_q:] = J_c @ Vv
        H[:] = J_c @ Vu
        c[:] = gap0[owner] / dt + J_c @ Vc
        F[:] = J_c @ V_lam  # dt J_c M^-1 J_c^T  (PSD)
    else:
        # spring: 0 <= lam_n  ⊥  lam_n + k (phi + J_n N+ (q - q*)) >= 0
        k = float(spring_stiffness)
        if not (k > 0 and np.isfinite(k)):
            raise LCSValueError(f"spring_stiffness must be positive in [N/m], got "
                                f"{spring_stiffness}")
        E[:, :n_q] = k * JnP
        F[np.diag_indices(n_c)] = 1.0
        c[:] = k * gap0
    return A, B, D, d, E, F, H, c


def build_lcs(
    lin: SmoothLinearization,
    contacts: ContactData,
    contact_model: str = "stewart_trinkle",
    dt: float = 0.01,
    *,
    spring_stiffness: float = 1000.0,
    N: int | None = None,
    check: bool = True,
) -> LCS:
    r"""Build the LCS of a multibody system linearized at :math:`(x^*, u^*)`.

    Args:
        lin: smooth-dynamics linearization and kinematic step (:class:`SmoothLinearization`).
        contacts: contact quantities at :math:`q^*` (:class:`ContactData`).
        contact_model: ``"stewart_trinkle"`` (eqs. 8-9), ``"anitescu"`` (eqs. 12-13) or
            ``"frictionless_spring"``.
        dt: time step in [s] (must be the one ``lin``'s kinematic step was built for).
        spring_stiffness: k in [N/m] of the frictionless spring model,
            :math:`\lambda_n = \max(0, -k\,\phi)` with :math:`\phi` linearized in q.
        N: when given, the LCS is returned stacked for N knots (time-varying form of the same
            matrices); ``None`` returns a time-invariant LCS.
        check: validate the shapes/finiteness of the inputs (skip only in trusted hot loops).

    Returns:
        The :class:`lcs.LCS` with λ ordered ``[γ; λ_n; λ_t]`` (Stewart-Trinkle), per edge
        (Anitescu, grouped per contact) or per contact (spring). λ is a force in [N].

    Raises:
        ValueError: unknown contact model, inconsistent shapes, NaN, ``dt <= 0``, mu < 0.
    """
    mats = build_lcs_matrices(lin, contacts, contact_model, dt,
                              spring_stiffness=spring_stiffness, check=check)
    # the factory's matrices have the right shapes by construction: without ``check`` (hot
    # loops) only their finiteness is checked (LCS._from_trusted; same matrices)
    lcs = LCS(*mats, dt=dt) if check else LCS._from_trusted(*mats, dt=float(dt))
    if N is not None:
        if isinstance(N, bool) or not isinstance(N, (int, np.integer)) or N < 1:
            raise LCSValueError(f"N must be a positive number of knots or None, got {N!r}")
        lcs = lcs.as_time_varying(int(N))
    return lcs
