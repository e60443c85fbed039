"""Linear complementarity systems and problems.

Public API::

    from lcs import LCS, solve_lcp, solve_lcp_batch
    lcs = LCS(A, B, D, d, E, F, H, c, dt=0.01)   # per-knot lists => time-varying
    x_next, lam = lcs.step(x, u)                 # solves LCP(E x + H u + c, F)
    sol = solve_lcp(F, q)                        # sol.z, sol.w, sol.status, sol.iterations

``lcs`` depends on neither ``c3mpc`` nor ``plants``.
"""

from .errors import LCPSolveError, LCSError, LCSTypeError, LCSValueError
from .factory import ContactData, SmoothLinearization, build_lcs, euler_kinematics, lambda_size
from .lcp import LCPBatchResult, LCPResult, LCPStatus, solve_lcp, solve_lcp_batch
from .lcs import LCS, LCSKnot, Rollout

__all__ = [
    "LCS",
    "LCSKnot",
    "Rollout",
    "solve_lcp",
    "solve_lcp_batch",
    "LCPResult",
    "LCPBatchResult",
    "LCPStatus",
    "LCSError",
    "LCSValueError",
    "LCSTypeError",
    "LCPSolveError",
    "build_lcs",
    "SmoothLinearization",
    "ContactData",
    "euler_kinematics",
    "lambda_size",
]
