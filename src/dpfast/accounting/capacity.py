"""How many releases fit in a budget: the inverse of each composition method in k.

Each function returns the largest k such that k releases *fit* under (epsilon, delta) by
the method's own safe-side bound, and k + 1 do not.  "Fit" is decided by the same
functions the rest of :mod:`dpfast.accounting` uses, so the answer never promises more
than those functions (or :class:`~dpfast.accounting.PrivacyBudget`) would admit.
"""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction

from .. import _validation as _v
from .._errors import PrivacyParameterError
from .._typing import PrivacyParam, Real
from ._numeric import _KOV_K_MAX, _fraction_to_float_down
from .accountant import Accountant
from .composition import advanced_composition
from .optimal import optimal_composition_delta
from .pld import compose as _pld_compose
from .pld import pure_dp as _pld_pure_dp
from .rules import _float_up, exact_amount
from .zcdp import gaussian_zcdp, zcdp_budget

MAX_RELEASES_METHODS = ("basic", "advanced", "optimal", "zcdp", "pld")
MAX_RELEASES_GAUSSIAN_METHODS = ("gdp", "zcdp", "rdp", "pld")

# The searched methods stop here: k must stay an exact float for the closed forms.
_SEARCH_K_MAX = 2**53


def _largest(
    fits: Callable[[int], bool], k_max: int, hint: float | None = None
) -> int | None:
    """The largest k in [0, k_max] with fits(k), for a predicate that is true up to some
    k and false after (k = 0 always fits); None if k_max itself fits.

    Galloping from ``hint`` (an estimate of the answer; 1 if None) by steps that double,
    starting at hint/4096, then bisection of the last step: about 2 log2(k) + 2 calls
    of ``fits`` without a hint, about 2 log2(|k - hint| 4096 / hint) + 13 with one.  The
    result k satisfies fits(k) (or k = 0) and not fits(k + 1) whenever k < k_max: only
    the invariant "fits(lo), not fits(hi)" is used, so a bound that is not exactly
    monotone still gives an answer with that property."""
    h = 1 if hint is None else min(max(int(hint), 1), k_max)
    step = max(1, h >> 12)
    if fits(h):
        lo = h
        while True:
            if lo >= k_max:
                return None
            hi = min(lo + step, k_max)
            if not fits(hi):
                break
            lo, step = hi, 2 * step
    else:
        hi = h
        while True:
            lo = max(hi - step, 0)
            if lo == 0 or fits(lo):
                break
            hi, step = lo, 2 * step
    while hi - lo > 1:  # invariant: fits(lo) or lo == 0, not fits(hi)
        mid = (lo + hi) // 2
        if fits(mid):
            lo = mid
        else:
            hi = mid
    return lo


def max_releases(
    epsilon0: PrivacyParam,
    delta0: PrivacyParam,
    epsilon: PrivacyParam,
    delta: PrivacyParam = 0.0,
    *,
    method: str = "basic",
) -> int:
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
        than the method can evaluate (2**53 for "advanced"; 10**7 for "optimal" and
        "pld").
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
    Cost: "basic" and "zcdp" are closed forms (one division).  "advanced", "optimal"
    and "pld" search k (:func:`_largest`): galloping from a start, then bisection, so
    about 2 log2(k) + 2 evaluations of the bound without a good start and ~15 with one.
    "advanced" and "optimal" start from the zCDP count (within a factor ~1.5), "pld" from the
    "optimal" count (within ~1e-4).  Measured on a shared 2-core machine (eps = 1,
    delta = 1e-6): "advanced" ~1 ms; "optimal" 12 ms (k = 562) to 0.1 s (k = 5.6e6);
    "pld" 0.15 s (k = 562), 1.3 s (k = 5.6e4), 24 s (k = 5.6e6): each PLD evaluation is
    one FFT composition whose grid grows with k.  The PLD's numerical bound is not
    guaranteed monotone in k at the grid's resolution; the search still returns a k that
    fits with k + 1 not fitting.

    References
    ----------
    C. Dwork, A. Roth, *The Algorithmic Foundations of Differential Privacy*, 2014, §3.5.
    P. Kairouz, S. Oh, P. Viswanath, ICML 2015.  M. Bun, T. Steinke, TCC 2016.

    Examples
    --------
    >>> from fractions import Fraction
    >>> from dpfast.accounting import max_releases
    >>> max_releases(Fraction(1, 10), 0, 1)
    10
    >>> max_releases(0.25, 0.0, 1.0)
    4
    >>> max_releases(0.01, 0.0, 1.0, 1e-6, method="advanced") > 100
    True
    """
    method = _v.choice("method", method, MAX_RELEASES_METHODS)
    _, eps0_x = exact_amount("epsilon0", epsilon0, "positive")
    _, dlt0_x = exact_amount("delta0", delta0, "delta")
    _, eps_x = exact_amount("epsilon", epsilon, "positive")
    _, dlt_x = exact_amount("delta", delta, "delta")
    eps0_x, dlt0_x, eps_x, dlt_x = (Fraction(v) for v in (eps0_x, dlt0_x, eps_x, dlt_x))
    if method in ("zcdp", "pld") and dlt0_x != 0:
        raise PrivacyParameterError(
            f"method {method!r} counts pure-DP releases; got delta0={delta0!r} "
            "(use method='optimal' or 'advanced' for releases with delta0 > 0)"
        )
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
        return _zcdp_count(eps, dlt, eps0_x * eps0_x / 2)

    # The zCDP count (a closed form) is within a factor ~1.5 of the searched answers: a start.
    hint = _zcdp_count(eps, dlt, eps0_x * eps0_x / 2) if dlt0_x == 0 else None
    if method == "advanced":

        def fits(k: int) -> bool:
            rest = dlt_x - k * dlt0_x
            if not rest > 0:
                return False
            delta_prime = _fraction_to_float_down(rest)
            if not delta_prime > 0.0:
                return False
            eps_k: float = advanced_composition(eps0, dlt0, k, delta_prime).epsilon
            return eps_k <= eps

        return _search(fits, _SEARCH_K_MAX, hint, method)
    if method == "optimal":

        def fits(k: int) -> bool:
            return optimal_composition_delta(eps0, dlt0, k, eps) <= dlt

        return _search(fits, _KOV_K_MAX, hint, method)
    # pld: the PLD of pure-DP releases is within ~1e-4 of the exact (optimal) count,
    # which is much cheaper to find: start there.
    try:
        hint = max_releases(eps0_x, 0, eps_x, dlt_x, method="optimal")
    except PrivacyParameterError:
        pass
    mech = _pld_pure_dp(eps0)

    def fits_pld(k: int) -> bool:
        return _pld_compose([(mech, k)]).delta(eps) <= dlt

    # Each evaluation costs seconds at k ~ 1e7; beyond, "zcdp" or "advanced" answer at once.
    return _search(fits_pld, _KOV_K_MAX, hint, method)


def _zcdp_count(epsilon: float, delta: float, rho0: float | Fraction) -> int:
    """floor(zcdp_budget(epsilon, delta) / rho0) exactly; 0 when delta = 0 (rho-zCDP with
    rho > 0 is never (epsilon, 0)-DP)."""
    if delta == 0.0:
        return 0
    return int(Fraction(zcdp_budget(epsilon, delta)) // Fraction(rho0))


def _search(
    fits: Callable[[int], bool], k_max: int, hint: float | None, method: str
) -> int:
    k = _largest(fits, k_max, hint)
    if k is None:
        raise PrivacyParameterError(
            f"more than {k_max} releases fit under method {method!r}: the per-release cost is "
            "negligible next to the budget; check the parameters"
        )
    return k


def max_releases_gaussian(
    sigma: Real,
    sensitivity: Real,
    epsilon: PrivacyParam,
    delta: PrivacyParam,
    *,
    method: str = "gdp",
) -> int:
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
    Cost: "zcdp" is a closed form; the others search k as in :func:`max_releases`
    ("gdp" and "rdp" from the zCDP count, "pld" from the "gdp" count), with closed-form
    accountant evaluations for "gdp" and "rdp" (about 1 ms in total) and one PLD
    composition each for "pld" (a few ms for k up to ~1e5 on a shared 2-core machine).

    Examples
    --------
    >>> from dpfast.accounting import max_releases_gaussian
    >>> k = max_releases_gaussian(10.0, 1.0, 1.0, 1e-5)
    >>> k > max_releases_gaussian(10.0, 1.0, 1.0, 1e-5, method="zcdp")
    True
    """
    method = _v.choice("method", method, MAX_RELEASES_GAUSSIAN_METHODS)
    sigma = _v.positive("sigma", sigma)
    sensitivity = _v.positive("sensitivity", sensitivity)
    epsilon = _v.positive("epsilon", epsilon)
    delta = _v.delta(delta, allow_zero=False)
    rho0 = gaussian_zcdp(sigma, sensitivity)
    if method == "zcdp":
        return _zcdp_count(epsilon, delta, rho0)
    hint = _zcdp_count(epsilon, delta, rho0)
    if method == "pld":  # within ~1e-4 of the exact Gaussian-DP count: start there
        hint = max_releases_gaussian(sigma, sensitivity, epsilon, delta, method="gdp")

    def fits(k: int) -> bool:
        acc = Accountant(method).compose_gaussian(sigma, sensitivity, count=k)
        return acc.delta(epsilon) <= delta

    return _search(fits, _SEARCH_K_MAX, hint, method)


def max_releases_laplace(
    scale: Real,
    sensitivity: Real,
    epsilon: PrivacyParam,
    delta: PrivacyParam = 0.0,
    *,
    method: str = "basic",
) -> int:
    """The largest number k of Laplace releases of this scale and l1 sensitivity whose
    composition is (epsilon, delta)-DP.

    Parameters
    ----------
    scale : float
        Laplace scale b > 0.
    sensitivity : float
        l1 sensitivity Delta > 0 of each release.
    epsilon : float
        Total epsilon > 0.
    delta : float, default 0.0
        Total delta in [0, 1).
    method : {"basic", "advanced", "optimal", "zcdp", "pld"}, default "basic"
        Each release is (Delta/b)-DP, with Delta/b the exact rational of the two floats;
        every method but "pld" is :func:`max_releases` of (Delta/b, 0).  ``"pld"`` uses
        the Laplace mechanism's own privacy loss distribution (tighter than a generic
        (Delta/b)-DP release when delta > 0).

    Returns
    -------
    int
        k >= 0; k releases fit and k + 1 do not.

    Privacy
    -------
    Laplace noise of scale b on a query of l1 sensitivity Delta is (Delta/b)-DP (Dwork &
    Roth Thm 3.6); then as :func:`max_releases`.

    Examples
    --------
    >>> from dpfast.accounting import max_releases_laplace
    >>> max_releases_laplace(10.0, 1.0, 1.0)      # epsilon0 = 1/10 exactly
    10
    """
    method = _v.choice("method", method, MAX_RELEASES_METHODS)
    scale = _v.positive("scale", scale)
    sensitivity = _v.positive("sensitivity", sensitivity)
    eps0_x = Fraction(sensitivity) / Fraction(scale)
    if method != "pld":
        return max_releases(eps0_x, 0, epsilon, delta, method=method)
    _, eps_x = exact_amount("epsilon", epsilon, "positive")
    _, dlt_x = exact_amount("delta", delta, "delta")
    eps, dlt = (
        _fraction_to_float_down(Fraction(eps_x)),
        _fraction_to_float_down(Fraction(dlt_x)),
    )
    try:
        hint = max_releases(eps0_x, 0, eps_x, dlt_x, method="optimal")
    except PrivacyParameterError:
        hint = None

    def fits(k: int) -> bool:
        return (
            Accountant("pld").compose_laplace(scale, sensitivity, count=k).delta(eps) <= dlt
        )

    return _search(fits, _SEARCH_K_MAX, hint, method)
