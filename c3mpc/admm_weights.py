"""Scale-aware ADMM weights G = U for C3 (docs/c3.md, "Scale-aware ADMM weights").

The implementation is :mod:`lcs.scales` (pure LCS and cost algebra, also used by
``plants.load_task_file`` for ``planning: {G: scaled}``); this module is its C3-side name.
"""

from lcs.scales import DEFAULT_ADMM_WEIGHT_FRACTION, scaled_admm_weights

__all__ = ["scaled_admm_weights", "DEFAULT_ADMM_WEIGHT_FRACTION"]
