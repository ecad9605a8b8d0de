"""Randomized response (Warner 1965; Dwork & Roth Sec. 3.2) and its unbiased estimators.

Three mechanisms, each applied independently to every respondent's own value:

* :func:`coin_response` -- the two-coin version of Claim 3.5: (ln 3)-DP.
* :func:`randomized_response` -- report a boolean truthfully with probability
  ``e^eps / (1 + e^eps)``, else flipped.
* :func:`kary_response` -- report a category code in ``[0, k)`` truthfully with probability
  ``e^eps / (e^eps + k - 1)``, else one of the other ``k - 1`` codes uniformly.

Exactness
---------
Every coin is exact on CSPRNG words.  The two-coin version needs only fair bits.  The truth
probability ``e^eps/(e^eps + k - 1)`` is irrational for a general epsilon, so dpfast draws
the *flip* with a rational probability ``t / 2^64``, exactly (a uniform 64-bit integer below
``t``, compared lazily byte by byte), where ``t`` is certified to satisfy

    t / 2^64 >= (k - 1) / (e^eps + k - 1)      (and t / 2^64 - that <= 2^-62).

It is computed from the exact binary value of ``epsilon`` with :mod:`decimal` at 60
significant digits (``Decimal.exp`` is correctly rounded), whose total error is below
``2^64 * 10^-58``, far inside the added margin of ``2^-20``.  A flip probability at least
the ideal one can only lower the privacy loss: the mechanism that runs is exactly
``eps'``-DP with ``eps' = ln((1 - q')(k - 1)/q') <= epsilon``, ``q' = t/2^64``, so there is no
slack to report and the budget is charged ``epsilon``.  :func:`response_probabilities`
returns the probabilities that are actually used, and the estimators invert those, so they
are exactly unbiased for the mechanism that ran.  (For epsilon so small that ``t`` would
reach ``(k-1)/k * 2^64`` the report is uniform, independent of the truth: 0-DP.)

Privacy across respondents
--------------------------
Each report depends on one respondent's value only, so releasing the reports of distinct
people is epsilon-DP for add/remove neighbours (each person's report is epsilon-locally
DP; disjoint inputs compose in parallel), and a budget is charged epsilon once per call.  If
one person contributes several entries, their privacy loss adds up (Thm 3.16).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from decimal import Decimal, localcontext
from typing import Any, overload

import numpy as np
import numpy.typing as npt

from . import _core
from . import _validation as _v
from ._active import label as _label
from ._errors import PrivacyParameterError
from ._privacy import Cost, charge
from ._typing import BoolArray, F64Array, I64Array, PrivacyParam, RngLike, SupportsSpend

_Scalar = bool | int | np.bool_ | np.integer[Any]

__all__ = [
    "coin_response",
    "randomized_response",
    "kary_response",
    "response_probabilities",
    "estimate_proportion",
    "estimate_frequencies",
]

_TWO64 = 2**64
_COIN_FLIP = 2**62  # Claim 3.5: the truth is flipped with probability 1/4


# Cached per (epsilon, k), like the mechanisms' grid plans: the 60-digit Decimal exp costs
# ~20 us, and both arguments are public and already validated (a float and an int, so
# the cache key is exact).
@functools.lru_cache(maxsize=1024)
def _flip_threshold(epsilon: float, k: int) -> int | None:
    """The certified integer t >= 2^64 (k-1)/(e^eps + k - 1), or None when it would reach
    the uniform report (then every code is reported with probability 1/k)."""
    # q decreases in epsilon, so evaluating it at min(epsilon, 1000) can only raise t:
    # still certified (and t = 1 there anyway, for every k <= 2^62); it keeps exp finite.
    with localcontext() as ctx:
        ctx.prec = 60
        e = Decimal(min(epsilon, 1000.0))  # Decimal(float) is exact
        q = Decimal(k - 1) / (e.exp() + (k - 1))
        y = q * _TWO64
        t = int(y + Decimal(2) ** -20) + 1  # > y + 2^-20 > the exact 2^64 q
    cap = ((k - 1) * _TWO64) // k
    return None if t >= cap else t


def response_probabilities(epsilon: PrivacyParam, k: int = 2) -> tuple[float, float]:
    """The exact probabilities of the report that dpfast uses for ``epsilon`` and ``k``.

    Parameters
    ----------
    epsilon : float
        Finite and > 0.
    k : int
        Number of categories, >= 2 (2: the boolean mechanism).

    Returns
    -------
    (p_truth, p_other) : (float, float)
        ``P[report = truth]`` and ``P[report = c]`` for each single other code ``c``
        (for k = 2: ``1 - q'`` and ``q'``), as doubles; ``p_truth + (k-1) p_other = 1``.
        ``p_truth`` is at most the ideal ``e^eps/(e^eps + k - 1)`` and within 2^-62 of it.
    """
    epsilon = _v.epsilon(epsilon)
    k = _v.integer("k", k, minimum=2, maximum=2**62)
    return _probs(_flip_threshold(epsilon, k), k)


def _probs(t: int | None, k: int) -> tuple[float, float]:
    if t is None:
        return 1.0 / k, 1.0 / k
    q = t / _TWO64
    return 1.0 - q, q / (k - 1)


def _truth_bits(truth: npt.ArrayLike) -> tuple[npt.NDArray[np.uint8], bool]:
    """Booleans (or integers) as a C-contiguous uint8 array of 0/1, and whether it was a
    scalar.  The truth is private, so its values never raise: a nonzero integer counts as
    true (a fixed map of one answer to one answer, which leaves the guarantee unchanged)."""
    arr = np.asarray(truth)
    if arr.size == 0 and arr.dtype.kind == "f":  # [] -> no respondents
        arr = arr.astype(np.bool_)
    if arr.dtype == np.bool_:
        return np.ascontiguousarray(arr).view(np.uint8), arr.ndim == 0
    if arr.dtype.kind not in "iu":
        raise TypeError(
            f"truth must hold booleans (or 0/1 integers); got dtype {arr.dtype}"
        )
    return np.ascontiguousarray(arr != 0, dtype=np.uint8), arr.ndim == 0


def _as_output(bits: npt.NDArray[np.uint8], scalar: bool) -> bool | BoolArray:
    out = bits.view(np.bool_)
    return bool(out.reshape(())) if scalar else out


@overload
def coin_response(
    truth: _Scalar,
    *,
    rng: RngLike = ...,
    budget: SupportsSpend | None = ...,
    label: str | None = ...,
) -> bool: ...
@overload
def coin_response(
    truth: npt.NDArray[Any] | Sequence[Any],
    *,
    rng: RngLike = ...,
    budget: SupportsSpend | None = ...,
    label: str | None = ...,
) -> BoolArray: ...
def coin_response(
    truth: npt.ArrayLike,
    *,
    rng: RngLike = None,
    budget: SupportsSpend | None = None,
    label: str | None = None,
) -> bool | BoolArray:
    """Claim 3.5 of Dwork & Roth: flip a coin; tails: answer truthfully; heads: flip a
    second coin and answer "yes" on heads, "no" on tails.

    Parameters
    ----------
    truth : bool or array_like of bool (or integers: nonzero is true)
        One respondent's answer per entry.
    rng : None, ChaCha20, numpy BitGenerator or Generator
    budget : object with ``spend(epsilon, delta, *, label)``, optional
        Charged ``ln 3`` before anything is drawn.
        None: the active budget (``with b.active():``), if any; ``NO_BUDGET``: nothing.
    label : str, optional
        Recorded with the charge (default: the function's name).

    Returns
    -------
    bool or numpy.ndarray of bool
        Same shape as ``truth``.

    Privacy
    -------
    (ln 3, 0)-DP for each respondent: ``P[yes | yes] = 3/4``, ``P[yes | no] = 1/4``
    (Claim 3.5).  Exact: two fair bits per respondent, branch-free in the truth.

    Accuracy
    --------
    :func:`estimate_proportion` with ``coins=True`` inverts it; its standard error is
    ``sqrt(lambda (1 - lambda) / n) / (1/2)``, ``lambda = 1/4 + p/2``.

    References
    ----------
    Warner, "Randomized response", JASA 1965.  Dwork & Roth 2014, Sec. 3.2, Claim 3.5.
    """
    label = _label(label, "coin_response")
    bits, scalar = _truth_bits(truth)
    gen = _core.secure_rng(rng)
    charged = _v.budget(budget)
    if charged is not None:
        charge(charged, Cost(math.log(3.0), 0.0), label)
    return _as_output(_core.rr_coins(bits, gen), scalar)


@overload
def randomized_response(
    truth: _Scalar,
    *,
    epsilon: PrivacyParam,
    rng: RngLike = ...,
    budget: SupportsSpend | None = ...,
    label: str | None = ...,
) -> bool: ...
@overload
def randomized_response(
    truth: npt.NDArray[Any] | Sequence[Any],
    *,
    epsilon: PrivacyParam,
    rng: RngLike = ...,
    budget: SupportsSpend | None = ...,
    label: str | None = ...,
) -> BoolArray: ...
def randomized_response(
    truth: npt.ArrayLike,
    *,
    epsilon: PrivacyParam,
    rng: RngLike = None,
    budget: SupportsSpend | None = None,
    label: str | None = None,
) -> bool | BoolArray:
    """Report each boolean truthfully with probability ``e^eps/(1 + e^eps)``, else flipped.

    Parameters
    ----------
    truth : bool or array_like of bool (or integers: nonzero is true)
    epsilon : float
        Finite and > 0.
    rng : None, ChaCha20, numpy BitGenerator or Generator
    budget : object with ``spend(epsilon, delta, *, label)``, optional
        Charged ``epsilon`` before anything is drawn.
        None: the active budget (``with b.active():``), if any; ``NO_BUDGET``: nothing.
    label : str, optional
        Recorded with the charge (default: the function's name).

    Returns
    -------
    bool or numpy.ndarray of bool
        Same shape as ``truth``.

    Privacy
    -------
    epsilon-DP for each respondent: the likelihood ratio of a report is
    ``(1 - q)/q = e^eps`` (ideal ``q = 1/(1 + e^eps)``).  The flip has the certified
    rational probability ``q' = t/2^64 >= q`` (module docstring), so the mechanism that runs
    is exactly ``eps'``-DP with ``eps' <= epsilon``.  Every coin is an exact function of
    CSPRNG words and the work per respondent does not depend on the truth.

    Accuracy
    --------
    :func:`estimate_proportion` is unbiased with variance
    ``lambda (1 - lambda) / (n (1 - 2 q')^2)``; :func:`dpfast.accuracy.randomized_response_error`
    gives a (1 - beta)-confidence error bound and its inverse.

    References
    ----------
    Warner 1965.  Dwork & Roth 2014, Sec. 3.2.
    """
    label = _label(label, "randomized_response")
    epsilon = _v.epsilon(epsilon)
    bits, scalar = _truth_bits(truth)
    gen = _core.secure_rng(rng)
    t = _flip_threshold(epsilon, 2)
    charged = _v.budget(budget)
    if charged is not None:
        charge(charged, Cost(epsilon, 0.0), label)
    return _as_output(_core.rr_binary(bits, 2**63 if t is None else t, gen), scalar)


@overload
def kary_response(
    values: int | np.integer[Any],
    k: int,
    *,
    epsilon: PrivacyParam,
    rng: RngLike = ...,
    budget: SupportsSpend | None = ...,
    label: str | None = ...,
) -> int: ...
@overload
def kary_response(
    values: npt.NDArray[Any] | Sequence[Any],
    k: int,
    *,
    epsilon: PrivacyParam,
    rng: RngLike = ...,
    budget: SupportsSpend | None = ...,
    label: str | None = ...,
) -> I64Array: ...
def kary_response(
    values: npt.ArrayLike,
    k: int,
    *,
    epsilon: PrivacyParam,
    rng: RngLike = None,
    budget: SupportsSpend | None = None,
    label: str | None = None,
) -> int | I64Array:
    """k-ary randomized response on integer category codes ``0 .. k-1``.

    Each code is reported truthfully with probability ``e^eps/(e^eps + k - 1)``, else as one
    of the other ``k - 1`` codes chosen uniformly.

    Parameters
    ----------
    values : int or array_like of int
        Category codes in ``[0, k)``.  The category list must be fixed in advance.  A
        code outside the range is clamped to 0 or ``k - 1`` (private values never raise).
    k : int
        Number of categories, ``2 <= k <= 2**62``.
    epsilon : float
        Finite and > 0.
    rng : None, ChaCha20, numpy BitGenerator or Generator
    budget : object with ``spend(epsilon, delta, *, label)``, optional
        Charged ``epsilon`` before anything is drawn.
        None: the active budget (``with b.active():``), if any; ``NO_BUDGET``: nothing.
    label : str, optional
        Recorded with the charge (default: the function's name).

    Returns
    -------
    int or numpy.ndarray of int64
        Same shape as ``values``.

    Privacy
    -------
    epsilon-DP for each respondent: ``P[report = c | c] / P[report = c | c'] =
    (1 - q)(k - 1)/q = e^eps`` with ``q = (k - 1)/(e^eps + k - 1)``.  The flip probability
    is the certified ``q' = t/2^64 >= q`` (module docstring) and the other code is exact
    (Lemire's bounded integers), so the mechanism is exactly ``eps'``-DP, ``eps' <= epsilon``.

    Accuracy
    --------
    :func:`estimate_frequencies` is unbiased; see also
    :func:`dpfast.accuracy.randomized_response_error`.

    References
    ----------
    Warner 1965.  Kairouz, Oh, Viswanath, "Extremal Mechanisms for Local Differential
    Privacy", NeurIPS 2014 (k-ary RR).  Lemire, "Fast Random Integer Generation in an
    Interval", ACM TOMACS 2019.
    """
    label = _label(label, "kary_response")
    epsilon = _v.epsilon(epsilon)
    k = _v.integer("k", k, minimum=2, maximum=2**62)
    arr = np.asarray(values)
    if arr.dtype == np.bool_ or arr.dtype.kind not in "iu":
        raise TypeError(f"values must hold integer category codes; got dtype {arr.dtype}")
    scalar = arr.ndim == 0
    # The codes are private, so a code outside [0, k) never raises: it is clamped to the
    # nearest end of the public range (a fixed map of one answer to one answer, which
    # leaves the guarantee unchanged).  uint64 is clamped before the cast to int64.
    if arr.dtype.kind == "u":
        arr = np.minimum(arr, np.uint64(k - 1))
    codes = np.ascontiguousarray(np.clip(arr.astype(np.int64), 0, k - 1), dtype=np.int64)
    gen = _core.secure_rng(rng)
    t = _flip_threshold(epsilon, k)
    charged = _v.budget(budget)
    if charged is not None:
        charge(charged, Cost(epsilon, 0.0), label)
    out: I64Array = _core.rr_kary(codes, k, _TWO64 - 1 if t is None else t, gen)
    return int(out.reshape(())) if scalar else out


def _counts_n(responses: npt.ArrayLike) -> tuple[npt.NDArray[Any], int]:
    arr = np.asarray(responses)
    if arr.size == 0:
        raise ValueError("responses must not be empty")
    return arr, arr.size


def estimate_proportion(
    responses: npt.ArrayLike, *, epsilon: PrivacyParam | None = None, coins: bool = False
) -> tuple[float, float]:
    """Unbiased estimate of the true proportion of ``True`` from binary reports.

    Parameters
    ----------
    responses : array_like of bool (or 0/1)
        Reports of :func:`randomized_response` (or :func:`coin_response` with
        ``coins=True``).
    epsilon : float, optional
        The epsilon the reports were made with (required unless ``coins``).
    coins : bool
        The reports come from :func:`coin_response` (flip probability exactly 1/4).

    Returns
    -------
    (estimate, variance) : (float, float)
        ``p_hat = (y - q') / (1 - 2 q')`` with ``y`` the observed fraction of True and ``q'``
        the flip probability actually used.  It is exactly unbiased for the respondents'
        own proportion (given their answers, its variance is
        ``q'(1 - q') / (n (1 - 2 q')^2)``) and for the proportion p of a population they are
        drawn from independently, where its variance is
        ``lambda (1 - lambda) / (n (1 - 2 q')^2)``, ``lambda = q' + p (1 - 2 q')``; the
        returned variance ``y (1 - y) / ((n - 1)(1 - 2 q')^2)`` is the unbiased estimate of
        the latter (``nan`` for n = 1).  ``p_hat`` may fall outside [0, 1]; it is not
        clipped (clipping would bias it).
    """
    coins = bool(coins)
    if coins:
        q = 0.25
    else:
        if epsilon is None:
            raise TypeError("epsilon is required unless coins=True")
        q = response_probabilities(epsilon, 2)[1]
    arr, n = _counts_n(responses)
    bits, _ = _truth_bits(arr)
    # reports are released values (public), so malformed ones are refused, unlike truths
    if arr.dtype != np.bool_ and not np.all((arr == 0) | (arr == 1)):
        raise ValueError("responses must hold only 0 and 1 (or booleans)")
    y = float(np.count_nonzero(bits)) / n
    scale = 1.0 - 2.0 * q
    if scale <= 0.0:
        raise PrivacyParameterError(
            f"epsilon is so small that the reports carry no "
            f"information; got epsilon={epsilon!r}"
        )
    est = (y - q) / scale
    var = y * (1.0 - y) / ((n - 1) * scale * scale) if n > 1 else math.nan
    return est, var


def estimate_frequencies(
    responses: npt.ArrayLike, k: int, *, epsilon: PrivacyParam
) -> tuple[F64Array, F64Array]:
    """Unbiased estimates of the true category frequencies from k-ary reports.

    Parameters
    ----------
    responses : array_like of int
        Reports of :func:`kary_response`, codes in ``[0, k)``.
    k : int
    epsilon : float
        The epsilon the reports were made with.

    Returns
    -------
    (estimates, variances) : (ndarray, ndarray), each of shape (k,)
        With ``a = P[truth reported]``, ``b = P[a given other code]`` (the probabilities
        actually used, :func:`response_probabilities`) and ``y_c`` the observed fraction of
        code ``c``: ``pi_hat_c = (y_c - b) / (a - b)``, exactly unbiased since
        ``E[y_c] = b + pi_c (a - b)``.  For respondents drawn independently from a
        population with frequencies pi its variance is
        ``lambda_c (1 - lambda_c)/(n (a - b)^2)``, ``lambda_c = b + pi_c (a - b)``, estimated
        without bias by ``y_c (1 - y_c) / ((n - 1)(a - b)^2)``.  The estimates sum to 1.
    """
    k = _v.integer("k", k, minimum=2, maximum=2**62)
    a, b = response_probabilities(epsilon, k)
    arr, n = _counts_n(responses)
    if arr.dtype == np.bool_ or arr.dtype.kind not in "iu":
        raise TypeError(f"responses must hold integer codes; got dtype {arr.dtype}")
    if int(arr.min()) < 0 or int(arr.max()) >= k:
        raise ValueError(f"responses must be codes in [0, {k})")
    y = np.bincount(arr.ravel().astype(np.int64), minlength=k)[:k] / n
    scale = a - b
    if scale <= 0.0:
        raise PrivacyParameterError(
            f"epsilon is so small that the reports carry no "
            f"information; got epsilon={epsilon!r}"
        )
    est = (y - b) / scale
    var = y * (1.0 - y) / ((n - 1) * scale * scale) if n > 1 else np.full(k, math.nan)
    return est, var
