"""How many releases fit in a budget: the inverse of each composition method in k.

Each function returns the largest k such that k releases *fit* under (epsilon, delta) by
the method's own safe-side bound, and k + 1 do not.  "Fit" is decided by the same
functions the rest of :mod:`dpfast.accounting` uses, so the answer never promises more
than those functions (or :class:`~dpfast.accounting.PrivacyBudget`) would admit.
"""

from __future__ import annotations

from fractions import Fraction

from .. import _validation as _v
from .._errors import PrivacyParameterError
from ._numeric import _fraction_to_float_down
from .accountant import Accountant
from .budget import _float_up, exact_amount
from .composition import advanced_composition
from .optimal import _KOV_K_MAX, optimal_composition_delta
from .pld import compose as _pld_compose
from .pld import pure_dp as _pld_pure_dp
from .zcdp import gaussian_zcdp, zcdp_budget

MAX_RELEASES_METHODS = ("basic", "advanced", "optimal", "zcdp", "pld")
MAX_RELEASES_GAUSSIAN_METHODS = ("gdp", "zcdp", "rdp", "pld")

# The searched methods stop here: k must stay an exact float for the closed forms.
_SEARCH_K_MAX = 2**53


def _largest(fits, k_max):
    """The largest k in [0, k_max] with fits(k), for a predicate that is true up to some
    k and false after (k = 0 always fits).  Doubling, then bisection: about
    2 log2(k) + 2 calls of ``fits``; the answer k satisfies fits(k) (or k = 0) and
    not fits(k + 1) whenever k < k_max.  Returns None if k_max itself fits."""
    lo, hi = 0, 1
    while fits(hi):  # invariant: fits(lo) (or lo == 0), hi untested-or-true
        if hi >= k_max:
            return None
        lo, hi = hi, min(2 * hi, k_max)
    while hi - lo > 1:  # invariant: fits(lo) or lo == 0, not fits(hi)
        mid = (lo + hi) // 2
        if fits(mid):
            lo = mid
        else:
            hi = mid
    return lo


def _too_many(k_max, method):
    return PrivacyParameterError(
        f"more than {k_max} releases fit under method {method!r}: the per-release cost is "
        "negligible next to the budget; check the parameters")


def max_releases(epsilon0, delta0, epsilon, delta=0.0, *, method="basic"):
    """The largest number k of (epsilon0, delta0)-DP releases whose composition is
    (epsilon, delta)-DP by a given composition method.

    Parameters
    ----------
    epsilon0 : float or Fraction
        Per-release epsilon > 0.
    delta0 : float or Fraction
        Per-release delta in [0, 1) (must be 0 for "zcdp" and "pld").
    epsilon : float or Fraction
        Total epsilon > 0.
    delta : float or Fraction, default 0.0
        Total delta in [0, 1).
    method : {"basic", "advanced", "optimal", "zcdp", "pld"}, default "basic"
        ``"basic"``: k epsilon0 <= epsilon and k delta0 <= delta, in exact rational
        arithmetic on the values given (the rule :class:`PrivacyBudget` applies, so a
        budget of (epsilon, delta) admits exactly k such charges); a closed form.
        ``"advanced"``: Dwork & Roth Thm 3.20 with delta' = delta - k delta0 (the whole
        remaining delta): :func:`advanced_composition` (epsilon0, delta0, k, delta')
        returns an epsilon' <= epsilon, and delta' > 0.  This is Thm 3.20 alone, not the
        better of it and basic composition.
        ``"optimal"``: Kairouz, Oh & Viswanath's exact bound,
        :func:`optimal_composition_delta` (epsilon0, delta0, k, epsilon) <= delta
        (k up to 10**7).
        ``"zcdp"``: a pure epsilon0-DP release is epsilon0^2/2-zCDP (Bun & Steinke
        Prop. 1.4); k epsilon0^2/2 <= :func:`zcdp_budget` (epsilon, delta), exactly (the
        rule of a ``PrivacyBudget(epsilon, delta, "zcdp")``); a closed form.  ``delta``
        must be > 0 for any k >= 1 to fit.
        ``"pld"``: the privacy loss distribution of k composed epsilon0-DP releases
        (each dominated by binary randomized response): its
        :meth:`~dpfast.accounting.ComposedPLD.delta` at ``epsilon`` is <= delta.

    Returns
    -------
    int
        k >= 0 (0 when not even one release fits).  k releases fit and k + 1 do not.

    Raises
    ------
    PrivacyParameterError
        Invalid parameters, ``delta0 > 0`` with "zcdp" or "pld", or more releases fit
        than the method can evaluate (2**53; 10**7 for "optimal").
    TypeError
        A parameter of a type that is not a real number.

    Privacy
    -------
    Composing the returned number of (epsilon0, delta0)-DP mechanisms, adaptively, is
    (epsilon, delta)-DP by the named theorem (Dwork & Roth Thm 3.16, 3.20; Kairouz, Oh &
    Viswanath 2015 Thm 3.3; Bun & Steinke 2016 Lemma 1.7 with the conversion of Canonne,
    Kamath & Steinke 2020; the PLD accountant of :mod:`.pld`).  Every bound used is the
    library's rounded-up one, so the count is never one too many; at the boundary it can
    be one fewer than exact arithmetic would give.

    Notes
    -----
    Cost: "basic" and "zcdp" are closed forms (one division).  "advanced", "optimal" and
    "pld" search k by doubling then bisection, about 2 log2(k) + 2 evaluations of the
    bound: microseconds each for "advanced", up to milliseconds for "optimal" (its
    cost grows like sqrt(k)), and one PLD composition (an FFT per doubling of k) each for
    "pld" -- tens of milliseconds to a second in total.  The PLD's numerical bound is not
    guaranteed monotone in k at the grid's resolution; the bisection still returns a k
    that fits with k + 1 not fitting.

    References
    ----------
    C. Dwork, A. Roth, *The Algorithmic Foundations of Differential Privacy*, 2014, §3.5.
    P. Kairouz, S. Oh, P. Viswanath, ICML 2015.  M. Bun, T. Steinke, TCC 2016.

    Examples
    --------
    >>> from fractions import Fraction
    >>> max_releases(Fraction(1, 10), 0, 1)
    10
    >>> max_releases(0.25, 0.0, 1.0)
    4
    >>> max_releases(0.01, 0.0, 1.0, 1e-6, method="advanced") > 100
    True
    """
    method = _v.choice("method", method, MAX_RELEASES_METHODS)
    eps0_f, eps0_x = exact_amount("epsilon0", epsilon0, "positive")
    _, dlt0_x = exact_amount("delta0", delta0, "delta")
    _, eps_x = exact_amount("epsilon", epsilon, "positive")
    _, dlt_x = exact_amount("delta", delta, "delta")
    eps0_x, dlt0_x, eps_x, dlt_x = (Fraction(v) for v in (eps0_x, dlt0_x, eps_x, dlt_x))
    if method in ("zcdp", "pld") and dlt0_x != 0:
        raise PrivacyParameterError(
            f"method {method!r} counts pure-DP releases; got delta0={delta0!r} "
            "(use method='optimal' or 'advanced' for releases with delta0 > 0)")
    # Per-release costs round up, totals round down: the floats used are on the safe side.
    eps0 = _float_up(eps0_x)
    dlt0 = _float_up(dlt0_x)
    eps = _fraction_to_float_down(eps_x)
    dlt = _fraction_to_float_down(dlt_x)

    if method == "basic":
        k = eps_x // eps0_x
        if dlt0_x > 0:
            k = min(k, dlt_x // dlt0_x)
        return int(k)
    if method == "zcdp":
        if dlt_x == 0:
            return 0  # rho-zCDP with rho > 0 is never (epsilon, 0)-DP
        rho = Fraction(zcdp_budget(eps, dlt))
        return int(rho // (eps0_x * eps0_x / 2))

    if method == "advanced":
        def fits(k):
            rest = dlt_x - k * dlt0_x
            if not rest > 0:
                return False
            delta_prime = _fraction_to_float_down(rest)
            if not delta_prime > 0.0:
                return False
            return advanced_composition(eps0, dlt0, k, delta_prime).epsilon <= eps
        k_max = _SEARCH_K_MAX
    elif method == "optimal":
        def fits(k):
            return optimal_composition_delta(eps0, dlt0, k, eps) <= dlt
        k_max = _KOV_K_MAX
    else:  # pld
        mech = _pld_pure_dp(eps0)

        def fits(k):
            return _pld_compose([(mech, k)]).delta(eps) <= dlt
        k_max = _SEARCH_K_MAX
    k = _largest(fits, k_max)
    if k is None:
        raise _too_many(k_max, method)
    return k


def max_releases_gaussian(sigma, sensitivity, epsilon, delta, *, method="gdp"):
    """The largest number k of Gaussian releases N(0, sigma^2) of l2 sensitivity
    ``sensitivity`` whose composition is (epsilon, delta)-DP.

    Parameters
    ----------
    sigma : float
        Noise standard deviation > 0.
    sensitivity : float
        l2 sensitivity > 0 of each release.
    epsilon : float
        Total epsilon > 0.
    delta : float
        Total delta in (0, 1).
    method : {"gdp", "zcdp", "rdp", "pld"}, default "gdp"
        ``"gdp"``: Gaussian DP (Dong, Roth & Su 2022), exact for Gaussians: the
        :class:`Accountant` ("gdp") of k releases has delta(epsilon) <= delta.
        ``"zcdp"``: k rho0 <= :func:`zcdp_budget` (epsilon, delta) exactly, with
        rho0 = :func:`gaussian_zcdp` (sigma, sensitivity) (the rule of a zcdp
        :class:`PrivacyBudget` charged with ``spend_rho(rho0)``); a closed form.
        ``"rdp"`` / ``"pld"``: the :class:`Accountant` of that method, as for "gdp".

    Returns
    -------
    int
        k >= 0; k releases fit and k + 1 do not.

    Raises
    ------
    PrivacyParameterError
        Invalid parameters, or more than 2**53 releases fit.

    Privacy
    -------
    As :func:`max_releases`: the bound of the named method, rounded up, decides.

    Notes
    -----
    Cost: "zcdp" is a closed form; the others search k by doubling and bisection, about
    2 log2(k) + 2 accountant evaluations (closed forms for "gdp" and "rdp", one PLD
    composition each for "pld").

    Examples
    --------
    >>> k = max_releases_gaussian(10.0, 1.0, 1.0, 1e-5)
    >>> k > max_releases_gaussian(10.0, 1.0, 1.0, 1e-5, method="zcdp")
    True
    """
    method = _v.choice("method", method, MAX_RELEASES_GAUSSIAN_METHODS)
    sigma = _v.positive("sigma", sigma)
    sensitivity = _v.positive("sensitivity", sensitivity)
    epsilon = _v.positive("epsilon", epsilon)
    delta = _v.delta(delta, allow_zero=False)
    if method == "zcdp":
        rho0 = Fraction(gaussian_zcdp(sigma, sensitivity))
        return int(Fraction(zcdp_budget(epsilon, delta)) // rho0)

    def fits(k):
        acc = Accountant(method).compose_gaussian(sigma, sensitivity, count=k)
        return acc.delta(epsilon) <= delta
    k = _largest(fits, _SEARCH_K_MAX)
    if k is None:
        raise _too_many(_SEARCH_K_MAX, method)
    return k
