"""Composition theorems, privacy-loss conversions and a thread-safe privacy budget.

A package with one module per job: :mod:`.composition`, :mod:`.optimal`, :mod:`.zcdp`,
:mod:`.rdp`, :mod:`.gdp`, :mod:`.pld`, :mod:`.accountant`, :mod:`.divergences`,
:mod:`.rules` (the arithmetic of a budget's composition rules), :mod:`.budget` (the
budget: a rule and a store), :mod:`.capacity`; every public name is re-exported here.

Everything here is pure bookkeeping: no function in this package touches data or draws
noise.  Mechanisms call :meth:`PrivacyBudget.spend` *before* they draw noise, so an
overspending request is refused while nothing has been released yet.

Contents
--------
Composition of (epsilon, delta)-DP mechanisms
    :func:`basic_composition`, :func:`advanced_composition`,
    :func:`heterogeneous_advanced_composition`, :func:`advanced_composition_per_step`,
    :func:`product_mechanism_privacy`, :func:`optimal_composition`,
    :func:`optimal_composition_delta`; results are :class:`EpsilonDelta` named tuples.
Zero-concentrated DP (Bun & Steinke 2016)
    :func:`gaussian_zcdp`, :func:`pure_dp_to_zcdp`, :func:`zcdp_compose`,
    :func:`zcdp_to_dp`, :func:`zcdp_delta`, :func:`zcdp_budget`.
Renyi DP (Mironov 2017)
    :data:`DEFAULT_RDP_ORDERS`, :func:`rdp_gaussian`, :func:`rdp_laplace`,
    :func:`rdp_compose`, :func:`rdp_to_dp` (an :class:`RDPConversion`).
Divergences of finite distributions (Dwork & Roth Def. 3.5-3.6, Lemma 3.18)
    :func:`kl_divergence`, :func:`max_divergence`, :func:`approximate_max_divergence`,
    :func:`hockey_stick_divergence`, :func:`statistical_distance`, :func:`check_kl_bound`.
Gaussian DP (Dong, Roth & Su 2022): exact composition of Gaussian mechanisms
    :func:`gaussian_gdp`, :func:`gdp_compose`, :func:`gdp_delta`, :func:`gdp_to_dp`,
    :func:`gdp_mu`, :func:`gdp_sigma`.
Privacy loss distributions (:mod:`.pld`, pessimistic by construction)
    :class:`Mechanism` and its builders :func:`pld_gaussian`, :func:`pld_laplace`,
    :func:`pld_discrete_laplace`, :func:`pld_discrete_gaussian`,
    :func:`pld_randomized_response`, :func:`pld_pure_dp`; :func:`pld_compose`,
    :class:`ComposedPLD`.
One accountant (:mod:`.accountant`)
    :class:`Accountant` (methods "pld", "gdp", "rdp", "zcdp", "optimal", "basic"),
    :func:`calibrate_gaussian`, :func:`calibrate_laplace`.
How many releases fit (:mod:`.capacity`)
    :func:`max_releases`, :func:`max_releases_gaussian`, :func:`max_releases_laplace`.
Budget
    :class:`PrivacyBudget` (with :meth:`~PrivacyBudget.spend_parallel`), :class:`Reservation`, :class:`LedgerEntry`,
    :class:`PrivacyAmount` (the one privacy-cost class, :class:`Cost`).

Rounding
--------
Every epsilon or delta returned here is an upper bound: closed forms evaluated in
floating point are rounded up by a few units in the last place (``_up``), root finders
return the end of their bracket that is on the safe side, and the budget does its
arithmetic exactly on :class:`fractions.Fraction` (of the floats it was given) or, where
a square root or logarithm is unavoidable, rounds every step against the caller.

Errata honoured here
------------------------------------------------
* Dwork & Roth Example 3.7 rounds the per-step budget to 1/801; that value composes to
  epsilon' ~ 1.0143 > 1.  The exact largest per-step epsilon is ~ 0.00123104 ~ 1/812.32.
* The lecture notes on private multiplicative weights ("almost always" DP of the
  k-fold product mechanism, Thm 4) print "epsilon <= 1.79 => (3 k eps^2, e^(-k eps/2))".
  Its proof gives delta = e^(-k eps^2/2), and 3 k eps^2 needs e^eps - 1 <= 2 eps, i.e.
  eps <= 1.25643.  :func:`product_mechanism_privacy` ships the corrected statement only.
* Dwork & Roth Cor. 3.21: its proof replaces eps(e^eps - 1) by eps^2, which is smaller.
  The closed form is nevertheless right whenever eps' < 1 and delta' is not close to 1;
  :func:`advanced_composition_per_step` checks every closed-form answer against
  Theorem 3.20 and refuses the ones that fail (e.g. k = 1, delta' = 0.99, eps' = 0.9).
"""

from .._privacy import Cost
from .accountant import METHODS as ACCOUNTANT_METHODS
from .accountant import Accountant, calibrate_gaussian, calibrate_laplace
from .budget import LedgerEntry, PrivacyAmount, PrivacyBudget, Reservation
from .capacity import max_releases, max_releases_gaussian, max_releases_laplace
from .composition import (
    PRODUCT_MECHANISM_EPSILON_MAX,
    EpsilonDelta,
    advanced_composition,
    advanced_composition_per_step,
    basic_composition,
    heterogeneous_advanced_composition,
    product_mechanism_privacy,
)
from .divergences import (
    KLBoundCheck,
    approximate_max_divergence,
    check_kl_bound,
    hockey_stick_divergence,
    kl_divergence,
    max_divergence,
    statistical_distance,
)
from .gdp import gaussian_gdp, gdp_compose, gdp_delta, gdp_mu, gdp_sigma, gdp_to_dp
from .optimal import optimal_composition, optimal_composition_delta
from .pld import ComposedPLD, Mechanism
from .pld import compose as pld_compose
from .pld import discrete_gaussian as pld_discrete_gaussian
from .pld import discrete_laplace as pld_discrete_laplace
from .pld import gaussian as pld_gaussian
from .pld import laplace as pld_laplace
from .pld import pure_dp as pld_pure_dp
from .pld import randomized_response as pld_randomized_response
from .rdp import (
    DEFAULT_RDP_ORDERS,
    RDPConversion,
    rdp_compose,
    rdp_gaussian,
    rdp_laplace,
    rdp_to_dp,
)
from .zcdp import (
    gaussian_zcdp,
    pure_dp_to_zcdp,
    zcdp_budget,
    zcdp_compose,
    zcdp_delta,
    zcdp_to_dp,
)

__all__ = [
    "basic_composition",
    "advanced_composition",
    "heterogeneous_advanced_composition",
    "advanced_composition_per_step",
    "product_mechanism_privacy",
    "PRODUCT_MECHANISM_EPSILON_MAX",
    "optimal_composition",
    "optimal_composition_delta",
    "gaussian_zcdp",
    "pure_dp_to_zcdp",
    "zcdp_compose",
    "zcdp_to_dp",
    "zcdp_delta",
    "zcdp_budget",
    "DEFAULT_RDP_ORDERS",
    "rdp_gaussian",
    "rdp_laplace",
    "rdp_compose",
    "rdp_to_dp",
    "kl_divergence",
    "max_divergence",
    "approximate_max_divergence",
    "hockey_stick_divergence",
    "statistical_distance",
    "check_kl_bound",
    "KLBoundCheck",
    "gaussian_gdp",
    "gdp_compose",
    "gdp_delta",
    "gdp_to_dp",
    "gdp_mu",
    "gdp_sigma",
    "Mechanism",
    "ComposedPLD",
    "pld_compose",
    "pld_gaussian",
    "pld_laplace",
    "pld_discrete_laplace",
    "pld_discrete_gaussian",
    "pld_randomized_response",
    "pld_pure_dp",
    "Accountant",
    "ACCOUNTANT_METHODS",
    "calibrate_gaussian",
    "calibrate_laplace",
    "PrivacyBudget",
    "PrivacyAmount",
    "Cost",
    "Reservation",
    "LedgerEntry",
    "EpsilonDelta",
    "RDPConversion",
    "max_releases",
    "max_releases_gaussian",
    "max_releases_laplace",
]
