"""Grouped releases with contribution bounding: count, sum and mean per partition.

The unit of privacy is a *privacy unit* (a person, a device, an account), not a record:
neighbouring data sets differ by adding or removing all the records of one unit.  A unit
may own many records in many partitions, so the releases first *bound its contributions*
(the sampling that PipelineDP and Tumult Analytics perform), then add noise calibrated to
the bounds, and, when the set of partition keys is not public, *select partitions
privately* so that a key present only in one unit's records is not revealed.

Every bound is a public argument; nothing is computed from the data to calibrate noise.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from fractions import Fraction
from typing import TYPE_CHECKING, Any, NoReturn, cast, overload

import numpy as np
import numpy.typing as npt
from numpy.random import BitGenerator

from . import _core, _draw, _keys
from . import _validation as _v
from ._active import label as _label
from ._calibration import gaussian_sigma
from ._errors import PrivacyParameterError
from ._plans import GRID_BITS
from ._privacy import Cost, charge, deflate

# a budget share rounds down (the shares never add up to more than the total);
# sensitivities round up
from ._privacy import float_down as _down
from ._privacy import float_up_finite as _up
from ._typing import PrivacyParam, Real, RngLike, SupportsSpend
from .mechanisms import gaussian_release

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["grouped_release", "partition_selection_probability"]

_STATISTICS = ("count", "sum", "mean")
_MAX_RECORDS = 2**32 - 2  # csrc/grouped.c: record indices are 32-bit
_MAX_BOUND = 2**31  # max_partitions, max_contributions
_SEL_EXP_BITS = 60  # e^eps is bounded below by a multiple of 2^-60
_SEL_MAX_TABLE = 2**20  # longest threshold table (partition selection)


# ------------------------------------------------------------------ partition selection

#: The table is built for min(epsilon, _SEL_EPS_CAP): a rule that is (eps', delta)-DP for
#: eps' <= epsilon is (epsilon, delta)-DP, and at eps' = 600 it already keeps a partition
#: of one unit with probability delta and one of two units with probability 1 for every
#: delta >= 2^-64 (e^600 delta > 1), as the optimal rule for any larger epsilon does.
#: So e^eps' and e^eps' 2^60 are finite doubles: no "e^eps overflowed" branch exists
#: (such a branch would keep a one-unit partition with probability 1).
_SEL_EPS_CAP = Fraction(600)


def _exp_lower_dyadic(epsilon: Fraction) -> int:
    """An integer E with E / 2^60 <= e^epsilon (and E >= 2^60): a lower bound on e^eps,
    for 0 < epsilon <= _SEL_EPS_CAP (e^600 2^60 < 2^927: no overflow).

    libm's exp is within a few ulps (2^-50 relative is far more than any libm's error);
    the result is decreased by 2^-40 relative and rounded down."""
    assert epsilon <= _SEL_EPS_CAP
    x = deflate(math.exp(float(epsilon)))
    return max(math.floor(math.ldexp(x, _SEL_EXP_BITS)), 1 << _SEL_EXP_BITS)


_TABLES: dict[tuple[Fraction, Fraction], npt.NDArray[np.uint64]] = {}


def _selection_table(epsilon: Fraction, delta: Fraction) -> npt.NDArray[np.uint64]:
    """uint64 thresholds T[0..N) of the optimal (epsilon, delta) partition-selection rule.

    A partition with ``n`` contributing units is kept with probability ``T[n] / 2^64`` for
    ``n < N`` and 1 for ``n >= N``.  ``epsilon`` and ``delta`` are Fractions (per
    partition).  Computed with integers only (see :func:`grouped_release`, Privacy)."""
    key = (epsilon, delta)
    table = _TABLES.get(key)
    if table is not None:
        return table
    one = 1 << 64
    e_num = _exp_lower_dyadic(min(epsilon, _SEL_EPS_CAP))
    d = math.floor(delta * one)  # D / 2^64 <= delta
    if d == 0:
        raise PrivacyParameterError(
            f"the partition-selection delta per partition must be at least 2^-64; got "
            f"{float(delta)!r} (increase delta or decrease max_partitions)"
        )
    # the rule rises like delta e^(n eps) / (e^eps - 1) to 1/2, then symmetrically to 1:
    # refuse at once what would need a far longer table than allowed
    eps_f = float(min(epsilon, _SEL_EPS_CAP))
    # (an epsilon below the doubles climbs by about delta per unit: 1/(2 delta) to 1/2)
    half = (
        math.log1p(math.expm1(eps_f) / (2.0 * float(delta))) / eps_f
        if eps_f > 0.0
        else 1.0 / (2.0 * float(delta))
    )
    if 2.0 * half > 1.5 * _SEL_MAX_TABLE:
        _too_long(epsilon, delta)
    vals = [0]
    p = 0
    while True:
        up = ((e_num * p) >> _SEL_EXP_BITS) + d  # pi(n) <= e^eps pi(n-1) + delta
        rest = one - p - d  # 1-pi(n-1) <= e^eps (1-pi(n)) + delta
        down = one if rest <= 0 else one - -((-rest << _SEL_EXP_BITS) // e_num)
        nxt = min(up, down, one)
        if nxt >= one:
            break
        vals.append(nxt)
        p = nxt
        if len(vals) > _SEL_MAX_TABLE:
            _too_long(epsilon, delta)
    table = np.array(vals, dtype=np.uint64)
    if len(_TABLES) > 64:
        _TABLES.clear()
    _TABLES[key] = table
    return table


def _too_long(epsilon: Fraction, delta: Fraction) -> NoReturn:
    raise PrivacyParameterError(
        f"partition selection with epsilon per partition {float(epsilon):.3g} and delta per "
        f"partition {float(delta):.3g} would need more than {_SEL_MAX_TABLE} units in a "
        "partition to release it: increase epsilon or delta"
    )


def _exact(name: str, value: PrivacyParam, allow_zero: bool = False) -> Fraction:
    """A validated privacy parameter as an exact Fraction: a Fraction as given, any other
    value (a float meaning its decimal, a Decimal) as the float at or below it that
    _validation.epsilon/delta hand to calibrations; the budget is charged the caller's
    own value (decimal parameters, docs/accounting.md)."""
    if isinstance(value, Fraction):
        v = value
        if not (0 <= v if allow_zero else 0 < v) or (name == "delta" and not v < 1):
            raise PrivacyParameterError(f"{name} out of range; got {value!r}")
        return v
    if name == "delta":
        return Fraction(_v.delta(value, allow_zero=allow_zero))
    return Fraction(_v.epsilon(value, name))


@overload
def partition_selection_probability(
    units: int | np.integer[Any],
    *,
    epsilon: PrivacyParam,
    delta: PrivacyParam,
    max_partitions: int = ...,
) -> float: ...
@overload
def partition_selection_probability(
    units: npt.NDArray[Any] | Sequence[int],
    *,
    epsilon: PrivacyParam,
    delta: PrivacyParam,
    max_partitions: int = ...,
) -> npt.NDArray[np.float64]: ...
def partition_selection_probability(
    units: npt.ArrayLike,
    *,
    epsilon: PrivacyParam,
    delta: PrivacyParam,
    max_partitions: int = 1,
) -> float | npt.NDArray[np.float64]:
    """The probability that a partition with ``units`` contributing privacy units is
    released by the private partition selection of :func:`grouped_release`.

    Parameters
    ----------
    units : int or array_like of int >= 0
        Numbers of distinct privacy units in the partition after contribution bounding.
    epsilon, delta : float
        The budget spent on partition selection (the whole of it, for all partitions).
    max_partitions : int >= 1
        Each unit contributes to at most this many partitions; every partition's decision
        is then ``(epsilon / max_partitions, delta / max_partitions)``-DP.

    Returns
    -------
    float or ndarray of float
        Exact keep probabilities ``T[n] / 2^64`` (0 for an empty partition), as doubles.
    """
    eps = _exact("epsilon", epsilon)
    dl = _exact("delta", delta)
    l0 = _v.integer("max_partitions", max_partitions, minimum=1, maximum=_MAX_BOUND)
    table = _selection_table(eps / l0, dl / l0)
    # read as data is (a list by the types of its elements, never np.asarray's dtype),
    # counts beyond int64 clamped to 2**63 - 1: kept with probability 1 like any n >= N
    kind, n = _v.real_data("units", units)
    if kind != "i":
        raise TypeError("units must be integers; got floating-point numbers")
    if n.size and int(n.min()) < 0:
        raise PrivacyParameterError("units must be >= 0")
    out = np.ones(n.shape)
    below = n < table.size
    out[below] = np.ldexp(table[n[below]].astype(np.float64), -64)
    return float(out) if out.ndim == 0 else out


# ------------------------------------------------------------------ data plumbing


def _is_pandas(x: object) -> bool:
    mod = type(x).__module__
    return mod == "pandas" or mod.startswith("pandas.")


def _lookup(data: Any, name: Any, what: str) -> Any:
    """The column ``name`` of ``data`` (or ``name`` itself without data), a pandas
    column as its numpy array."""
    if data is not None:
        try:
            col = data[name]
        except (KeyError, IndexError, TypeError):
            raise ValueError(f"{what}={name!r} is not a column of data") from None
    else:
        col = name
    if _is_pandas(col) and hasattr(col, "to_numpy"):
        col = col.to_numpy()
    return col


def _column(data: Any, name: Any, what: str) -> npt.NDArray[Any]:
    """An input column as a 1-d numpy array (from a data frame / mapping, or array-like).

    A numpy array (or a pandas column's numpy form) keeps its dtype, the caller's choice;
    any other sequence is private data read element by element (``_keys``): no element
    recasts the others, as ``np.asarray`` would."""
    col = _lookup(data, name, what)
    if isinstance(col, np.ndarray):
        arr = col
    elif isinstance(col, (str, bytes)) or not hasattr(col, "__len__"):
        raise TypeError(
            f"{what} must be a sequence or array of keys; got {type(col).__name__}"
        )
    else:
        arr = _keys.from_sequence(col)
    if arr.ndim != 1:
        raise ValueError(f"{what} must be one-dimensional; got shape {arr.shape}")
    return arr


def _values_column(data: Any, name: Any) -> npt.NDArray[np.float64]:
    """The values column as float64: a numpy array of integers or floats as it is, any
    other sequence by the one converter of private numbers (``_validation.float_data``:
    exact, integers beyond the doubles' exact range clamped, never refused by value)."""
    col = _lookup(data, name, "values")
    if isinstance(col, np.ndarray):
        if col.dtype == np.bool_ or col.dtype.kind not in "iuf" or col.dtype.itemsize > 8:
            raise TypeError(
                f"values must hold integers or float64 numbers; got dtype {col.dtype}"
            )
        if col.ndim != 1:
            raise ValueError(f"values must be one-dimensional; got shape {col.shape}")
        return np.ascontiguousarray(col, dtype=np.float64)
    vals = _v.float_data("values", col)
    if vals.ndim != 1:
        raise ValueError(f"values must be one-dimensional; got shape {vals.shape}")
    return np.ascontiguousarray(vals, dtype=np.float64)


def _check_key_dtype(arr: npt.NDArray[Any], what: str) -> None:
    if arr.dtype.kind not in "iubUSOMm":
        raise TypeError(
            f"{what} must hold integers, strings, bytes, datetimes or hashable "
            f"objects; got dtype {arr.dtype}"
        )


def _released_keys(
    uniq: npt.NDArray[Any],
    idx: npt.NDArray[np.intp],
    rng: BitGenerator,
) -> tuple[npt.NDArray[np.intp], npt.NDArray[Any]]:
    """(the released positions in output order, the released keys).

    A typed array keeps its (public) dtype and numpy's sorted order.  Canonical keys
    are ordered (``_keys.order``) and typed (``_keys.typed``) from the released ones
    alone: no key that is not released can change either."""
    if uniq.dtype.kind != "O":
        return idx, uniq[idx]
    keys = uniq[idx].tolist()
    perm = _keys.order(keys, rng)
    return idx[perm], _keys.typed([keys[i] for i in perm])


def _object_array(items: Sequence[object]) -> npt.NDArray[np.object_]:
    return _keys.from_sequence(items)


def _public_codes(
    pub: npt.NDArray[Any],
    uniq: npt.NDArray[Any],
    codes: npt.NDArray[np.int64],
) -> npt.NDArray[np.int64]:
    """Map record codes (into ``uniq``) to positions in the public key list (-1: absent)."""
    if pub.dtype.kind == "O" or uniq.dtype.kind == "O" or pub.dtype.kind != uniq.dtype.kind:
        where = {k: i for i, k in enumerate(_keys.canonical_of(pub)) if k is not None}
        pos = _keys.lookup(where, _keys.canonical_of(uniq))
    else:
        order = np.argsort(pub, kind="stable")
        spub = pub[order]
        at = np.searchsorted(spub, uniq)
        inside = at < spub.size
        hit = np.zeros(uniq.size, dtype=bool)
        hit[inside] = spub[at[inside]] == uniq[inside]
        pos = np.where(hit, order[np.minimum(at, spub.size - 1)], -1).astype(np.int64)
    return np.where(codes >= 0, pos[np.maximum(codes, 0)], -1) if codes.size else codes


def _public_list(public: Any) -> tuple[npt.NDArray[Any], npt.NDArray[Any]]:
    """(the public keys for matching, the released key array).  A numpy array keeps its
    dtype; a list is read element by element (an object array of canonical keys for
    matching) and typed as released keys are."""
    if _is_pandas(public) and hasattr(public, "to_numpy"):
        public = public.to_numpy()
    pub = (
        public
        if isinstance(public, np.ndarray)
        else (
            _keys.from_sequence(public)
            if hasattr(public, "__len__") and not isinstance(public, (str, bytes))
            else np.asarray(public)
        )
    )
    if pub.ndim != 1:
        raise ValueError(
            f"public_partitions must be one-dimensional; got shape {pub.shape}"
        )
    _check_key_dtype(pub, "public_partitions")
    if pub.dtype.kind == "O":
        canon = [_keys.canon(x) for x in pub.tolist()]
        if any(c is None for c in canon):
            raise TypeError("public_partitions must be hashable")
        distinct = len(set(canon))
        out = _keys.typed(canon)  # type: ignore[arg-type]
        pub = _object_array(canon)  # matched by canonical key (_keys.canonical_of)
    else:
        distinct = np.unique(pub).size
        out = pub
    if distinct != pub.size:
        raise PrivacyParameterError("public_partitions must not repeat a key")
    return pub, out


# ------------------------------------------------------------------ planning


def _statistics(statistics: str | Sequence[str]) -> tuple[str, ...]:
    if isinstance(statistics, str):
        statistics = (statistics,)
    try:
        stats = tuple(statistics)
    except TypeError:
        raise TypeError("statistics must be a string or a sequence of strings") from None
    if not stats:
        raise PrivacyParameterError("statistics must name at least one of count, sum, mean")
    for s in stats:
        _v.choice("statistics", s, _STATISTICS)
    if len(set(stats)) != len(stats):
        raise PrivacyParameterError(f"statistics must not repeat a name; got {stats!r}")
    return stats


class _Plan:
    """Every public quantity of a grouped release, computed before any data is read."""

    def __init__(
        self,
        stats: tuple[str, ...],
        epsilon: Fraction,
        delta: Fraction,
        l0: int,
        linf: int,
        lo: float,
        hi: float,
        noise: str,
        private_sel: bool,
    ):
        self.stats = stats
        self.l0, self.linf = l0, linf
        self.lo, self.hi = lo, hi
        self.noise = noise
        # What is released with noise: the count (for count and mean), the sum (sum
        # alone), or the sum of values centred at the middle of the bounds (mean, and sum
        # derived from it by post-processing).
        q = []
        if "count" in stats or "mean" in stats:
            q.append("count")
        if "mean" in stats:
            q.append("nsum")
        elif "sum" in stats:
            q.append("sum")
        self.quantities = q
        parts = len(q) + (1 if private_sel else 0)
        self.eps_each = epsilon / parts
        self.eps_f = _down(self.eps_each)
        if not self.eps_f > 0.0:
            raise PrivacyParameterError(
                f"epsilon is too small: its share per part ({parts} parts) is below "
                f"the smallest double; got epsilon={float(epsilon)!r}"
            )
        if noise == "gaussian":
            if delta == 0:
                raise PrivacyParameterError("delta must be > 0 for Gaussian noise")
            self.sel_delta = delta / 2 if private_sel else Fraction(0)
            self.noise_delta = (delta - self.sel_delta) / len(q)
            self.delta_f = _down(self.noise_delta)
        else:
            self.sel_delta = delta if private_sel else Fraction(0)
            self.noise_delta = Fraction(0)
        if private_sel:
            if self.sel_delta == 0:
                raise PrivacyParameterError(
                    "delta must be > 0 when the partition keys are not public (private "
                    "partition selection); or give public_partitions"
                )
            self.table: npt.NDArray[np.uint64] | None = _selection_table(
                self.eps_each / l0, self.sel_delta / l0
            )
        else:
            self.table = None
        self.epsilon = epsilon
        self.delta = self.sel_delta + self.noise_delta * len(q)
        self.sens = {}
        self.grid = None
        if "sum" in q or "nsum" in q:
            b = max(abs(lo), abs(hi))
            width = b if "sum" in q else hi / 2.0 - lo / 2.0  # (hi - lo may overflow)
            ref = self._scale(width)
            _, eb = math.frexp(b)
            _, es = math.frexp(ref)
            j = max(eb - 1 - GRID_BITS.grouped_value, es - 1 - GRID_BITS.grouped_noise)
            if not -1070 <= j <= 1000:
                raise PrivacyParameterError(
                    f"bounds [{lo!r}, {hi!r}] are outside the range of the value grid"
                )
            step = math.ldexp(1.0, j)
            qlo, qhi = math.floor(lo / step), math.ceil(hi / step)  # exact: step = 2^j
            self.grid = (step, qlo, qhi)
            per_unit = max(abs(qlo), abs(qhi)) if "sum" in q else qhi - qlo
            self.sens["sum" if "sum" in q else "nsum"] = self._sens(per_unit)
        self.sens["count"] = self._sens(1)
        for name in q:
            self._check_noise(name)

    def _scale(self, per_contribution: float) -> float:
        """The noise scale (Laplace b or Gaussian sigma) for this per-record bound."""
        if self.noise == "laplace":
            return self.l0 * self.linf * per_contribution / self.eps_f
        l2 = math.sqrt(self.l0) * self.linf * per_contribution
        if not l2 < math.inf:
            return math.inf  # (only the grid's exponent is taken from it: frexp)
        sigma: float = gaussian_sigma(self.eps_f, self.delta_f, _up(l2))
        return sigma

    def _sens(self, per_contribution: int) -> float:
        """l1 (Laplace) or l2 (Gaussian) sensitivity of a per-partition vector whose
        entries each move by <= linf * per_contribution, in <= l0 partitions."""
        exact = Fraction(self.linf) * Fraction(per_contribution)
        if self.noise == "laplace":
            return _up(self.l0 * exact)
        # sqrt is correctly rounded, so one step up bounds sqrt(L0) from above
        return _up(Fraction(math.nextafter(math.sqrt(self.l0), math.inf)) * exact)

    def _check_noise(self, name: str) -> None:
        """Prepare the exact sampler now (public parameters only), so that parameters
        it cannot serve are refused before the budget is charged."""
        from . import mechanisms as m

        if self.noise == "laplace":
            _draw.laplace_int_plan(self.eps_f, self.sens[name])
        else:
            for d in (1, 2):  # one released partition, or several (mechanisms' plans)
                m._ceil_rational(
                    Fraction(
                        m._gauss_sigma(
                            self.eps_f, self.delta_f, self.sens[name], d, "analytic"
                        )
                    )
                    ** 2
                )

    def release(
        self,
        name: str,
        ints: npt.NDArray[np.int64],
        rng: BitGenerator,
    ) -> npt.NDArray[np.int64]:
        # charged as a whole; rng resolved by the release
        if self.noise == "laplace":
            noisy = _draw.laplace_release(ints, self.eps_f, self.sens[name], rng)
        else:
            noisy = gaussian_release(
                ints,
                epsilon=self.eps_f,
                delta=self.delta_f,
                l2_sensitivity=self.sens[name],
                rng=rng,
            )
        return cast(npt.NDArray[np.int64], noisy)


# ------------------------------------------------------------------ the release


def _saturate(x: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """x clamped to the finite doubles: with bounds near the largest double a noisy sum
    may pass it (post-processing; never inf, and never inf - inf = NaN in a sum)."""
    big = np.finfo(np.float64).max
    return np.clip(x, -big, big)


def grouped_release(
    data: Any = None,
    *,
    units: Any,
    keys: Any,
    values: Any = None,
    statistics: str | Sequence[str] = ("count",),
    epsilon: PrivacyParam,
    delta: PrivacyParam = 0.0,
    max_partitions: int,
    max_contributions: int = 1,
    lower: Real | None = None,
    upper: Real | None = None,
    public_partitions: npt.ArrayLike | None = None,
    noise: str = "laplace",
    rng: RngLike = None,
    budget: SupportsSpend | None = None,
    label: str | None = None,
) -> dict[str, npt.NDArray[Any]] | pd.DataFrame:
    """Count, sum and/or mean per partition, with per-unit contribution bounding.

    Parameters
    ----------
    data : pandas.DataFrame or mapping of columns, optional
        If given, ``units``, ``keys`` and ``values`` are column names in it.
    units : array_like or column name
        The privacy unit of each record (any hashable ids).
    keys : array_like or column name
        The partition key of each record.  A numpy array (or a pandas column of a
        numpy dtype) keeps its dtype: integers, strings, bytes, datetimes or objects,
        not floats.  A list, an object array or a pandas object column is private data
        read element by element (``dpfast._keys``): keys compare by value within their
        own type (``1``, ``1.0`` and ``True`` are three keys; ``"NA"`` among integers
        is one more key and recasts nothing; a tuple compares element by element, so
        ``(1, "a")`` and ``(1.0, "a")`` are two keys; every NaN is one key, and -0.0 is
        0.0); other objects compare by their own ``==`` within their type.  An element
        that is no key (unhashable, or whose hash or ``==`` raises) counts in no
        partition.  The same holds for ``units`` and ``public_partitions``.
    values : array_like of real or column name, optional
        Required for ``"sum"`` and ``"mean"``.  A NaN value drops its record (before
        bounding; counts too); ±inf is clamped to the bounds like any value.
    statistics : str or sequence of {"count", "sum", "mean"}
    epsilon : float > 0
        Total, split equally between the released quantities (the count; the sum, or the
        centred sum for the mean) and, when the keys are not public, partition selection.
    delta : float in [0, 1)
        Laplace noise: all of it goes to partition selection (must be > 0 then; unused
        with public partitions).  Gaussian noise: half to selection (if any), the rest
        split equally between the released quantities.
    max_partitions : int >= 1
        L0 bound: each unit's records are kept in at most this many partitions, chosen
        uniformly at random among its partitions.
    max_contributions : int >= 1
        Linf bound: at most this many records per unit and partition are kept, chosen
        uniformly at random among them.
    lower, upper : float
        Public clamping bounds of the values (required for sum and mean).
    public_partitions : array_like, optional
        The public list of partition keys: no selection is done, every listed key is
        released (also those without records, with noise on 0), in the given order, and
        records with another key are dropped.  It must not depend on the data.
    noise : {"laplace", "gaussian"}
        Exact discrete Laplace (pure epsilon per quantity) or exact discrete Gaussian
        noise, from :mod:`dpfast.mechanisms` on integers (secure, CSPRNG by default).
    rng : None, ChaCha20, numpy BitGenerator or Generator
        Drives the contribution sampling, the selection and the noise.
    budget : object with ``spend(epsilon, delta, *, label)``, optional
        Charged once, ``(epsilon, delta used)``, after validation and before the data is
        read.  None: the active budget (``with b.active():``), if any;
        ``dpfast.NO_BUDGET``: nothing.
    label : str, optional
        Recorded with the charge (default ``"grouped_release"``).

    Returns
    -------
    pandas.DataFrame or dict
        A data frame indexed by partition key with one column per statistic when the
        input came from pandas; otherwise ``{"key": ndarray, "count": ..., ...}``.
        Counts are int64; sums and means float64 (a noisy sum beyond the largest double
        saturates there: bounds near it are public, the answer stays finite).  Privately selected partitions
        come in one canonical order of the released keys, never shuffled: a numpy
        input's keys in numpy's sorted order; keys read element by element by type,
        then value (bool, int, float, NaN, str, bytes, None, datetime64/timedelta64,
        tuples of these element by element), then other objects by type name and,
        within a type, by their own ``<`` when it orders the released ones into a
        strict chain, else in a uniformly random order (``dpfast._keys.order``).  The
        keys are typed from the released keys alone (int64 when all fit, float64,
        ``<U``/``S`` as long as the longest released string, object when the types are
        mixed); a numpy input's key dtype is kept; equal keys written differently are
        released as one fixed element (0.0 for -0.0, the smallest ``repr`` for other
        objects).  Public partitions come in the caller's order, typed from the
        public list.  Neither order nor dtype nor the element released depends on a
        key that is not released, nor on the order of the records
        (docs/security-model.md, "Released keys: order and dtype").

    Privacy
    -------
    (epsilon, delta_used)-DP for neighbours that differ by all the records of one unit.

    *Bounding.*  Every unit keeps, independently of the others and uniformly at random,
    at most ``L0 = max_partitions`` of its partitions and at most ``Linf =
    max_contributions`` of its records in each (csrc/grouped.c).  Adding or removing a
    unit then changes at most L0 partitions' bounded data, each by at most Linf records;
    with values clamped to ``[lower, upper]`` and rounded to a public power-of-two grid
    ``s`` (summed exactly as integers, no floating point on the data), the per-partition
    vectors have sensitivities

    * count: l1 ``L0 Linf``, l2 ``sqrt(L0) Linf``;
    * sum: l1 ``L0 Linf M``, l2 ``sqrt(L0) Linf M`` with ``M = max(|qlo|, |qhi|)`` grid steps;
    * centred sum (mean): ``sum(2 q - qlo - qhi)`` in half-steps, per record within
      ``[-(qhi - qlo), qhi - qlo]``: l1 ``L0 Linf (qhi - qlo)``, l2 accordingly.

    Each released quantity gets ``epsilon_q = epsilon / k`` (and ``delta_q`` for
    Gaussian noise) and the mechanisms of :mod:`dpfast.mechanisms` calibrated to these
    sensitivities; the mean (clamped to the bounds; the midpoint if the noisy count < 1)
    and a sum derived from the centred sum are post-processing.

    *Partition selection* (private keys).  A partition whose bounded data has ``n``
    units is released with probability ``pi(n)``, independently, where ``pi`` is the
    optimal (epsilon_p, delta_p)-DP rule of Desfontaines, Voss, Gipson & Mandayam
    (2022), ``epsilon_p = epsilon_sel / L0``, ``delta_p = delta_sel / L0``:
    ``pi(0) = 0`` and ``pi(n) = min(e^eps pi(n-1) + delta, 1 - e^-eps (1 - pi(n-1) - delta), 1)``.
    A neighbour changes ``n`` by one in at most L0 partitions; the rule's two DP
    conditions between ``n - 1`` and ``n`` are exactly ``pi(n) <= e^eps pi(n-1) + delta``
    (released) and ``1 - pi(n-1) <= e^eps (1 - pi(n)) + delta`` (not released), and
    ``pi(0) = 0`` makes a partition that exists only for one neighbour cost delta_p
    (``pi(1) = delta_p``).  So each partition's decision is (epsilon_p, delta_p)-DP and,
    by basic composition over the at most L0 partitions a unit touches (the others'
    decisions have the same law), selection is (epsilon_sel, delta_sel)-DP.  Here the
    rule runs with a lower bound ``E <= e^eps_p`` (``_exp_lower_dyadic``) and
    ``D <= delta_p``, on 64-bit integers, each step rounded down: both conditions hold
    with (E, D), hence with (e^eps_p, delta_p); ``pi(n)`` is realised exactly as a
    64-bit threshold.  The noisy values of the selected partitions are then released with
    the quantities' budgets (sequential composition: total ``(epsilon, delta_used)``).

    Accuracy
    --------
    Per partition, the count's noise has scale ``L0 Linf / epsilon_q`` (Laplace) and the
    sum's ``L0 Linf M s / epsilon_q``; plus the bias of bounding (records dropped by the
    L0/Linf sampling, values clamped).  A partition with ``n`` units is released with
    probability ``partition_selection_probability(n, ...)``: about
    ``delta_p (e^(n epsilon_p) - 1) / (e^epsilon_p - 1)`` while below 1/2, then
    symmetrically up to 1, reached at about
    ``n = 2 ln(1 + (e^epsilon_p - 1) / (2 delta_p)) / epsilon_p`` units.

    References
    ----------
    Desfontaines, Voss, Gipson & Mandayam, "Differentially private partition
    selection", PoPETs 2022(1).  Wilson, Zhang, Lam, Desfontaines, Simmons-Marengo &
    Gipson, "Differentially Private SQL with Bounded User Contribution", PoPETs 2020(2).
    Amin, Kulesza, Munoz Medina & Vassilvitskii, "Bounding user contributions: a
    bias-variance trade-off in differential privacy", ICML 2019.  Knuth, TAOCP vol. 2,
    Algorithm S (selection sampling).  Lemire, ACM TOMACS 2019.
    """
    # ---- public parameters, all before the data
    stats = _statistics(statistics)
    eps = _exact("epsilon", epsilon)
    dl = _exact("delta", delta, allow_zero=True)
    l0 = _v.integer("max_partitions", max_partitions, minimum=1, maximum=_MAX_BOUND)
    linf = _v.integer("max_contributions", max_contributions, minimum=1, maximum=_MAX_BOUND)
    noise = _v.choice("noise", noise, ("laplace", "gaussian"))
    budget = _v.budget(budget)
    label = _label(label, "grouped_release")
    need_values = "sum" in stats or "mean" in stats
    lo = hi = 0.0  # (used only with values: sum and mean)
    if need_values:
        if lower is None or upper is None or values is None:
            raise TypeError(
                "sum and mean need values= and the public bounds lower=, upper="
            )
        lo, hi = _v.bounds(lower, upper)
    pub, pub_out = (
        (None, None) if public_partitions is None else _public_list(public_partitions)
    )
    plan = _Plan(stats, eps, dl, l0, linf, lo, hi, noise, pub is None)
    unit_arr = _column(data, units, "units")
    key_arr = _column(data, keys, "keys")
    val_arr = _values_column(data, values) if values is not None else None
    _check_key_dtype(unit_arr, "units")
    _check_key_dtype(key_arr, "keys")
    n = unit_arr.size
    if key_arr.size != n or (val_arr is not None and val_arr.size != n):
        raise ValueError("units, keys and values must have the same length")
    if n > _MAX_RECORDS:
        raise ValueError(f"at most {_MAX_RECORDS} records per call")
    as_pandas = _is_pandas(data) or any(_is_pandas(c) for c in (units, keys, values))
    gen = _core.secure_rng(rng)
    # the caller's own objects where the whole of them is spent (exact as given)
    if budget is not None:
        charge(
            budget,
            Cost(
                epsilon, delta if plan.delta == dl else (plan.delta if plan.delta else 0.0)
            ),
            label,
        )

    # ---- the data
    _, ucodes, n_units = _keys.factorize(unit_arr, "units", need_uniques=False)
    kuniq, kcodes, n_keys = _keys.factorize(key_arr, "keys")
    assert kuniq is not None  # (need_uniques)
    if pub is not None:
        kcodes = _public_codes(pub, kuniq, kcodes)
        n_keys = pub.size
    vals = val_arr
    keep = (ucodes >= 0) & (kcodes >= 0)  # unhashable ids / keys: in no partition
    if not keep.all():
        ucodes, kcodes = ucodes[keep], kcodes[keep]
        vals = None if vals is None else vals[keep]
    grid = None
    if vals is not None:
        step, qlo, qhi = plan.grid if plan.grid else (1.0, 0, 0)  # counts: NaN policy only
        grid = (lo or 0.0, hi or 0.0, 1.0 / step, qlo, qhi)
    count, qsum, nunits = _core.bound_contributions(
        np.ascontiguousarray(ucodes),
        n_units,
        np.ascontiguousarray(kcodes),
        n_keys,
        vals,
        grid,
        l0,
        linf,
        pub is None,
        gen,
    )
    if pub is None:
        assert nunits is not None and plan.table is not None  # (private selection)
        # partitions in the canonical order of the released keys: the order of the
        # output depends on the released keys only, never on an unreleased one
        idx = np.flatnonzero(_core.select_partitions(nunits, plan.table, gen))
        idx, released = _released_keys(kuniq, idx, gen)
    else:
        idx = np.arange(n_keys)
        assert pub_out is not None
        released = pub_out
    out = {"key": released}
    if "count" in plan.quantities:
        noisy_count = plan.release("count", count[idx], gen)
    if "sum" in plan.quantities:
        assert plan.grid is not None and qsum is not None  # (values were given)
        step = plan.grid[0]
        with np.errstate(over="ignore"):
            out_sum = _saturate(
                plan.release("sum", qsum[idx], gen).astype(np.float64) * step
            )
    if "nsum" in plan.quantities:
        assert plan.grid is not None and qsum is not None  # (values were given)
        step, qlo, qhi = plan.grid
        half = 2 * qsum[idx] - count[idx] * (qlo + qhi)  # exact half-steps (int64)
        with np.errstate(over="ignore"):
            nsum = _saturate(
                plan.release("nsum", half, gen).astype(np.float64) * (step / 2.0)
            )
        mid = lo / 2.0 + hi / 2.0
        c = noisy_count.astype(np.float64)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            mean = np.clip(mid + nsum / np.maximum(c, 1.0), lo, hi)
        mean = np.where(c >= 1.0, mean, mid)
        with np.errstate(over="ignore"):
            out_sum = _saturate(nsum + _saturate(mid * c))
    for s in stats:
        out[s] = noisy_count if s == "count" else out_sum if s == "sum" else mean
    if as_pandas:
        import pandas as pd

        name = (
            keys
            if (data is not None and isinstance(keys, (str, numbers.Integral)))
            else "key"
        )
        index = pd.Index(out.pop("key"), name=name)
        return pd.DataFrame(out, index=index)
    return out
