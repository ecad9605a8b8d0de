"""Everyday releases: count, bounded sum and mean, histogram, quantile; variance, std,
several quantiles, categorical counts and private bounds estimation (module
``_stat_releases``); grouped releases with contribution bounding (module ``grouped``).

Neighbouring data sets differ by adding or removing one record (Dwork & Roth).  Every
bound (``lower``, ``upper``, ``bins``, quantile candidates) is a public argument and is never
computed from the data: bounds taken from the data would themselves leak.

Secure mode (default) releases integers with exact discrete Laplace noise
(:func:`dpfast.mechanisms.geometric_mechanism`).  Real values are first clamped and rounded
to a public power-of-two grid and summed *exactly as integers*, so no floating-point
rounding of the data enters the released value (Mironov 2012); the rounding is charged to
the sensitivity.  ``mode="fast"`` uses float Laplace noise (simulation only).

Each function charges ``budget.spend(epsilon, 0.0, label=...)`` once, after validation and
before any noise is drawn: ``budget=`` if given, else the active budget of an enclosing
``with b.active():`` (none: nothing is charged, and you account for the release;
``budget=dpfast.NO_BUDGET``: nothing even inside such a block).  ``label=`` names the
charge (default: the function's name).  A predictable ``rng`` or ``mode="fast"`` warns
(``dpfast.InsecureRandomnessWarning``).

Non-finite records (one policy for every release; docs/security-model.md)
--------------------------------------------------------------------------
Records are private, so no record value ever raises.  A **NaN** record is dropped, as if
the record were absent: ``sum``, ``mean``, ``quantile`` and ``histogram`` see the data set
without it (``mean`` also divides by the number of records kept).  Dropping is a stable
transformation (adding or removing one record changes the kept records by at most one),
so every sensitivity below is unchanged.  A **±inf** record is an ordinary value beyond
every finite bound: ``sum`` and ``mean`` clamp it to ``upper`` / ``lower`` like any other
out-of-range value, ``quantile`` ranks it above / below every candidate, and
``histogram`` does not count it (it lies outside the bins, like any out-of-range value).
``count`` counts records, whatever they hold.  Data whose *type* cannot be converted to
float64 exactly (np.longdouble, object, Decimal) raises ``TypeError``; integers beyond
2**53 are clamped to ±2**53 (within every bound such a release can use exactly).

numpy's ``axis=``, pandas in and out
------------------------------------
``sum``, ``mean``, ``quantile``, ``quantiles``, ``variance`` and ``std`` take ``axis=``
as numpy's reductions do: ``axis=None`` (default) treats every value as one record (a 2-d
array is flattened, as by ``np.sum(a)``); ``axis=0`` treats the rows as the records and
releases one statistic per column (``np.sum(a, axis=0)``), ``axis=1`` one per row.  A
record then contributes to every statistic, so the releases *compose* (not parallel
composition): ``epsilon`` is the total of the call, split evenly (each column gets
``epsilon / k``, rounded down) and charged once.  pandas data keeps its labels: a
DataFrame with ``axis=0`` gives a Series indexed by its columns, with ``axis=1`` one
indexed by its index; a Series gives what an array gives (several ``quantiles``: a
Series indexed by the levels, named as the input).  pandas is imported only when the data
is a pandas object (module ``dpfast._axes``).
"""

from __future__ import annotations

import math
import sys
from fractions import Fraction
from typing import Any, cast, overload

import numpy as np
import numpy.typing as npt

from . import _axes, _core, _draw, _insecure
from . import _validation as _v
from ._active import label as _label
from ._errors import PrivacyParameterError
from ._plans import GRID_BITS
from ._privacy import Cost, charge
from ._typing import PrivacyParam
from .selection import _common as _sel_common
from .selection import exponential_release

__all__ = [
    "count",
    "sum",
    "mean",
    "histogram",
    "quantile",
    "variance",
    "std",
    "quantiles",
    "counts",
    "estimate_bounds",
    "Bounds",
    "grouped_release",
    "partition_selection_probability",
]

_builtin_sum = sum
FloatArray = npt.NDArray[np.float64]
_MAX_BINS = 2**28  # a public size limit: 2**28 noisy counts are 2 GiB already


def _mode(mode: str) -> str:
    return _insecure.mode(mode)


def _check_noise(epsilon: float, sensitivity: float, mode: str) -> None:
    """Refuse now, before the charge, the parameters :func:`_int_release` could not
    serve (an epsilon share below the doubles, a noise scale beyond the exact sampler's
    or the doubles' range): public parameters only."""
    if not epsilon > 0.0:
        raise PrivacyParameterError(
            f"epsilon is too small: a share of it ({epsilon!r}) is below the smallest double"
        )
    if mode == "secure":
        _draw.laplace_int_plan(epsilon, float(sensitivity))
    elif not 0.0 < sensitivity / epsilon < math.inf:
        raise PrivacyParameterError(
            f"sensitivity / epsilon = {sensitivity!r} / {epsilon!r} is outside the range of "
            "doubles"
        )


def _fsum(x: FloatArray) -> float:
    """math.fsum, saturated at the largest double (fast mode: the sum of clamped values
    may pass it, and fsum would raise OverflowError, a decision of the data)."""
    try:
        return math.fsum(x)
    except OverflowError:
        return _MAX_DOUBLE if float(np.sum(x / 2.0)) > 0 else -_MAX_DOUBLE


def _saturate(x: float) -> float:
    return min(max(x, -_MAX_DOUBLE), _MAX_DOUBLE)


def _int_release(
    value: Any, epsilon: float, sensitivity: float, rng: Any, mode: str
) -> Any:
    """Discrete Laplace (secure) or float Laplace (fast) release of an integer (array);
    the release charged its cost and resolved ``rng`` (a bit generator) and ``mode``."""
    if mode == "secure":
        return _draw.geometric_release(value, epsilon, sensitivity, rng)
    return _draw.laplace_release(
        np.asarray(value, dtype=np.float64)
        if not np.isscalar(value)
        else float(cast(Any, value)),
        epsilon,
        sensitivity,
        rng,
        "fast",
    )


def _values(values: npt.ArrayLike) -> FloatArray:
    """The records as a 1-d float64 array, NaN records dropped (module docstring)."""
    arr: FloatArray = _axes.records("values", values)
    keep = ~np.isnan(arr)
    return arr if keep.all() else arr[keep]


_MAX_DOUBLE = sys.float_info.max


def _value_grid(lo: float, hi: float) -> tuple[float, int, int]:
    """Public grid 2^j <= max(|lo|, |hi|) 2^-30, and the bounds rounded outward to it (so
    qlo <= qhi even for bounds closer than one step)."""
    _, e = math.frexp(max(abs(lo), abs(hi)))
    j = e - 1 - GRID_BITS.sum_value
    step = math.ldexp(1.0, j)
    if step == 0.0:
        raise PrivacyParameterError(
            f"bounds [{lo!r}, {hi!r}] are too close to 0 for the value grid (2^-1074)"
        )
    qlo, qhi = math.floor(lo / step), math.ceil(hi / step)  # exact: step is 2^j
    return step, qlo, qhi


def _grid_ints(
    arr: FloatArray, lo: float, hi: float, step: float, qlo: int, qhi: int
) -> npt.NDArray[np.int64]:
    """Clamp to [lo, hi], round to the grid, keep within [qlo, qhi] (grid steps, int64)."""
    q = np.rint(np.clip(arr, lo, hi) / step)
    ints: npt.NDArray[np.int64] = np.clip(q, qlo, qhi).astype(np.int64)
    return ints


def count(
    data: Any,
    *,
    epsilon: PrivacyParam,
    rng: Any = None,
    mode: str = "secure",
    budget: Any = None,
    label: str | None = None,
) -> int | float:
    """The number of records in ``data`` (``len(data)``), with noise.

    Parameters
    ----------
    data : sized collection (list, array, data frame ...)
        One entry per record; pass only the records that satisfy your condition.
    epsilon : float
    rng : None, ChaCha20, numpy BitGenerator or Generator
    mode : {"secure", "fast"}
    budget : object with ``spend(epsilon, delta, *, label)``, optional
        Charged ``(epsilon, 0)`` before any noise; None: the active budget
        (``with b.active():``), if any; ``dpfast.NO_BUDGET``: nothing.
    label : str, optional
        Recorded with the charge (default: the function's name).

    Returns
    -------
    int (secure) or float (fast)

    Privacy
    -------
    Sensitivity 1 (Example 3.1: adding or removing a record changes the count by one);
    secure mode adds exact discrete Laplace noise ``P[z] ∝ exp(-epsilon |z|)``, which is
    epsilon-DP (the geometric mechanism; Thm 3.6's argument on the integers).

    Accuracy
    --------
    ``P[|noise| >= ln(1/beta)/epsilon] <= beta`` (Fact 3.7; for the discrete noise the bound
    holds too); :func:`dpfast.accuracy.laplace_error`.

    References
    ----------
    Dwork & Roth 2014, Example 3.1, Thm 3.6.  Ghosh, Roughgarden, Sundararajan,
    "Universally utility-maximizing privacy mechanisms", STOC 2009.
    """
    epsilon = _v.epsilon(epsilon)
    mode = _mode(mode)
    label = _label(label, "count")
    n = len(data)
    gen = _core.secure_rng(rng)
    _check_noise(epsilon, 1, mode)
    charged = _v.budget(budget)
    if charged is not None:
        charge(charged, Cost(epsilon, 0.0), label)
    noisy: int | float = _int_release(int(n), epsilon, 1, gen, mode)
    return noisy


@overload
def sum(
    values: npt.ArrayLike,
    *,
    lower: float,
    upper: float,
    epsilon: PrivacyParam,
    axis: None = ...,
    rng: Any = ...,
    mode: str = ...,
    budget: Any = ...,
    label: str | None = ...,
) -> float: ...
@overload
def sum(
    values: npt.ArrayLike,
    *,
    lower: float,
    upper: float,
    epsilon: PrivacyParam,
    axis: int,
    rng: Any = ...,
    mode: str = ...,
    budget: Any = ...,
    label: str | None = ...,
) -> Any: ...
def sum(
    values: npt.ArrayLike,
    *,
    lower: float,
    upper: float,
    epsilon: PrivacyParam,
    axis: int | None = None,
    rng: Any = None,
    mode: str = "secure",
    budget: Any = None,
    label: str | None = None,
) -> Any:
    """The sum of the values clamped to ``[lower, upper]``, with noise.

    Parameters
    ----------
    values : array_like of real, pandas Series or DataFrame
        One value per record (NaN records are dropped, ±inf clamped: module docstring).
    lower, upper : float
        Public clamping bounds, ``lower < upper``; never take them from the data.
    epsilon : float
        Total for the call: with ``axis=``, each of the k sums gets ``epsilon / k``.
    axis : None or int
        ``None``: every value is a record.  ``0``: rows are records, one sum per column
        (a DataFrame gives a Series indexed by its columns); ``1``: one sum per row.
        See the module docstring (the per-column sums compose).
    rng, mode, budget, label
        As in :func:`count`; ``budget`` is charged ``(epsilon, 0)`` once.

    Returns
    -------
    float, or with ``axis=`` an ndarray (a Series for a DataFrame) of floats

    Privacy
    -------
    Adding or removing one record changes the clamped sum by at most
    ``B = max(|lower|, |upper|)``.  Secure mode rounds each clamped value to the grid
    ``s = 2^j <= B 2^-30`` (``[lower, upper]`` rounded outward to grid points ``qlo s``,
    ``qhi s``), sums the integers
    exactly and releases that integer with discrete Laplace noise of sensitivity
    ``max(|qlo|, |qhi|)`` grid steps (the largest rounded value), then multiplies by ``s``:
    epsilon-DP, exact, no floating point on the data's sum.  Fast mode: float sum plus
    ``Lap(B/epsilon)``.

    Accuracy
    --------
    Noise of scale ``B/epsilon`` (plus at most ``n s/2`` of rounding):
    :func:`dpfast.accuracy.laplace_error` with ``sensitivity=B``.

    References
    ----------
    Dwork & Roth 2014, Thm 3.6.  Mironov, CCS 2012.
    """
    if axis is not None or _axes.is_pandas(values):
        return _axes.along(
            sum,
            values,
            axis,
            epsilon=epsilon,
            budget=budget,
            rng=rng,
            label=label,
            lower=lower,
            upper=upper,
            mode=mode,
        )
    epsilon = _v.epsilon(epsilon)
    lo, hi = _v.bounds(lower, upper)
    mode = _mode(mode)
    label = _label(label, "sum")
    arr = _values(values)
    gen = _core.secure_rng(rng)
    if mode == "fast":
        _check_noise(epsilon, max(abs(lo), abs(hi)), "fast")
        charged = _v.budget(budget)
        if charged is not None:
            charge(charged, Cost(epsilon, 0.0), label)
        clamped = np.clip(arr, lo, hi)
        return _saturate(
            float(_int_release(_fsum(clamped), epsilon, max(abs(lo), abs(hi)), gen, "fast"))
        )
    step, qlo, qhi = _value_grid(lo, hi)  # before the charge: it may refuse the bounds
    _check_noise(epsilon, max(abs(qlo), abs(qhi)), "secure")
    charged = _v.budget(budget)
    if charged is not None:
        charge(charged, Cost(epsilon, 0.0), label)
    q = _grid_ints(arr, lo, hi, step, qlo, qhi)
    total = int(q.sum(dtype=np.int64)) if q.size < 2**30 else _builtin_sum(map(int, q))
    noisy = _int_release(total, epsilon, max(abs(qlo), abs(qhi)), gen, "secure")
    exact = Fraction(noisy) * Fraction(step)
    # the noisy sum can pass the largest double when the bounds are near it: saturate
    # there (post-processing) rather than let the noise decide to raise OverflowError
    if abs(exact) > _MAX_DOUBLE:
        return _MAX_DOUBLE if exact > 0 else -_MAX_DOUBLE
    return float(exact)


@overload
def mean(
    values: npt.ArrayLike,
    *,
    lower: float,
    upper: float,
    epsilon: PrivacyParam,
    axis: None = ...,
    rng: Any = ...,
    mode: str = ...,
    budget: Any = ...,
    label: str | None = ...,
) -> float: ...
@overload
def mean(
    values: npt.ArrayLike,
    *,
    lower: float,
    upper: float,
    epsilon: PrivacyParam,
    axis: int,
    rng: Any = ...,
    mode: str = ...,
    budget: Any = ...,
    label: str | None = ...,
) -> Any: ...
def mean(
    values: npt.ArrayLike,
    *,
    lower: float,
    upper: float,
    epsilon: PrivacyParam,
    axis: int | None = None,
    rng: Any = None,
    mode: str = "secure",
    budget: Any = None,
    label: str | None = None,
) -> Any:
    """The mean of the values clamped to ``[lower, upper]``, with noise.

    Half of epsilon releases the count, half the sum of the values centred at the middle
    of the bounds; the mean is their ratio, clamped to ``[lower, upper]`` (post-processing).

    Parameters
    ----------
    values : array_like of real, pandas Series or DataFrame
    lower, upper : float
        Public clamping bounds.
    epsilon : float
        Total; ``epsilon/2`` each for the count and the centred sum (with ``axis=``, each
        of the k means gets ``epsilon / k``).
    axis : None or int
        As in :func:`sum`: ``axis=0`` gives one mean per column.
    rng, mode, budget, label
        As in :func:`count`.

    Returns
    -------
    float, or with ``axis=`` an ndarray (a Series for a DataFrame) of floats
        In ``[lower, upper]``; the middle of the bounds if the noisy count is below 1.

    Privacy
    -------
    The count has sensitivity 1, the centred sum ``sum(x_i - m)``, ``m = (lower+upper)/2``,
    has sensitivity ``(upper - lower)/2`` (in secure mode: ``(qhi - qlo)`` half-steps of the
    value grid of :func:`sum`); each is released ``epsilon/2``-DP, together epsilon-DP
    (Thm 3.14), and the ratio is post-processing.

    Accuracy
    --------
    For n records the error is about ``(upper - lower)/(n epsilon)`` plus the count's
    relative error; no closed-form tail bound is given.

    References
    ----------
    Dwork & Roth 2014, Thm 3.6, 3.14.
    """
    if axis is not None or _axes.is_pandas(values):
        return _axes.along(
            mean,
            values,
            axis,
            epsilon=epsilon,
            budget=budget,
            rng=rng,
            label=label,
            lower=lower,
            upper=upper,
            mode=mode,
        )
    epsilon = _v.epsilon(epsilon)
    lo, hi = _v.bounds(lower, upper)
    mode = _mode(mode)
    label = _label(label, "mean")
    arr = _values(values)
    gen = _core.secure_rng(rng)
    grid = None if mode == "fast" else _value_grid(lo, hi)  # may refuse: before the charge
    half = epsilon / 2.0
    _check_noise(half, 1, mode)
    _check_noise(half, hi / 2.0 - lo / 2.0 if grid is None else grid[2] - grid[1], mode)
    charged = _v.budget(budget)
    if charged is not None:
        charge(charged, Cost(epsilon, 0.0), label)
    n_noisy = _int_release(int(arr.size), half, 1, gen, mode)
    centre: float | Fraction
    s_noisy: float | Fraction
    if mode == "fast":
        centre = lo / 2.0 + hi / 2.0
        s = _fsum(np.clip(arr, lo, hi) - float(centre))
        s_noisy = float(_int_release(s, half, hi / 2.0 - lo / 2.0, gen, "fast"))
        n_noisy = float(n_noisy)
    else:
        assert grid is not None
        step, qlo, qhi = grid
        q = _grid_ints(arr, lo, hi, step, qlo, qhi)
        # 2 q_i - (qlo + qhi) is an integer in [-(qhi - qlo), qhi - qlo]: exact half-steps
        total = 2 * int(q.sum(dtype=np.int64)) - arr.size * (qlo + qhi)
        s_half = _int_release(int(total), half, qhi - qlo, gen, "secure")
        s_noisy = Fraction(int(s_half)) * Fraction(step) / 2
        centre = Fraction(qlo + qhi) * Fraction(step) / 2
        n_noisy = int(n_noisy)
    if n_noisy < 1:
        return float(centre)
    # clamped before the conversion: the noisy ratio itself may be beyond the doubles
    return float(min(max(centre + s_noisy / n_noisy, lo), hi))


def histogram(
    values: npt.ArrayLike,
    bins: int | npt.ArrayLike,
    *,
    epsilon: PrivacyParam,
    range: tuple[float, float] | None = None,
    rng: Any = None,
    mode: str = "secure",
    budget: Any = None,
    label: str | None = None,
) -> tuple[Any, FloatArray]:
    """Counts of the values in public bins, with noise on every bin.

    Parameters
    ----------
    values : array_like of real
        One value per record.  Values outside the bins (±inf included) are not counted;
        NaN records are dropped (module docstring).
    bins : int or array_like of float
        Strictly increasing finite edges (``numpy.histogram``'s convention: the last bin
        is closed), or a number of equal bins over ``range``.
    epsilon : float
    range : (float, float), optional
        Required when ``bins`` is an int; public.
    rng, mode, budget, label
        As in :func:`count`.

    Returns
    -------
    (counts, edges) : (ndarray of int64 (secure) or float64 (fast), ndarray of float64)

    Privacy
    -------
    The bins are disjoint, so adding or removing one record changes one count by one: the
    histogram has l1 sensitivity 1 (Example 3.2), and independent discrete Laplace noise
    of scale ``1/epsilon`` on every bin is epsilon-DP in total, whatever the number of bins.
    The bins must not depend on the data.

    Accuracy
    --------
    ``P[max_bin |noise| >= ln(k/beta)/epsilon] <= beta`` for k bins (Thm 3.8;
    :func:`dpfast.accuracy.laplace_error` with ``k``).

    References
    ----------
    Dwork & Roth 2014, Example 3.2, Thm 3.8.
    """
    epsilon = _v.epsilon(epsilon)
    mode = _mode(mode)
    label = _label(label, "histogram")
    edges: FloatArray
    if isinstance(bins, (int, np.integer)) and not isinstance(bins, (bool, np.bool_)):
        nb = _v.integer("bins", bins, minimum=1, maximum=_MAX_BINS)
        if range is None:
            raise TypeError(
                "range=(low, high) is required when bins is a number (the range "
                "must be public, never taken from the data)"
            )
        lo, hi = _v.bounds(*range)
        with np.errstate(all="ignore"):
            edges = np.linspace(lo, hi, nb + 1)
        if not (np.isfinite(edges).all() and np.all(np.diff(edges) > 0)):
            raise PrivacyParameterError(
                f"range={range!r} cannot be split into {nb} strictly increasing finite "
                "bins of doubles; use fewer bins or a narrower range"
            )
    else:
        edges = _v.float_array("bins", bins)
        if edges.ndim != 1 or edges.size < 2 or not np.all(np.diff(edges) > 0):
            raise PrivacyParameterError(
                "bins must be at least two strictly increasing finite edges"
            )
        if edges.size > _MAX_BINS + 1:
            raise PrivacyParameterError(
                f"bins must have at most 2**28 bins; got {edges.size - 1}"
            )
    arr = _values(values)
    gen = _core.secure_rng(rng)
    counts, _ = np.histogram(arr[np.isfinite(arr)], bins=edges)
    _check_noise(epsilon, 1, mode)
    # after the work that can fail, before any noise
    charged = _v.budget(budget)
    if charged is not None:
        charge(charged, Cost(epsilon, 0.0), label)
    return _int_release(counts.astype(np.int64), epsilon, 1, gen, mode), edges


@overload
def quantile(
    values: npt.ArrayLike,
    q: float,
    *,
    lower: float,
    upper: float,
    epsilon: PrivacyParam,
    candidates: int | npt.ArrayLike = ...,
    axis: None = ...,
    rng: Any = ...,
    mode: str = ...,
    budget: Any = ...,
    label: str | None = ...,
) -> float: ...
@overload
def quantile(
    values: npt.ArrayLike,
    q: float,
    *,
    lower: float,
    upper: float,
    epsilon: PrivacyParam,
    candidates: int | npt.ArrayLike = ...,
    axis: int,
    rng: Any = ...,
    mode: str = ...,
    budget: Any = ...,
    label: str | None = ...,
) -> Any: ...
def quantile(
    values: npt.ArrayLike,
    q: float,
    *,
    lower: float,
    upper: float,
    epsilon: PrivacyParam,
    candidates: int | npt.ArrayLike = 1025,
    axis: int | None = None,
    rng: Any = None,
    mode: str = "secure",
    budget: Any = None,
    label: str | None = None,
) -> Any:
    """A q-quantile of the values, chosen by the exponential mechanism among public
    candidates.

    Parameters
    ----------
    values : array_like of real, pandas Series or DataFrame
        One value per record (NaN records dropped, ±inf ranked beyond every candidate).
    q : float
        Quantile level in [0, 1]; rounded to a multiple of 2^-16 (public).
    lower, upper : float
        Public bounds of the candidates.
    epsilon : float
    candidates : int or array_like of float
        Number of evenly spaced candidates in ``[lower, upper]`` (default 1025), or the
        candidate values themselves (public, sorted or not).
    axis : None or int
        As in :func:`sum`: ``axis=0`` gives one quantile per column (``epsilon / k`` each).
    rng, mode, budget, label
        As in :func:`count`; ``mode`` is the exponential mechanism's.

    Returns
    -------
    float, or with ``axis=`` an ndarray (a Series for a DataFrame) of floats
        One of the candidates.

    Privacy
    -------
    With ``q = a/2^16``, ``L_c = #{x < c}`` and ``G_c = #{x > c}``, candidate c has the integer
    utility ``-|(2^16 - a) L_c - a G_c|``: adding or removing one record changes ``L_c`` or
    ``G_c`` (not both) by one, so the utility has sensitivity ``max(a, 2^16 - a)``.  The
    exponential mechanism with that sensitivity is epsilon-DP (Thm 3.10); on the secure
    path the integer utilities are sampled exactly (:func:`dpfast.selection.
    exponential_mechanism`).  The candidates are public.

    Accuracy
    --------
    With probability ``>= 1 - beta`` the chosen candidate's utility is within
    ``(2 Delta/epsilon)(ln K + ln(1/beta))`` of the best candidate's (Cor. 3.12): in rank
    terms, ``L_c`` is within ``2 (ln K + ln(1/beta))/epsilon + 1`` records (about) of
    ``q n`` when a candidate sits at the true quantile.

    References
    ----------
    Smith, "Privacy-preserving statistical estimation with optimal convergence rates",
    STOC 2011.  Dwork & Roth 2014, Thm 3.10, Cor. 3.12.
    """
    if axis is not None or _axes.is_pandas(values):
        return _axes.along(
            quantile,
            values,
            axis,
            epsilon=epsilon,
            budget=budget,
            rng=rng,
            label=label,
            q=q,
            lower=lower,
            upper=upper,
            candidates=candidates,
            mode=mode,
        )
    epsilon = _v.epsilon(epsilon)
    level = _v.probability("q", q)
    lo, hi = _v.bounds(lower, upper)
    mode = _mode(mode)
    label = _label(label, "quantile")
    if isinstance(candidates, (int, np.integer)) and not isinstance(
        candidates, (bool, np.bool_)
    ):
        k = _v.integer("candidates", candidates, minimum=1, maximum=2**26)
        cand = _v.even_grid(lo, hi, k) if k > 1 else np.array([lo / 2.0 + hi / 2.0])
    else:
        cand = _v.float_array("candidates", candidates)
        if cand.ndim != 1 or cand.size == 0:
            raise PrivacyParameterError(
                "candidates must be a non-empty 1-d array of values"
            )
    arr = _values(values)
    a = round(level * 2**GRID_BITS.quantile_level)
    b = 2**GRID_BITS.quantile_level
    sens = max(a, b - a)
    srt = np.sort(arr)
    less = np.searchsorted(srt, cand, side="left").astype(np.int64)
    greater = arr.size - np.searchsorted(srt, cand, side="right").astype(np.int64)
    scores = -np.abs((b - a) * less - a * greater)
    scores_arr, epsilon, sens_f, _, mode, gen = _sel_common(
        scores, epsilon, float(sens), False, rng, mode
    )
    charged = _v.budget(budget)
    if charged is not None:
        charge(charged, Cost(epsilon, 0.0), label)
    idx = exponential_release(
        scores_arr, epsilon=epsilon, sensitivity=sens_f, rng=gen, mode=mode
    )  # charged above
    return float(cand[idx])


# Everyday statistics and grouped releases live in their own modules (one job each); they
# are part of this module's public API.
from ._stat_releases import Bounds, counts, estimate_bounds, quantiles, std, variance  # noqa: E402
from .grouped import grouped_release, partition_selection_probability  # noqa: E402
