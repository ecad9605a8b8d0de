"""Query release: answer many linear (counting) queries from one private histogram.

Data model: :class:`Domain`, :class:`Histogram`, :class:`CellQuery`,
:class:`MarginalWorkload`, :class:`LinearWorkload` (general [0, 1] query matrices).
Mechanisms: :class:`OnlinePMW` (private multiplicative
weights via NumericSparse), :class:`MWEM`, :class:`BoostingForQueries`, and the Laplace /
Gaussian baselines.  Sources: Dwork & Roth 2014 ch. 4 and 6; Hardt, Ligett, McSherry
2012; Dwork, Rothblum, Vadhan 2010.  The errata labels in these docstrings (E1-E8,
B1-B6) are the corrections to those papers listed under "Errata kept fixed" in
docs/release.md (the "Query release" page of the documentation).
"""

from .baselines import (
    gaussian_marginals,
    gaussian_per_query,
    laplace_marginals,
    laplace_per_query,
    marginal_sensitivity,
)
from .boosting import BoostingForQueries, BoostingResult, boosting_alpha, reweight
from .cost import PrivacyCost
from .domain import Domain, Histogram
from .mwem import MWEM, MWEMResult
from .pmw import OnlinePMW, numeric_sparse_alpha, pmw_min_alpha, pmw_theory_alpha
from .workloads import CellQuery, LinearQuery, LinearWorkload, MarginalWorkload

__all__ = [
    "Domain",
    "Histogram",
    "CellQuery",
    "LinearQuery",
    "MarginalWorkload",
    "LinearWorkload",
    "PrivacyCost",
    "laplace_per_query",
    "laplace_marginals",
    "gaussian_per_query",
    "gaussian_marginals",
    "marginal_sensitivity",
    "MWEM",
    "MWEMResult",
    "OnlinePMW",
    "pmw_theory_alpha",
    "pmw_min_alpha",
    "numeric_sparse_alpha",
    "BoostingForQueries",
    "BoostingResult",
    "boosting_alpha",
    "reweight",
]
