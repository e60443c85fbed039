"""c3mpc: consensus complementarity control (C3) for contact-rich robots.

Public API::

    from c3mpc import C3, C3Options, C3Result, solve_miqp_mpc
    opts = C3Options(projection="miqp", admm_iter=10, rho=1.0, rho_scale=2.0)
    ctrl = C3(lcs, Q, R, G, U, N=10, x_des=None, QN=None, options=opts)
    res = ctrl.solve(x0)            # res.u[0] is the input to apply
    ref = solve_miqp_mpc(lcs, Q, R, N=10, x0=x0)   # eq. (15) big-M baseline, same result type
    log = run_closed_loop(plant, ctrl, x0, steps)              # in the plant's own LCS dynamics
    log = run_in_simulator(plant, ctrl, simulator, 3.0, control_rate=10.0)  # in plants.sim
"""

from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as _distribution_version

from .c3 import C3
from .errors import (C3Error, C3TypeError, C3ValueError, GurobiLicenseError,
                     SolverUnavailableError)
from .options import PROJECTIONS, C3Options
from .qp_step import LinearConstraint
from .result import C3Result, C3Status
from .runner import ClosedLoopLog, run_closed_loop
from .sim_loop import StateMap, run_in_simulator

try:
    __version__ = _distribution_version("c3mpc")
except PackageNotFoundError:  # imported from a source tree that was never installed
    __version__ = "0+unknown"


def __getattr__(name: str):
    if name == "solve_miqp_mpc":  # imports gurobipy/pyscipopt only when used
        from .miqp_mpc import solve_miqp_mpc

        return solve_miqp_mpc
    raise AttributeError(f"module 'c3mpc' has no attribute {name!r}")


__all__ = [
    "__version__",
    "C3",
    "C3Options",
    "C3Result",
    "C3Status",
    "PROJECTIONS",
    "LinearConstraint",
    "solve_miqp_mpc",
    "run_closed_loop",
    "ClosedLoopLog",
    "run_in_simulator",
    "StateMap",
    "C3Error",
    "C3ValueError",
    "C3TypeError",
    "GurobiLicenseError",
    "SolverUnavailableError",
]
