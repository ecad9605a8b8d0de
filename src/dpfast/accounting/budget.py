"""The privacy budget (a privacy filter) with reserve/commit/rollback and an immutable ledger.

Mechanisms call :meth:`PrivacyBudget.spend` *before* they draw noise, so an overspending
request is refused while nothing has been released yet.

The arithmetic of each filter lives in :class:`Filter`: pure functions of the caps, the
rule and a *state* (a tuple of exact totals).  :class:`PrivacyBudget` keeps that state in
memory; the durable stores of :mod:`dpfast.ledger` keep it in a database row and call the
same :class:`Filter` inside their transaction, so there is one implementation of each
filter.

Amounts are decimal (:func:`dpfast._validation.exact`): a float charge means the decimal
it prints as, so ten charges of 0.1 add up to exactly 1.  They are kept *scaled*: an
amount x is held as x * UNIT with UNIT = 2**1074 * 5**340, a Python ``int`` for every
decimal of up to 340 places (every float's repr, whose exponent is >= -324 with at most
17 digits) and for every float's binary value (a multiple of 2**-1074, used for the
rounded-up terms of the advanced filter); a :class:`~fractions.Fraction` only for the
rare other rational a caller passes (``Fraction(1, 3)``).  Ints add and compare an order
of magnitude faster than Fractions, and mixed sums stay exact.  Ledgers written before
this rule (unit 2**1074) are read by :func:`legacy_state`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import os
import sys
import threading
from collections.abc import Callable, Iterable, Mapping
from fractions import Fraction
from typing import Any, NamedTuple, NoReturn, TypeAlias, cast

from .. import _validation as _v
from .._active import activate as _activate
from .._errors import BudgetExceededError, PrivacyParameterError
from .._privacy import Cost
from ._numeric import _up
from .zcdp import zcdp_budget

_INF = math.inf
#: An exact amount times UNIT (an int in the common case) and a filter's state/cost tuple.
Scaled: TypeAlias = "int | Fraction"
State: TypeAlias = "tuple[Scaled, ...]"
#: A validated charge: exact (epsilon, delta, rho), rho None outside "zcdp".
Amounts: TypeAlias = "tuple[Fraction, Fraction, Fraction | None]"
_SHIFT = 1074  # 2**-1074 is the smallest positive float: every float is an integer multiple
_DECIMALS = 340  # every float's repr has at most 340 decimal places (5e-324, 17 digits)
#: The unit of the scaled state: its inverse is a multiple of 2**-1074 and of 10**-340.
UNIT: int = (1 << _SHIFT) * 5 ** _DECIMALS
#: Ledgers written with unit 2**1074 (schema 1, before decimal amounts): multiply by this.
LEGACY_FACTOR: int = 5 ** _DECIMALS
_MAX = Fraction(sys.float_info.max)
# A drift term eps (e^eps - 1) too large for a float: stands for +inf.  Its value 2**1025
# exceeds every representable epsilon cap, so the advanced branch never admits again, and
# a rollback subtracts exactly what was added.
_DRIFT_INF: int = (1 << 1025) * UNIT

# Bumped in every forked child: an in-memory budget refuses to charge in a process other
# than the one that created it (each copy would otherwise spend the whole budget).
_FORK = [0]


def _after_fork() -> None:
    _FORK[0] += 1


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork)


def fork_generation() -> int:
    """How many forks separate this process from the one that imported dpfast (0 there)."""
    return _FORK[0]


#: An amount of privacy budget (:attr:`PrivacyBudget.spent`, :attr:`~PrivacyBudget.remaining`):
#: (epsilon, delta) in "basic"/"advanced" mode, rho in "zcdp" mode (the fields that do
#: not apply are ``None``).  The one privacy-cost class, :class:`dpfast.accounting.Cost`.
PrivacyAmount = Cost


class LedgerEntry(NamedTuple):
    """One immutable line of a :class:`PrivacyBudget` ledger.

    ``status`` is "spent" (a direct charge), "reserved", "committed" or "rolled_back";
    a settled reservation replaces its "reserved" line by a new entry with the same
    ``index``.  ``rho`` is set in "zcdp" mode only; a :meth:`PrivacyBudget.spend_rho`
    line has ``epsilon == delta == 0.0`` and its cost in ``rho``.
    """

    index: int  # type: ignore[assignment]  # the field shadows tuple.index (public API)
    label: str | None
    epsilon: float
    delta: float
    rho: float | None
    status: str

    def __setattr__(self, name: str, value: object) -> NoReturn:
        raise dataclasses.FrozenInstanceError(f"cannot assign to field {name!r}")


@dataclasses.dataclass(frozen=True, slots=True, eq=False)
class Reservation:
    """A charge held by :meth:`PrivacyBudget.reserve` until it is committed or rolled back."""

    index: int
    label: str | None
    epsilon: float
    delta: float
    rho: float | None
    _owner: object = dataclasses.field(repr=False, compare=False)


# ---- exact amounts -----------------------------------------------------------------------

_RULES = {
    "positive": ("finite and > 0", True, False),
    "nonnegative": ("finite and >= 0", False, False),
    "delta": ("in [0, 1)", False, True),
    "delta_open": ("in (0, 1)", True, True),
}


def exact_amount(name: str, value: object, rule: str = "nonnegative") -> tuple[float, Fraction]:
    """Validate a public privacy amount; return ``(float, exact)``.

    ``exact`` is the :class:`~fractions.Fraction` the amount means
    (:func:`dpfast._validation.exact`: a float is the decimal it prints as; ints,
    Fractions and Decimals are exact); ``float`` is the nearest float, for display.
    The range is checked on the *exact* value, so ``Fraction(-1, 10**400)`` (which rounds
    to -0.0) is refused, not credited.  Types that cannot be converted exactly
    (``np.longdouble``) are refused by type.
    """
    text, open_low, below_one = _RULES[rule]
    x = _v.exact(name, value)
    if x is None or not ((x > 0 if open_low else x >= 0) and x <= _MAX
                         and (x < 1 if below_one else True)):
        raise PrivacyParameterError(f"{name} must be {text}; got {value!r}")
    return float(x), x


def scale(x: Fraction | float) -> int | Fraction:
    """``x * UNIT`` exactly: an int for a decimal of <= 340 places or a dyadic rational,
    else a Fraction.  A float is taken at its *binary* value: only the filter's own
    rounded-up terms are floats here (amounts arrive as Fractions)."""
    if isinstance(x, float):
        n, d = x.as_integer_ratio()
        return (n * UNIT) // d           # d is a power of two <= 2**1074: exact
    q = Fraction(x)
    n, r = divmod(q.numerator * UNIT, q.denominator)
    return n if r == 0 else Fraction(q.numerator * UNIT, q.denominator)


_SCALED: dict[float, Scaled] = {}


def _scaled_float(x: float) -> Scaled:
    """scale() of the decimal a float charge means, cached (a budget sees few distinct
    charges, and scaling is the slow part of a charge)."""
    s = scale(_v.decimal_of(x))
    if len(_SCALED) >= 4096:
        _SCALED.clear()
    _SCALED[x] = s
    return s


def unscale(s: int | Fraction, power: int = 1) -> Fraction:
    """The Fraction ``s / UNIT**power`` (the inverse of :func:`scale`)."""
    return Fraction(s) / int(UNIT ** power)


def legacy_state(state: tuple[int | Fraction, ...]) -> tuple[int | Fraction, ...]:
    """A state (or cost) read from a ledger of schema 1, in units of 2**-1074 (2**-2148 for
    the squares of an "advanced" state), converted to :data:`UNIT` exactly."""
    powers = (1, 1, 2, 1) if len(state) == 4 else (1,) * len(state)
    return tuple(_norm(s * LEGACY_FACTOR ** p) for s, p in zip(state, powers, strict=True))


def _norm(s: int | Fraction) -> int | Fraction:
    return s.numerator if type(s) is Fraction and s.denominator == 1 else s


def _float_up(f: Fraction) -> float:
    """The smallest float >= the rational ``f`` (its binary value); +inf beyond the largest float."""
    return _v.float_up(f)


def _label(label: object) -> str | None:
    if label is not None and not isinstance(label, str):
        raise TypeError(f"label must be a str or None; got {type(label).__name__} {label!r}")
    return label


def _drift_scaled(eps: Fraction) -> int | Fraction:
    """eps (e^eps - 1) rounded up, scaled; expm1 and the product are each within 1 ulp,
    and eps is rounded up to a float first (the term grows with eps)."""
    e = _v.float_up(Fraction(eps))
    if e > 709.0:  # expm1 overflows at ~709.78; the product even earlier: treat as +inf
        return _DRIFT_INF
    t = e * math.expm1(e)
    if t == _INF:
        return _DRIFT_INF
    return scale(_up(t))


# ---- the filters ------------------------------------------------------------------------

class Filter:
    """The caps and composition rule of a privacy filter, and its arithmetic.

    Every method is a pure function of a *state*: a tuple of scaled exact totals
    ("basic": sum eps_i, sum delta_i; "advanced": those and sum eps_i^2, sum of the
    rounded-up drift terms; "zcdp": sum rho_i).  :meth:`cost` turns one validated charge
    into the increment of that tuple, :meth:`admit` returns the new state or ``None``.
    Constructed with the arguments of :class:`PrivacyBudget` (which see for the privacy
    argument of each rule).
    """

    __slots__ = ("composition", "epsilon", "delta", "delta_prime", "rho", "params",
                 "_eps_cap", "_delta_cap", "_rho_cap", "_two_log_inv", "admit")
    composition: str
    epsilon: float | None
    delta: float | None
    delta_prime: float | None
    rho: float | None
    params: dict[str, Any]
    _eps_cap: Scaled
    _delta_cap: Scaled
    _rho_cap: Scaled
    _two_log_inv: float
    admit: Callable[[State, State], State | None]

    def __init__(self, epsilon: object = None, delta: object = 0.0, composition: str = "basic", *,
                 delta_prime: object = None, rho: object = None) -> None:
        self.composition = _v.choice("composition", composition, ("basic", "advanced", "zcdp"))
        self.epsilon = self.delta = self.delta_prime = self.rho = None
        # caps that do not apply to this rule stay 0 (never read)
        self._two_log_inv = 0.0
        self._eps_cap = self._delta_cap = self._rho_cap = 0
        # The exact parameters as given: what a durable store keeps to rebuild this filter.
        self.params = {"composition": self.composition, "epsilon": None, "delta": None,
                       "delta_prime": None, "rho": None}
        if self.composition == "zcdp":
            self._init_zcdp(epsilon, delta, delta_prime, rho)
            self.admit = self._admit_zcdp
            return
        if rho is not None:
            raise PrivacyParameterError(f"rho applies to composition='zcdp' only; got {rho!r}")
        if epsilon is None:
            raise PrivacyParameterError(f"epsilon is required for composition={self.composition!r}; got None")
        self.epsilon, eps_x = exact_amount("epsilon", epsilon, "positive")
        self._eps_cap = scale(eps_x)
        self.params["epsilon"] = eps_x
        if self.composition == "basic":
            if delta_prime is not None:
                raise PrivacyParameterError("delta_prime applies to composition='advanced' only; got "
                                            f"{delta_prime!r}")
            self.delta, dlt_x = exact_amount("delta", delta, "delta")
            self._delta_cap = scale(dlt_x)
            self.params["delta"] = dlt_x
            self.admit = self._admit_basic
            return
        self.delta, dlt_x = exact_amount("delta", delta, "delta_open")
        if delta_prime is None:
            raise PrivacyParameterError("delta_prime is required for composition='advanced'; got None")
        self.delta_prime, dp_x = exact_amount("delta_prime", delta_prime, "delta_open")
        if dp_x > dlt_x:
            raise PrivacyParameterError(f"delta_prime must be <= delta ({self.delta!r}); got {delta_prime!r}")
        if _v.float_down(dp_x) == 0.0:
            raise PrivacyParameterError(f"delta_prime must be at least 5e-324; got {delta_prime!r}")
        self.params.update(delta=dlt_x, delta_prime=dp_x)
        self._delta_cap = scale(dlt_x) - scale(dp_x)  # delta' is set aside
        # 2 ln(1/delta'), rounded up (log is within 1 ulp; the doubling is exact; delta'
        # rounded down to a float first, which only makes ln(1/delta') larger).
        self._two_log_inv = _up(2.0 * -math.log(_v.float_down(dp_x)))
        self.admit = self._admit_advanced

    def _init_zcdp(self, epsilon: object, delta: object, delta_prime: object,
                   rho: object) -> None:
        if delta_prime is not None:
            raise PrivacyParameterError("delta_prime applies to composition='advanced' only; got "
                                        f"{delta_prime!r}")
        if rho is not None and epsilon is None:
            if delta != 0.0:
                raise PrivacyParameterError(f"delta must be 0 when the zcdp budget is given as rho; got {delta!r}")
            self.rho, rho_x = exact_amount("rho", rho, "positive")
        elif rho is not None:
            raise PrivacyParameterError("give either rho or epsilon (with delta) for a zcdp budget, not both")
        else:
            if epsilon is None:
                raise PrivacyParameterError("a zcdp budget needs rho, or epsilon and delta; got neither")
            self.epsilon, eps_x = exact_amount("epsilon", epsilon, "positive")
            self.delta, dlt_x = exact_amount("delta", delta, "delta_open")
            # the rho of the (epsilon, delta) target grows with both: compute it from the
            # floats at or below the exact values
            self.rho = zcdp_budget(_v.float_down(eps_x), _v.float_down(dlt_x))
            rho_x = Fraction(self.rho)
            self.params.update(epsilon=eps_x, delta=dlt_x)
        self.params["rho"] = rho_x
        self._rho_cap = scale(rho_x)

    @classmethod
    def from_params(cls, params: Mapping[str, Any]) -> Filter:
        """Rebuild a filter from :attr:`params` (exact values), as a store does.  A zcdp
        filter given (epsilon, delta) keeps the stored rho rather than recomputing it."""
        p = {k: (None if v is None else Fraction(v)) for k, v in params.items() if k != "composition"}
        comp = params["composition"]
        if comp == "zcdp" and p["epsilon"] is not None:
            f = cls(p["epsilon"], p["delta"], "zcdp")
            f.rho, rho_x = exact_amount("rho", p["rho"], "positive")
            f.params["rho"] = rho_x
            f._rho_cap = scale(rho_x)
            return f
        delta = 0.0 if p["delta"] is None else p["delta"]
        return cls(p["epsilon"], delta, comp, delta_prime=p["delta_prime"], rho=p["rho"])

    # -- charges

    def zero(self) -> State:
        """The state of a budget with nothing spent."""
        return {"basic": (0, 0), "advanced": (0, 0, 0, 0), "zcdp": (0,)}[self.composition]

    def convert(self, epsilon: object, delta: object, rho: object,
                ) -> tuple[float, float, float | None, Amounts]:
        """Validate one charge: ``(eps_f, delta_f, rho_f, (eps_x, delta_x, rho_x))`` with
        floats for display and exact values (``rho_x`` is None outside "zcdp")."""
        if rho is not None:
            if self.composition != "zcdp":
                raise ValueError("spend_rho/reserve_rho need composition='zcdp'; this budget is "
                                 f"{self.composition!r}")
            rho_f, rho_x = exact_amount("rho", rho, "nonnegative")
            return 0.0, 0.0, rho_f, (Fraction(0), Fraction(0), rho_x)
        eps_f, eps_x = exact_amount("epsilon", epsilon, "nonnegative")
        dlt_f, dlt_x = exact_amount("delta", delta, "delta")
        if self.composition == "zcdp":
            if dlt_x != 0:
                raise PrivacyParameterError(
                    "delta must be 0 for a charge against a zcdp budget (a pure epsilon-DP "
                    f"mechanism is epsilon^2/2-zCDP); got {delta!r}; use spend_rho for other mechanisms"
                )
            rho_x = Fraction(eps_x) ** 2 / 2
            return eps_f, 0.0, _v.decimal_up(rho_x), (eps_x, dlt_x, rho_x)
        return eps_f, dlt_f, None, (eps_x, dlt_x, None)

    def cost(self, amounts: Amounts) -> State:
        """The increment of the state for exact ``(eps, delta, rho)``."""
        eps, dlt, rho = amounts
        if self.composition == "basic":
            return (scale(eps), scale(dlt))
        if self.composition == "zcdp":
            return (scale(cast(Fraction, rho)),)   # convert() sets rho in "zcdp" mode
        e = scale(eps)
        return (e, scale(dlt), e * e, _drift_scaled(eps))  # e*e is scaled by UNIT**2

    @staticmethod
    def add(state: State, cost: State, sign: int = 1) -> State:
        """The state plus (sign=1) or minus (sign=-1) a cost."""
        return tuple(s + sign * c for s, c in zip(state, cost, strict=True))

    def _admit_basic(self, state: State, cost: State) -> State | None:
        e = state[0] + cost[0]
        d = state[1] + cost[1]
        if e <= self._eps_cap and d <= self._delta_cap:
            return (e, d)
        return None

    def _admit_zcdp(self, state: State, cost: State) -> State | None:
        r = state[0] + cost[0]
        return (r,) if r <= self._rho_cap else None

    def _admit_advanced(self, state: State, cost: State) -> State | None:
        new = self.add(state, cost)
        if new[1] > self._delta_cap:
            return None
        if new[0] <= self._eps_cap or self._advanced_bound(new[2], new[3]) <= self._eps_cap:
            return new
        return None

    def admits(self, state: State) -> bool:
        """Whether a state is within the caps (the check :meth:`admit` makes)."""
        return self.admit(state, (0,) * len(state)) is not None

    def _advanced_bound(self, sq: Scaled, drift: Scaled) -> Scaled:
        """Upper bound on sqrt(2 ln(1/delta') sum eps_i^2) + sum drift, scaled; a value
        above every cap when a float step overflows."""
        inner = _up(self._two_log_inv * _float_up(unscale(sq, 2)))
        if not inner < _INF:
            return _DRIFT_INF
        return scale(_up(math.sqrt(inner))) + drift

    # -- reports

    def spent(self, state: State) -> PrivacyAmount:
        """The composed total of a state, rounded up (see :attr:`PrivacyBudget.spent`)."""
        if self.composition == "zcdp":
            return PrivacyAmount(None, None, _v.decimal_up(unscale(state[0])))
        eps, dlt = self._spent_scaled(state)
        return PrivacyAmount(_v.decimal_up(unscale(eps)), _v.decimal_up(unscale(dlt)), None)

    def _spent_scaled(self, state: State) -> tuple[Scaled, Scaled]:
        eps, dlt = state[0], state[1]
        if self.composition == "advanced" and state[2] > 0:
            adv = self._advanced_bound(state[2], state[3])
            if adv < eps:  # the advanced bound is the better one: it costs delta'
                eps, dlt = adv, dlt + scale(self.params["delta_prime"])
        return eps, dlt

    def remaining(self, state: State) -> PrivacyAmount:
        """The caps minus :meth:`spent`, rounded down (exact when it is a short decimal)."""
        if self.composition == "zcdp":
            return PrivacyAmount(None, None, _v.decimal_down(max(Fraction(0), unscale(self._rho_cap - state[0]))))
        eps = max(Fraction(0), unscale(self._eps_cap - self._spent_scaled(state)[0]))
        dlt = max(Fraction(0), unscale(self._delta_cap - state[1]))  # delta' already set aside
        return PrivacyAmount(_v.decimal_down(eps), _v.decimal_down(dlt), None)

    def describe(self) -> str:
        if self.composition == "zcdp":
            return f"rho={self.rho!r}"
        text = f"epsilon={self.epsilon!r}, delta={self.delta!r}"
        if self.delta_prime is not None:
            text += f", delta_prime={self.delta_prime!r}"
        return text


class PrivacyBudget:
    """A thread-safe privacy budget (a privacy *filter*) with an immutable ledger.

    Mechanisms call :meth:`spend` (or :meth:`reserve` then :meth:`commit`) *before*
    drawing noise; a charge that would take the total over the budget raises
    :class:`~dpfast.BudgetExceededError` and records nothing.

    Parameters
    ----------
    epsilon : float, int, Fraction or Decimal, optional
        Total epsilon > 0 ("basic", "advanced"; "zcdp" when ``rho`` is not given), read
        as a decimal (see "Decimal parameters" below).
    delta : float, int, Fraction or Decimal, default 0.0
        Total delta in [0, 1) ("basic"), in (0, 1) ("advanced", or "zcdp" given epsilon).
    composition : {"basic", "advanced", "zcdp"}, default "basic"
        How charges are added up; see Privacy.
    delta_prime : float, optional
        "advanced" mode only (required there): the delta' of advanced composition,
        in (0, delta].  It is set aside from ``delta`` at construction.
    rho : float or Fraction, optional
        "zcdp" mode: the budget in rho > 0, instead of (epsilon, delta).

    Attributes
    ----------
    composition : str
    epsilon, delta, delta_prime, rho : float or None
        The budget as given (rho also when derived from epsilon and delta).

    Privacy
    -------
    The whole interaction is (epsilon, delta)-DP ("basic", "advanced") or rho-zCDP
    ("zcdp"), even though each charge may be chosen after seeing earlier outputs: a
    budget is a *filter* in the sense of Rogers, Roth, Ullman & Vadhan (2016).

    * **basic**: admits a charge iff sum eps_i <= epsilon and sum delta_i <= delta
      after it (Dwork & Roth Thm 3.16; basic composition is a valid filter).  Exact.
    * **advanced**: admits a charge iff sum delta_i <= delta - delta_prime and
      min(sum eps_i, sqrt(2 ln(1/delta') sum eps_i^2) + sum eps_i (e^eps_i - 1)) <= epsilon.
      The second expression is heterogeneous advanced composition (Dwork & Roth
      Thm 3.20), proved for parameters fixed in advance.  It stays valid as a filter:
      it is >= sum eps_i^2/2 + sqrt(2 ln(1/delta') sum eps_i^2), which is
      rho + 2 sqrt(rho ln(1/delta')) for rho = sum eps_i^2 / 2, so admitted paths in the
      advanced branch have zCDP sum <= rho* with rho* + 2 sqrt(rho* ln(1/delta')) = epsilon;
      eps-DP is eps^2/2-zCDP (Bun & Steinke Prop. 1.4), the exponential supermartingale
      of the Renyi filter (Feldman & Zrnic 2021) bounds Pr[loss > epsilon] on those paths
      by delta', and on basic-branch paths the loss is <= sum eps_i <= epsilon surely.
      For charges with delta_i > 0 the argument goes through approximate zCDP; that step
      relies on the approximate-zCDP filter of Whitehouse, Ramdas, Rogers & Wu (2023).
      The square root and e^eps - 1 are evaluated in floating point and rounded up.
    * **zcdp**: the budget is rho; :meth:`spend_rho` charges rho_i and :meth:`spend`
      charges a pure epsilon-DP mechanism as rho_i = epsilon^2/2 (Bun & Steinke Prop. 1.4;
      ``delta`` must be 0 there).  Admits iff sum rho_i <= rho, exactly; valid for
      adaptively chosen rho_i by the Renyi filter of Feldman & Zrnic (2021) applied at
      every order.  Given ``epsilon`` and ``delta`` instead of ``rho``, the budget is
      ``rho = zcdp_budget(epsilon, delta)`` (tight conversion of Canonne, Kamath &
      Steinke 2020), so the interaction is also (epsilon, delta)-DP.

    **Decimal parameters.**  Every amount (caps and charges) means the decimal the caller
    wrote: a float is the decimal it prints as, ``Fraction(repr(x))`` (the float 0.1 is
    exactly one tenth here, not its binary value 0.1000000000000000055...); an ``int``,
    :class:`~fractions.Fraction` or :class:`~decimal.Decimal` is exact; a numpy float32
    is the decimal numpy prints for it (``np.float32(0.1)`` is one tenth); np.longdouble
    is refused by type.  Arithmetic on those values is exact, so ten charges of ``0.1``
    fill ``PrivacyBudget(1.0)`` exactly and an eleventh is refused, and 0.1 + 0.2 fills
    0.3.  This is sound because every dpfast mechanism calibrates its noise with the
    largest float at or below the decimal (more noise), so it is DP for the decimal it
    is charged.  :attr:`spent` and :attr:`remaining` are floats that print as the exact
    totals whenever those are short decimals (rounded up, respectively down, otherwise).
    Reserved amounts count as spent until rolled back.  Every method takes one lock, so
    concurrent charges can never overspend.

    An in-memory budget belongs to the process that created it: a copy in a forked
    child refuses every charge (:class:`~dpfast.BudgetExceededError`), and pickling or
    copying it raises ``TypeError``, because each copy would spend the whole budget.
    Processes and hosts that share a budget use :mod:`dpfast.ledger` (SQLite or
    PostgreSQL), whose budgets are this class backed by a durable store.

    The figures returned by :attr:`spent` in "advanced" mode are what the filter
    compares to the budget; they are not an odometer: the guarantee of an interaction
    whose parameters were chosen adaptively is the budget, not the running total
    (Rogers et al. 2016 separate the two).

    References
    ----------
    C. Dwork, A. Roth, 2014, Thm 3.16, 3.20.
    R. Rogers, A. Roth, J. Ullman, S. Vadhan, "Privacy Odometers and Filters:
    Pay-as-you-Go Composition", NeurIPS 2016.
    M. Bun, T. Steinke, TCC 2016.  V. Feldman, T. Zrnic, "Individual Privacy Accounting
    via a Renyi Filter", NeurIPS 2021.  J. Whitehouse, A. Ramdas, R. Rogers, Z. S. Wu,
    "Fully-Adaptive Composition in Differential Privacy", ICML 2023.
    C. Canonne, G. Kamath, T. Steinke, NeurIPS 2020.

    Examples
    --------
    >>> from dpfast.accounting import PrivacyBudget
    >>> budget = PrivacyBudget(1.0)
    >>> budget.spend(0.25, label="count")          # doctest: +ELLIPSIS
    LedgerEntry(index=0, label='count', epsilon=0.25, ...)
    >>> r = budget.reserve(0.5)
    >>> budget.commit(r)                             # doctest: +ELLIPSIS
    LedgerEntry(index=1, ...)
    >>> budget.remaining
    Cost(epsilon=0.25, delta=0.0, rho=None)
    """

    def __init__(self, epsilon: object = None, delta: object = 0.0, composition: str = "basic", *,
                 delta_prime: object = None, rho: object = None) -> None:
        self._init_filter(Filter(epsilon, delta, composition, delta_prime=delta_prime, rho=rho))
        self._state = self._filter.zero()
        self._ledger: list[LedgerEntry] = []
        self._active: dict[int, Reservation] = {}

    def _init_filter(self, filt: Filter) -> None:
        self._filter = filt
        self.composition = filt.composition
        self.epsilon, self.delta = filt.epsilon, filt.delta
        self.delta_prime, self.rho = filt.delta_prime, filt.rho
        self._lock = threading.Lock()
        self._fork_gen = _FORK[0]
        # spend's inlined path is the memory store's "basic" filter only
        self._fast = type(self) is PrivacyBudget and filt.composition == "basic"

    def _check_process(self) -> None:
        # Each forked copy of an in-memory budget would spend the whole remaining budget
        # (a review saw 4 workers and the parent spend epsilon = 5 from a budget of 1).
        if self._fork_gen != _FORK[0]:
            raise BudgetExceededError(
                "this PrivacyBudget was created in another process: a forked copy never "
                "spends (every copy would spend the same budget); use a shared ledger, "
                "dpfast.ledger.open('sqlite:///path.db').budget(key, ...), in every process")

    def __reduce__(self) -> tuple[Any, ...]:   # always raises: not picklable
        raise TypeError(
            "an in-memory PrivacyBudget cannot be pickled or copied: the copy would spend "
            "the same budget again; share a ledger-backed budget (dpfast.ledger), which "
            "reconnects to its store when unpickled")

    # ---- charging (memory store) -----------------------------------------------------------

    def _admit(self, epsilon: object, delta: object, rho: object, label: str | None,
               status: str) -> LedgerEntry | Reservation:
        if self._fork_gen != _FORK[0]:
            self._check_process()
        filt = self._filter
        eps_f, dlt_f, rho_f, amounts = filt.convert(epsilon, delta, rho)
        if label is not None and type(label) is not str:
            _label(label)
        cost = filt.cost(amounts)
        with self._lock:
            new = filt.admit(self._state, cost)
            if new is None:
                raise self._refusal(eps_f, dlt_f, rho_f, rho is not None, label)
            self._state = new
            entry = LedgerEntry(len(self._ledger), label, eps_f, dlt_f, rho_f, status)
            self._ledger.append(entry)
            if status == "reserved":
                held = Reservation(entry.index, label, eps_f, dlt_f, rho_f, (self, cost))
                self._active[entry.index] = held
                return held
        return entry

    def _refusal(self, eps_f: float, dlt_f: float, rho_f: float | None, is_rho: bool,
                 label: str | None) -> BudgetExceededError:
        what = f"rho={rho_f!r}" if is_rho else f"epsilon={eps_f!r}, delta={dlt_f!r}"
        return BudgetExceededError(
            f"charge ({what}, label={label!r}) refused: it would exceed the budget; "
            f"remaining {self._filter.remaining(self._state)}")

    def _snapshot(self) -> State:
        with self._lock:
            return self._state

    def _settle(self, reservation: Reservation, status: str) -> LedgerEntry:
        if not isinstance(reservation, Reservation):
            raise TypeError(f"reservation must be a Reservation; got {type(reservation).__name__}")
        owner = reservation._owner
        if not isinstance(owner, tuple) or owner[0] is not self:
            raise ValueError("reservation belongs to another PrivacyBudget")
        self._check_process()
        cost = owner[1]
        with self._lock:
            if self._active.pop(reservation.index, None) is None:
                raise RuntimeError(
                    f"reservation {reservation.index} was already settled "
                    f"({self._ledger[reservation.index].status})"
                )
            if status == "rolled_back":
                self._state = Filter.add(self._state, cost, -1)
            entry = cast(LedgerEntry, self._ledger[reservation.index]._replace(status=status))
            self._ledger[reservation.index] = entry
            return entry

    # ---- public API --------------------------------------------------------------------

    def active(self) -> contextlib.AbstractContextManager[PrivacyBudget]:
        """``with budget.active(): ...``: every mechanism called in the block without
        ``budget=`` charges this budget (an explicit ``budget=`` still wins;
        ``budget=dpfast.NO_BUDGET`` charges nothing).  Local to the thread and asyncio
        task (a :class:`contextvars.ContextVar`): a new thread does not inherit it.
        Blocks nest; leaving one restores the outer budget.  See :mod:`dpfast._active`.

        >>> from dpfast.accounting import PrivacyBudget
        >>> from dpfast.mechanisms import laplace_mechanism
        >>> budget = PrivacyBudget(1.0)
        >>> with budget.active():
        ...     y = laplace_mechanism(42, epsilon=0.25)
        >>> budget.spent.epsilon
        0.25
        """
        return _activate(self)


    def spend(self, epsilon: object, delta: object = 0.0, *,
              label: str | None = None) -> LedgerEntry:
        """Charge an (epsilon, delta)-DP mechanism before it runs.

        Parameters
        ----------
        epsilon : float or Fraction
            epsilon >= 0 of the mechanism about to run.
        delta : float or Fraction, default 0.0
            Its delta in [0, 1) (must be 0 in "zcdp" mode).
        label : str, optional
            Free text kept in the ledger.

        Returns
        -------
        LedgerEntry
            The new ledger line (status "spent").

        Raises
        ------
        BudgetExceededError
            The charge would overspend, or this in-memory budget was copied into a
            forked process; nothing was recorded.
        PrivacyParameterError, TypeError
            Invalid arguments; nothing was recorded.

        Privacy
        -------
        See the class docstring: the charge is admitted only if the composed total stays
        within the budget.
        """
        if (self._fast and type(epsilon) is float and type(delta) is float
                and 0.0 <= epsilon < _INF and 0.0 <= delta < 1.0 and self._fork_gen == _FORK[0]
                and (label is None or type(label) is str)):
            # The common charge, inlined (the same steps as _admit with Filter.cost and
            # Filter._admit_basic): each float charges the decimal it prints as.
            ce = _SCALED.get(epsilon)
            if ce is None:
                ce = _scaled_float(epsilon)
            cd = (_SCALED.get(delta) or _scaled_float(delta)) if delta else 0
            filt = self._filter
            with self._lock:
                e, dl = self._state
                e += ce
                dl += cd
                if e <= filt._eps_cap and dl <= filt._delta_cap:
                    self._state = (e, dl)
                    entry = LedgerEntry(len(self._ledger), label, epsilon, delta, None, "spent")
                    self._ledger.append(entry)
                    return entry
        return cast(LedgerEntry, self._admit(epsilon, delta, None, label, "spent"))

    def spend_parallel(self, charges: Iterable[object], *,
                       label: str | None = None) -> LedgerEntry:
        """Charge releases on *disjoint* parts of the data once, at their maximum cost.

        Parameters
        ----------
        charges : iterable of tuple or float
            The ``(epsilon_i, delta_i)`` of the releases about to run, one per
            partition, or a bare ``epsilon_i`` (delta_i = 0); each is validated like
            :meth:`spend`.
        label : str, optional
            Free text kept in the ledger line.

        Returns
        -------
        LedgerEntry
            One ledger line (status "spent") with epsilon = max epsilon_i and
            delta = max delta_i: the same as ``spend(max eps_i, max delta_i)``, through
            the same filter (so a ledger-backed budget records it in one transaction).

        Raises
        ------
        BudgetExceededError
            The maximum would overspend; nothing was recorded.
        PrivacyParameterError, TypeError
            Invalid or no charges; nothing was recorded.

        Privacy
        -------
        Parallel composition (McSherry 2009, PINQ, Thm 4):
        if the data are split into disjoint parts by a rule that does not depend on
        any other record, and release i is (epsilon_i, delta_i)-DP and reads only part
        i, then adding or removing one record changes at most one part, so together the
        releases are (max epsilon_i, max delta_i)-DP.  **The caller declares this**: it
        holds only when each record (each privacy unit: all rows of one person, under
        the neighbouring relation the budget is meant for) affects at most one of the
        charged releases.  Releases over overlapping parts, or a unit with rows in
        several parts, must be charged with :meth:`spend`, which adds them up.

        Notes
        -----
        A method rather than a context manager that collects the charges of mechanisms
        and commits on exit: every mechanism charges *before* it draws noise, and a
        deferred charge would let noise be drawn before the budget admitted it.  Run
        the releases after this call, without passing them ``budget=``.

        References
        ----------
        F. McSherry, "Privacy Integrated Queries", SIGMOD 2009, Thm 4.

        Examples
        --------
        >>> from dpfast.accounting import PrivacyBudget
        >>> budget = PrivacyBudget(1.0)
        >>> budget.spend_parallel([0.5, 0.25, 0.5], label="count per region")  # doctest: +ELLIPSIS
        LedgerEntry(index=0, label='count per region', epsilon=0.5, delta=0.0, ...)
        >>> budget.remaining
        Cost(epsilon=0.5, delta=0.0, rho=None)
        """
        items = []
        for c in charges:
            if isinstance(c, tuple | list):
                if len(c) != 2:
                    raise TypeError(f"each charge must be (epsilon, delta) or epsilon; got {c!r}")
                items.append((c[0], c[1]))
            else:
                items.append((c, 0.0))
        if not items:
            raise PrivacyParameterError("spend_parallel needs at least one charge; got none")
        eps, dlt = [], []
        for e, d in items:
            eps_x, dlt_x, _ = self._filter.convert(e, d, None)[3]
            eps.append((Fraction(eps_x), e))
            dlt.append((Fraction(dlt_x), d))
        # Pass the caller's own values (floats or Fractions) so the filter sees exactly
        # the amounts it would see from spend().
        eps_max = max(eps, key=lambda t: t[0])[1]
        dlt_max = max(dlt, key=lambda t: t[0])[1]
        return self.spend(eps_max, dlt_max, label=label)

    def spend_rho(self, rho: object, *, label: str | None = None) -> LedgerEntry:
        """Charge a rho-zCDP mechanism ("zcdp" mode only).

        Parameters
        ----------
        rho : float or Fraction
            rho >= 0, e.g. :func:`gaussian_zcdp` of the mechanism about to run.
        label : str, optional
            Free text kept in the ledger.

        Returns
        -------
        LedgerEntry

        Raises
        ------
        BudgetExceededError
            sum rho_i would exceed the budget; nothing was recorded.
        ValueError
            The budget is not in "zcdp" mode.

        Privacy
        -------
        Bun & Steinke 2016 Lemma 1.7 (the rhos add up), as a Renyi filter.
        """
        return cast(LedgerEntry, self._admit(None, 0.0, rho, label, "spent"))

    def reserve(self, epsilon: object, delta: object = 0.0, *,
                label: str | None = None) -> Reservation:
        """Hold a charge now; settle it later with :meth:`commit` or :meth:`rollback`.

        Parameters
        ----------
        epsilon, delta, label
            As in :meth:`spend`.

        Returns
        -------
        Reservation

        Raises
        ------
        BudgetExceededError
            The charge would overspend; nothing was recorded.

        Privacy
        -------
        A reservation counts as spent until it is rolled back.  Roll back only a charge
        whose mechanism released nothing (e.g. it failed before drawing noise).
        """
        return cast(Reservation, self._admit(epsilon, delta, None, label, "reserved"))

    def reserve_rho(self, rho: object, *, label: str | None = None) -> Reservation:
        """Like :meth:`reserve` for a rho-zCDP charge ("zcdp" mode only)."""
        return cast(Reservation, self._admit(None, 0.0, rho, label, "reserved"))

    def commit(self, reservation: Reservation) -> LedgerEntry:
        """Turn a reservation into a permanent charge.

        Parameters
        ----------
        reservation : Reservation
            From :meth:`reserve` of this budget, not yet settled.

        Returns
        -------
        LedgerEntry
            The updated ledger line (status "committed").

        Raises
        ------
        ValueError
            The reservation belongs to another budget.
        RuntimeError
            It was already committed or rolled back.
        """
        return self._settle(reservation, "committed")

    def rollback(self, reservation: Reservation) -> LedgerEntry:
        """Release a reservation whose mechanism released nothing.

        Parameters
        ----------
        reservation : Reservation
            From :meth:`reserve` of this budget, not yet settled.

        Returns
        -------
        LedgerEntry
            The updated ledger line (status "rolled_back"); its amount is available again.

        Raises
        ------
        ValueError, RuntimeError
            As in :meth:`commit`.

        Privacy
        -------
        Only sound if nothing computed from the data under this reservation was, or
        will be, released.
        """
        return self._settle(reservation, "rolled_back")

    def can_spend(self, epsilon: object, delta: object = 0.0) -> bool:
        """Whether :meth:`spend` with these arguments would succeed right now.

        Parameters
        ----------
        epsilon, delta
            As in :meth:`spend`.

        Returns
        -------
        bool
            A snapshot: another thread may spend in between, so mechanisms must still
            call :meth:`spend`, which checks again atomically.
        """
        *_, amounts = self._filter.convert(epsilon, delta, None)
        return self._filter.admit(self._snapshot(), self._filter.cost(amounts)) is not None

    def can_spend_rho(self, rho: object) -> bool:
        """Whether :meth:`spend_rho` would succeed right now ("zcdp" mode)."""
        *_, amounts = self._filter.convert(None, 0.0, rho)
        return self._filter.admit(self._snapshot(), self._filter.cost(amounts)) is not None

    @property
    def spent(self) -> PrivacyAmount:
        """The composed total of all non-rolled-back charges, rounded up.

        "basic": (sum eps_i, sum delta_i).  "advanced": (min(sum eps_i, advanced bound),
        sum delta_i + delta_prime).  "zcdp": rho = sum rho_i."""
        return self._filter.spent(self._snapshot())

    @property
    def remaining(self) -> PrivacyAmount:
        """Budget minus :attr:`spent`, rounded down.  In "advanced" mode epsilon is not
        additive: use :meth:`can_spend` to test a charge.  ``delta`` excludes delta_prime."""
        return self._filter.remaining(self._snapshot())

    @property
    def ledger(self) -> list[LedgerEntry]:
        """A copy of the ledger: a list of immutable :class:`LedgerEntry`, oldest first."""
        with self._lock:
            return list(self._ledger)

    def __repr__(self) -> str:
        return (f"{type(self).__name__}({self._filter.describe()}, "
                f"composition={self.composition!r}, spent={self.spent})")
