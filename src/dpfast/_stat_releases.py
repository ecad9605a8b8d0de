"""Everyday statistics beyond count/sum/mean: variance, std, several quantiles at once,
categorical counts, and private bounds estimation (to be re-exported by dpfast.stats).

Neighbouring data sets differ by adding or removing one record.  Every bound, category
list and candidate grid is a public argument.  Values are real numbers; a NaN record is
dropped and ±inf is clamped to the public bounds (``finite_records``), which changes no
sensitivity: dropping or clamping is a per-record map.  Noise is exact (discrete Laplace
on integers via :mod:`dpfast.mechanisms`; the exact exponential mechanism of
:mod:`dpfast.selection`) and drawn from the CSPRNG unless ``rng`` says otherwise.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any, NamedTuple, cast, overload

import numpy as np
import numpy.typing as npt

from . import _axes, _core, _draw, _keys
from . import _validation as _v
from ._active import label as _label
from ._errors import PrivacyParameterError
from ._plans import GRID_BITS
from ._privacy import Cost, charge
from ._privacy import float_down as _down
from ._typing import PrivacyParam
from .selection import exponential_release

__all__ = ["variance", "std", "quantiles", "counts", "estimate_bounds", "finite_records"]

_CHUNK = 1 << 20  # exact int64 partial sums, accumulated as Python ints

FloatArray = npt.NDArray[np.float64]


class Bounds(NamedTuple):
    """Clamping bounds released by :func:`estimate_bounds`."""

    lower: float
    upper: float


# ------------------------------------------------------------------ shared helpers


def finite_records(values: npt.ArrayLike, lower: float, upper: float) -> FloatArray:
    """The records of ``values`` as float64, NaN dropped, everything clamped to
    ``[lower, upper]`` (so ±inf become the bounds).

    One record policy for every release with public bounds: dropping a NaN record or
    clamping a value is a function of that record alone, so a neighbour still differs by
    at most one (clamped) record and no sensitivity changes.  ``values`` must have a real
    dtype that converts to float64 exactly (refused by type otherwise)."""
    arr = _real_array(values)
    arr = arr[~np.isnan(arr)]
    clipped: FloatArray = np.clip(arr, lower, upper)
    return clipped


def _real_array(values: Any, name: str = "values") -> FloatArray:
    """Private records as a flat float64 array: the one exact converter of private data
    (dpfast._validation.float_data; inexact types refused by type, integers clamped)."""
    return _axes.records(name, values)


def _exact_sum(ints: npt.NDArray[np.int64]) -> int:
    """The exact sum of an int64 array whose chunks of 2^20 cannot overflow."""
    return sum(
        int(ints[i : i + _CHUNK].sum(dtype=np.int64)) for i in range(0, ints.size, _CHUNK)
    )


def _noisy_int(value: int, epsilon: float, sensitivity: float, gen: Any) -> int:
    # the release charged its whole cost and resolved gen
    return int(_draw.laplace_release(int(value), epsilon, sensitivity, gen))


def _check_int_noise(epsilon: float, sensitivity: float) -> None:
    """Prepare the exact sampler now, so that parameters it cannot serve are refused
    before the budget is charged."""
    if not epsilon > 0.0:
        raise PrivacyParameterError(
            f"epsilon is too small: a share of it ({epsilon!r}) is below the smallest double"
        )
    _draw.laplace_int_plan(epsilon, sensitivity)


# ------------------------------------------------------------------ variance, std


def _var_grid(lo: float, hi: float) -> tuple[float, int, int]:
    half = hi / 2.0 - lo / 2.0  # (hi - lo itself may overflow)
    if half > 2.0**510:
        raise PrivacyParameterError(
            f"upper - lower must be at most 2**511 for the variance (its square must be a "
            f"double); got lower={lo!r}, upper={hi!r}"
        )
    _, e = math.frexp(half)
    step = math.ldexp(1.0, e - GRID_BITS.variance)
    if step == 0.0:
        raise PrivacyParameterError(
            f"bounds [{lo!r}, {hi!r}] are too close for the value grid"
        )
    qlo, qhi = math.floor(lo / step), math.ceil(hi / step)  # exact: step = 2^j
    return step, qlo, qhi


@overload
def variance(
    values: npt.ArrayLike,
    *,
    lower: float,
    upper: float,
    epsilon: PrivacyParam,
    ddof: int = ...,
    axis: None = ...,
    rng: Any = ...,
    budget: Any = ...,
    label: str | None = ...,
) -> float: ...
@overload
def variance(
    values: npt.ArrayLike,
    *,
    lower: float,
    upper: float,
    epsilon: PrivacyParam,
    ddof: int = ...,
    axis: int,
    rng: Any = ...,
    budget: Any = ...,
    label: str | None = ...,
) -> Any: ...
def variance(
    values: npt.ArrayLike,
    *,
    lower: float,
    upper: float,
    epsilon: PrivacyParam,
    ddof: int = 0,
    axis: int | None = None,
    rng: Any = None,
    budget: Any = None,
    label: str | None = None,
) -> Any:
    """The variance of the values clamped to ``[lower, upper]``, with noise.

    Parameters
    ----------
    values : array_like of real, pandas Series or DataFrame
        One value per record; NaN records are dropped, ±inf clamped.
    lower, upper : float
        Public bounds, ``lower < upper``; never take them from the data (or see
        :func:`estimate_bounds`, which spends budget).
    epsilon : float > 0
        Total; a third each for the count, the sum and the sum of squares.
    ddof : int, 0 or 1
        Divide by ``n - ddof`` (numpy's convention, default 0; pandas' default is 1), with
        the noisy n.
    axis : None or int
        As in :func:`dpfast.stats.sum`: ``axis=0`` gives one variance per column, each
        with ``epsilon / k`` (they compose).
    rng, budget
        As everywhere; ``budget`` (None: the active budget, if any) is charged
        ``(epsilon, 0)`` once before any draw.
    label : str, optional
        Recorded with the charge (default: the function's name).

    Returns
    -------
    float, or with ``axis=`` an ndarray (a Series for a DataFrame) of floats
        In ``[0, ((upper - lower) / 2)^2]``; the upper end if the noisy count is below
        ``ddof + 1``.

    Privacy
    -------
    Each value is clamped and rounded to a public grid ``s = 2^j <= (upper-lower) 2^-15``,
    ``q in [qlo, qhi]``, and centred in half-steps: ``h = 2q - qlo - qhi in [-W, W]``,
    ``W = qhi - qlo``.  Three integer statistics are released, each with exact discrete
    Laplace noise and ``epsilon/3``:

    * ``n`` (sensitivity 1: one record more or less),
    * ``S1 = sum h`` (sensitivity W: one term in ``[-W, W]``),
    * ``S2 = sum (2 h^2 - W^2)`` (sensitivity W^2: one term in ``[-W^2, W^2]``).

    Basic composition (Dwork & Roth Thm 3.14) makes the triple epsilon-DP; the
    variance ``(s/2)^2 (E[h^2] - E[h]^2)`` with ``E[h] = S1/n``, ``E[h^2] = (S2/n + W^2)/2``,
    clamped to its possible range, is post-processing.  (Centring at the midpoint makes
    the sensitivities depend on the width ``upper - lower``, not on ``max |bound|``.)

    Accuracy
    --------
    With n records, the error is about ``(upper - lower)^2 / (n epsilon)`` times a small
    constant (the squares' noise of scale ``3 W^2/epsilon`` divided by ``2n``, in units of
    ``(s/2)^2``), plus the rounding of the grid (relative 2^-15 of the width).

    References
    ----------
    Dwork & Roth 2014, Thm 3.6, 3.14.  Du, Foot, Moniot, Bray & Groce, "Differentially
    private confidence intervals" (2020), for the three-statistic estimator.
    """
    if axis is not None or _axes.is_pandas(values):
        return _axes.along(
            variance,
            values,
            axis,
            epsilon=epsilon,
            budget=budget,
            rng=rng,
            label=label,
            lower=lower,
            upper=upper,
            ddof=ddof,
        )
    epsilon = _v.epsilon(epsilon)
    lo, hi = _v.bounds(lower, upper)
    ddof = _v.integer("ddof", ddof, minimum=0, maximum=1)
    step, qlo, qhi = _var_grid(lo, hi)
    w = qhi - qlo
    third = _down(Fraction(epsilon) / 3)  # the three shares never exceed epsilon
    for sens in (1, w, w * w):
        _check_int_noise(third, float(sens))
    label = _label(label, "variance")
    arr = _real_array(values)
    gen = _core.secure_rng(rng)
    charged = _v.budget(budget)
    if charged is not None:
        charge(charged, Cost(epsilon, 0.0), label)
    x = finite_records(arr, lo, hi)
    q = np.clip(np.rint(x / step), qlo, qhi).astype(np.int64)
    h = 2 * q - (qlo + qhi)
    n_noisy = _noisy_int(x.size, third, 1.0, gen)
    s1 = _noisy_int(_exact_sum(h), third, float(w), gen)
    s2 = _noisy_int(_exact_sum(2 * h * h - w * w), third, float(w * w), gen)
    top = (hi / 2.0 - lo / 2.0) ** 2  # <= 2**1020 (_var_grid)
    if n_noisy < ddof + 1:
        return top
    n = Fraction(n_noisy)
    mean_h = Fraction(s1) / n
    mean_h2 = (Fraction(s2) / n + w * w) / 2
    var_h = (mean_h2 - mean_h * mean_h) * n / (n - ddof)
    v = var_h * Fraction(step) ** 2 / 4
    # clamped before the conversion: the noisy v itself may be beyond the doubles
    return float(min(max(v, Fraction(0)), Fraction(top)))


@overload
def std(
    values: npt.ArrayLike,
    *,
    lower: float,
    upper: float,
    epsilon: PrivacyParam,
    ddof: int = ...,
    axis: None = ...,
    rng: Any = ...,
    budget: Any = ...,
    label: str | None = ...,
) -> float: ...
@overload
def std(
    values: npt.ArrayLike,
    *,
    lower: float,
    upper: float,
    epsilon: PrivacyParam,
    ddof: int = ...,
    axis: int,
    rng: Any = ...,
    budget: Any = ...,
    label: str | None = ...,
) -> Any: ...
def std(
    values: npt.ArrayLike,
    *,
    lower: float,
    upper: float,
    epsilon: PrivacyParam,
    ddof: int = 0,
    axis: int | None = None,
    rng: Any = None,
    budget: Any = None,
    label: str | None = None,
) -> Any:
    """The standard deviation of the clamped values: ``sqrt(variance(...))``.

    Same arguments (``axis=`` included), privacy (epsilon-DP; the square root is
    post-processing) and references as :func:`variance`; in ``[0, (upper - lower)/2]``.
    """
    var: Any = variance(
        values,
        lower=lower,
        upper=upper,
        epsilon=epsilon,
        ddof=ddof,
        axis=cast(int, axis),
        rng=rng,
        budget=budget,
        label=label,
    )
    return math.sqrt(var) if isinstance(var, float) else np.sqrt(var)


# ------------------------------------------------------------------ quantiles


def _levels(qs: Any) -> list[float]:
    seq = [qs] if np.ndim(qs) == 0 else list(np.ravel(np.asarray(qs, dtype=object)))
    if not seq:
        raise PrivacyParameterError("qs must name at least one quantile level")
    return [_v.probability("qs", q) for q in seq]


def _depth(m: int) -> int:
    """Levels of the recursion on m quantiles (middle one first, then each side)."""
    return 0 if m == 0 else 1 + max(_depth(m // 2), _depth(m - m // 2 - 1))


def _candidates(candidates: int | npt.ArrayLike, lo: float, hi: float) -> FloatArray:
    if isinstance(candidates, (int, np.integer)) and not isinstance(
        candidates, (bool, np.bool_)
    ):
        k = _v.integer("candidates", candidates, minimum=2, maximum=2**24)
        return _v.even_grid(lo, hi, k)
    cand: FloatArray = _v.float_array("candidates", candidates)
    if cand.ndim != 1 or cand.size == 0:
        raise PrivacyParameterError("candidates must be a non-empty 1-d array of values")
    return np.unique(np.clip(cand, lo, hi))


def _em_quantile(
    srt: FloatArray, level: float, cand: FloatArray, eps: float, gen: Any
) -> int:
    """Index into cand of an epsilon-DP ``level``-quantile of the sorted values ``srt``
    (the exponential mechanism of dpfast.selection on integer utilities; see quantiles)."""
    b = 1 << GRID_BITS.quantile_level
    a = round(level * b)
    less = np.searchsorted(srt, cand, side="left").astype(np.int64)
    greater = srt.size - np.searchsorted(srt, cand, side="right").astype(np.int64)
    scores = -np.abs((b - a) * less - a * greater)
    # charged by the caller, which resolved gen
    return exponential_release(
        scores, epsilon=eps, sensitivity=float(max(a, b - a)), rng=gen
    )


def quantiles(
    values: npt.ArrayLike,
    qs: float | npt.ArrayLike,
    *,
    lower: float,
    upper: float,
    epsilon: PrivacyParam,
    candidates: int | npt.ArrayLike = 1025,
    axis: int | None = None,
    rng: Any = None,
    budget: Any = None,
    label: str | None = None,
) -> Any:
    """Several quantiles at once, sharing the budget, by recursive splitting.

    Parameters
    ----------
    values : array_like of real, pandas Series or DataFrame
        One value per record; NaN dropped, ±inf clamped.
    qs : float or sequence of float in [0, 1]
        Quantile levels (rounded to multiples of 2^-16; public), in any order.
    lower, upper : float
        Public bounds of the candidates.
    epsilon : float > 0
        Total for all the levels.
    candidates : int or array_like of float
        Number of evenly spaced public candidates in ``[lower, upper]`` (default 1025),
        or the candidates themselves (public; clamped to the bounds).
    axis : None or int
        As in :func:`dpfast.stats.sum`: ``axis=0`` gives the levels of every column
        (shape ``(len(qs), k)``, as ``np.quantile(a, qs, axis=0)``), each column with
        ``epsilon / k`` (they compose).
    rng, budget
        As everywhere; ``budget`` (None: the active budget, if any) is charged
        ``(epsilon, 0)`` once before any draw.
    label : str, optional
        Recorded with the charge (default: the function's name).

    Returns
    -------
    ndarray of float64, pandas Series or DataFrame
        One candidate per level, in the order of ``qs``; non-decreasing in the level.  For
        a Series, a Series indexed by the levels (named as the input); for a DataFrame
        with ``axis=0``, a DataFrame indexed by the levels with its columns (pandas'
        ``DataFrame.quantile``).

    Privacy
    -------
    The approximate-quantiles algorithm of Kaplan, Schnapp & Stemmer (2022): the middle
    level is chosen first by the exponential mechanism among the candidates; the data and
    candidates are then split at the chosen value ``v`` (records ``< v`` left, ``>= v``
    right; candidates ``<= v`` left, ``>= v`` right) and the lower and upper levels are
    solved recursively on each side, with levels rescaled to the side.  Given the values
    chosen so far (adaptive composition), each record falls in exactly one node per level
    of the recursion, so each level costs one exponential mechanism (parallel
    composition); with ``L = floor(log2 m) + 1`` levels for m quantiles, each call gets
    ``epsilon / L`` and the whole is epsilon-DP.

    Each call is the exponential mechanism (Dwork & Roth Thm 3.10) with the integer
    utility ``-|(2^16 - a) L_c - a G_c|``, ``a = level 2^16``, ``L_c = #{x < c}``,
    ``G_c = #{x > c}`` in the node: adding or removing a record changes ``L_c`` or ``G_c``
    by at most one, so the sensitivity is ``max(a, 2^16 - a)``.  Sampled exactly
    (:func:`dpfast.selection.exponential_mechanism`, secure).

    Accuracy
    --------
    Each level's rank error is ``O(L (ln K + ln(m/beta)) / epsilon)`` records with
    probability ``1 - beta`` for K candidates (Cor. 3.12 per call, union bound), against
    ``O(m (...) / epsilon)`` for m independent calls splitting the budget.

    References
    ----------
    Kaplan, Schnapp & Stemmer, "Differentially Private Approximate Quantiles", ICML 2022.
    Smith, STOC 2011.  Dwork & Roth 2014, Thm 3.10, Cor. 3.12.
    """
    if axis is not None or _axes.is_pandas(values):
        return _axes.along(
            quantiles,
            values,
            axis,
            epsilon=epsilon,
            budget=budget,
            rng=rng,
            levels=_level_labels(qs),
            qs=qs,
            lower=lower,
            upper=upper,
            candidates=candidates,
            label=label,
        )
    return _quantiles(
        values,
        qs,
        lower,
        upper,
        epsilon,
        candidates,
        rng,
        budget,
        _label(label, "quantiles"),
    )


def _level_labels(qs: Any) -> list[Any]:
    """The levels as given (for a pandas index), checked as :func:`_levels` checks them."""
    _levels(qs)
    return [qs] if np.ndim(qs) == 0 else list(np.ravel(np.asarray(qs, dtype=object)))


def _quantiles(
    values: Any,
    qs: Any,
    lower: float,
    upper: float,
    epsilon: PrivacyParam,
    candidates: int | npt.ArrayLike,
    rng: Any,
    budget: Any,
    label: str,
) -> FloatArray:
    epsilon = _v.epsilon(epsilon)
    lo, hi = _v.bounds(lower, upper)
    levels = _levels(qs)
    cand = _candidates(candidates, lo, hi)
    arr = _real_array(values)
    gen = _core.secure_rng(rng)
    order = sorted(range(len(levels)), key=levels.__getitem__)
    sorted_levels = [levels[i] for i in order]
    eps_call = _down(Fraction(epsilon) / _depth(len(levels)))
    if not eps_call > 0.0:
        raise PrivacyParameterError(
            f"epsilon={epsilon!r} is too small to split between {_depth(len(levels))} levels "
            "of quantiles (each must be at least the smallest double)"
        )
    charged = _v.budget(budget)
    if charged is not None:
        charge(charged, Cost(epsilon, 0.0), label)
    srt = np.sort(finite_records(arr, lo, hi))
    found = [0.0] * len(levels)

    def solve(lv: list[float], idx: list[int], data: FloatArray, cands: FloatArray) -> None:
        # lv: the levels (in [0, 1], sorted) of this node; idx: their output slots
        if not lv:
            return
        mid = len(lv) // 2
        v = float(cands[_em_quantile(data, lv[mid], cands, eps_call, gen)])
        found[idx[mid]] = v
        cut = np.searchsorted(data, v, side="left")
        left, right = data[:cut], data[cut:]
        p = lv[mid]
        solve(
            [x / p for x in lv[:mid]] if p > 0 else [0.0] * mid,
            idx[:mid],
            left,
            cands[cands <= v],
        )
        solve(
            [(x - p) / (1 - p) for x in lv[mid + 1 :]]
            if p < 1
            else [1.0] * (len(lv) - mid - 1),
            idx[mid + 1 :],
            right,
            cands[cands >= v],
        )

    solve(sorted_levels, order, srt, cand)
    return np.array(found, dtype=np.float64)


# ------------------------------------------------------------------ categorical counts


def counts(
    values: Any,
    categories: Any,
    *,
    epsilon: PrivacyParam,
    rng: Any = None,
    budget: Any = None,
    label: str | None = None,
) -> Any:
    """How many records fall in each of a public list of categories, with noise.

    Parameters
    ----------
    values : array_like or pandas.Series
        One category per record; records in no listed category are not counted.
    categories : sequence
        The public categories (distinct); never taken from the data.
    epsilon : float > 0
    rng, budget
        As everywhere; ``budget`` (None: the active budget, if any) is charged
        ``(epsilon, 0)`` once before any draw.
    label : str, optional
        Recorded with the charge (default: the function's name).

    Returns
    -------
    pandas.Series or dict
        Noisy int counts indexed by category (a Series named ``"count"`` whose index has
        the input's name when ``values`` is a pandas Series or Categorical, as pandas'
        ``value_counts``; else a dict in the order of ``categories``).  Every category is present,
        also those without records.

    Privacy
    -------
    A record is in at most one category, so the vector of counts has l1 sensitivity 1
    (Dwork & Roth Example 3.2) and independent discrete Laplace noise of scale
    ``1/epsilon`` on each count is epsilon-DP, whatever the number of categories.

    Accuracy
    --------
    ``P[max |noise| >= ln(k/beta)/epsilon] <= beta`` over k categories (Thm 3.8).

    References
    ----------
    Dwork & Roth 2014, Example 3.2, Thm 3.8.  Ghosh, Roughgarden & Sundararajan, STOC 2009.
    """
    epsilon = _v.epsilon(epsilon)
    label = _label(label, "counts")
    cats = list(categories) if not isinstance(categories, (str, bytes)) else None
    if not cats:
        raise PrivacyParameterError("categories must be a non-empty sequence of categories")
    canon = [_keys.canon(c) for c in cats]  # public: keys compare as records' do
    where = {c: i for i, c in enumerate(canon) if c is not None}
    if any(c is None for c in canon):
        raise TypeError("categories must be hashable")
    if len(where) != len(cats):
        raise PrivacyParameterError("categories must not repeat a category")
    _check_int_noise(epsilon, 1.0)
    is_pandas = type(values).__module__.split(".")[0] == "pandas"
    raw = values.to_numpy() if is_pandas else values
    # private records: a numpy array keeps its dtype; any other sequence is read
    # element by element (one stray element never recasts the others: dpfast._keys)
    if isinstance(raw, np.ndarray):
        arr = raw
    elif isinstance(raw, (str, bytes)) or not hasattr(raw, "__len__"):
        raise TypeError(f"values must be a sequence or array; got {type(raw).__name__}")
    else:
        arr = _keys.from_sequence(raw)
    if arr.ndim != 1:
        raise ValueError(
            f"values must be one-dimensional (one category per record); got "
            f"shape {arr.shape}: pass the one column to count"
        )
    gen = _core.secure_rng(rng)
    charged = _v.budget(budget)
    if charged is not None:
        charge(charged, Cost(epsilon, 0.0), label)
    uniq, codes, n_codes = _keys.factorize(arr, "values")
    assert uniq is not None  # need_uniques=True always returns them
    pos = _keys.lookup(where, _keys.canonical_of(uniq))
    rec = np.where(codes >= 0, pos[np.maximum(codes, 0)], -1) if codes.size else codes
    true = np.bincount(rec[rec >= 0], minlength=len(cats)).astype(np.int64)
    noisy = _draw.laplace_release(true, epsilon, 1.0, gen)  # charged above
    if is_pandas:
        import pandas as pd

        # pandas' value_counts: indexed by the categories, the index named as the data
        return pd.Series(
            noisy, index=pd.Index(cats, name=getattr(values, "name", None)), name="count"
        )
    return {c: int(v) for c, v in zip(cats, cast(npt.NDArray[np.int64], noisy))}


# ------------------------------------------------------------------ bounds estimation


def estimate_bounds(
    values: npt.ArrayLike,
    *,
    epsilon: PrivacyParam,
    quantile: float = 0.99,
    smallest: float = 2.0**-10,
    largest: float = 2.0**40,
    rng: Any = None,
    budget: Any = None,
    label: str | None = None,
) -> Bounds:
    """**Spends budget**: private clamping bounds for :func:`sum`/:func:`mean` when you
    have none, by the exponential mechanism on a public log-scale grid.

    Parameters
    ----------
    values : array_like of real
        One value per record; NaN dropped, ±inf clamped to the grid's ends.
    epsilon : float > 0
        Spent here (charged to ``budget``), in addition to what the sum or mean costs.
    quantile : float in (0.5, 1)
        The bounds target the ``1 - quantile`` and ``quantile`` quantiles: a fraction of
        about ``1 - quantile`` of the records on each side gets clamped.
    smallest, largest : float, 0 < smallest < largest
        The public grid: ``0`` and ``±2^k`` for every power of two from ``smallest`` to
        ``largest`` (rounded outward to powers of two).
    rng, budget
        As everywhere; ``budget`` (None: the active budget, if any) is charged
        ``(epsilon, 0)`` once before any draw.
    label : str, optional
        Recorded with the charge (default ``"estimate_bounds"``).

    Returns
    -------
    Bounds(lower, upper)
        Grid points with ``lower < upper``, to pass as public bounds to a release whose
        own epsilon is charged separately: the pair is epsilon-DP, so by composition the
        whole is (epsilon + epsilon_release)-DP.

    Privacy
    -------
    :func:`quantiles` at the two levels ``1 - quantile`` and ``quantile`` over the log
    grid: epsilon-DP (Kaplan, Schnapp & Stemmer 2022; two levels of recursion, each an
    exponential mechanism of ``epsilon/2``).  The grid depends only on ``smallest`` and
    ``largest``.  If both choices land on the same grid point the upper bound is moved to
    the next grid point (post-processing).

    Accuracy
    --------
    Each bound is within a factor 2 of a value whose rank is within
    ``O((ln K + ln(1/beta))/epsilon)`` records of the target rank (K grid points), with
    probability ``1 - beta``.

    References
    ----------
    Kaplan, Schnapp & Stemmer, ICML 2022.  Dwork & Roth 2014, Thm 3.10.  The same
    log-scale idea is used by Tumult Analytics and OpenDP for clamping bounds.
    """
    epsilon = _v.epsilon(epsilon)
    quantile = _v.open_probability("quantile", quantile)
    if not quantile > 0.5:
        raise PrivacyParameterError(f"quantile must be in (0.5, 1); got {quantile!r}")
    small = _v.positive("smallest", smallest)
    large = _v.positive("largest", largest)
    if not small < large:
        raise PrivacyParameterError(
            f"largest must be > smallest; got {smallest!r}, {largest!r}"
        )
    k0 = math.frexp(small)[1] - 1  # 2^k0 <= smallest
    m, e = math.frexp(large)
    k1 = e - 1 if m == 0.5 else e  # 2^k1 >= largest
    if k1 > 1023 or k1 - k0 > 4096:
        raise PrivacyParameterError("the grid from smallest to largest is too large")
    pos = [math.ldexp(1.0, k) for k in range(k0, k1 + 1)]
    grid = np.array([-p for p in reversed(pos)] + [0.0] + pos)
    lo_q, hi_q = _quantiles(
        values,
        [1.0 - quantile, quantile],
        grid[0],
        grid[-1],
        epsilon,
        grid,
        rng,
        budget,
        _label(label, "estimate_bounds"),
    )
    if not lo_q < hi_q:
        i = int(np.searchsorted(grid, hi_q))
        if i + 1 < grid.size:
            hi_q = float(grid[i + 1])
        else:
            lo_q = float(grid[i - 1])
    return Bounds(float(lo_q), float(hi_q))
