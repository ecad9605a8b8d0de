"""Composition rules of a privacy filter: exact amounts and the arithmetic of each rule.

The mathematics of :class:`~dpfast.accounting.PrivacyBudget`, and nothing else: no
locks, no storage, no processes.  A :class:`Filter` holds the caps and the composition
rule ("basic", "advanced", "zcdp") and is a set of pure functions of a *state* (a tuple
of exact totals): :meth:`Filter.cost` turns one validated charge into the increment of
that tuple, :meth:`Filter.admit` returns the new state or ``None``.  A budget keeps the
state in a *store* (memory, SQLite, PostgreSQL) and asks its filter inside the store's
atomic step, so there is one implementation of each rule.

Amounts are decimal (:func:`dpfast._validation.exact`): a float charge means the decimal
it prints as, so ten charges of 0.1 add up to exactly 1.  They are kept *scaled*: an
amount x is held as x * UNIT with UNIT = 2**1074 * 5**340, a Python ``int`` for every
decimal of up to 340 places (every float's repr, whose exponent is >= -324 with at most
17 digits) and for every float's binary value (a multiple of 2**-1074, used for the
rounded-up terms of the advanced filter); a :class:`~fractions.Fraction` only for the
rare other rational a caller passes (``Fraction(1, 3)``).  Ints add and compare an order
of magnitude faster than Fractions, and mixed sums stay exact.  Ledgers written before
this rule (unit 2**1074, :data:`LEGACY_FACTOR`) are converted by
:mod:`dpfast.ledger._schema1`.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable, Mapping
from fractions import Fraction
from typing import Any, TypeAlias, cast

from .. import _validation as _v
from .._errors import PrivacyParameterError
from ._numeric import _up
from .zcdp import zcdp_budget

__all__ = [
    "Filter",
    "UNIT",
    "LEGACY_FACTOR",
    "Scaled",
    "State",
    "Amounts",
    "Totals",
    "exact_amount",
    "scale",
    "scaled_float",
    "cached_scaled",
    "unscale",
]

_INF = math.inf
#: An exact amount times UNIT (an int in the common case) and a filter's state/cost tuple.
Scaled: TypeAlias = "int | Fraction"
State: TypeAlias = "tuple[Scaled, ...]"
#: A validated charge: exact (epsilon, delta, rho), rho None outside "zcdp".
Amounts: TypeAlias = "tuple[Fraction, Fraction, Fraction | None]"
#: Composed totals or remainders as floats: (epsilon, delta, rho), None where they do not apply.
Totals: TypeAlias = "tuple[float | None, float | None, float | None]"
_SHIFT = 1074  # 2**-1074 is the smallest positive float: every float is an integer multiple
_DECIMALS = 340  # every float's repr has at most 340 decimal places (5e-324, 17 digits)
#: The unit of the scaled state: its inverse is a multiple of 2**-1074 and of 10**-340.
UNIT: int = (1 << _SHIFT) * 5**_DECIMALS
#: Ledgers written with unit 2**1074 (schema 1, before decimal amounts): multiply by this.
LEGACY_FACTOR: int = 5**_DECIMALS
_MAX = Fraction(sys.float_info.max)
# A drift term eps (e^eps - 1) too large for a float: stands for +inf.  Its value 2**1025
# exceeds every representable epsilon cap, so the advanced branch never admits again, and
# a rollback subtracts exactly what was added.
_DRIFT_INF: int = (1 << 1025) * UNIT


# ---- exact amounts -----------------------------------------------------------------------

_RULES = {
    "positive": ("finite and > 0", True, False),
    "nonnegative": ("finite and >= 0", False, False),
    "delta": ("in [0, 1)", False, True),
    "delta_open": ("in (0, 1)", True, True),
}


def exact_amount(
    name: str, value: object, rule: str = "nonnegative"
) -> tuple[float, Fraction]:
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
    if x is None or not (
        (x > 0 if open_low else x >= 0) and x <= _MAX and (x < 1 if below_one else True)
    ):
        raise PrivacyParameterError(f"{name} must be {text}; got {value!r}")
    return float(x), x


def scale(x: Fraction | float) -> int | Fraction:
    """``x * UNIT`` exactly: an int for a decimal of <= 340 places or a dyadic rational,
    else a Fraction.  A float is taken at its *binary* value: only the filter's own
    rounded-up terms are floats here (amounts arrive as Fractions)."""
    if isinstance(x, float):
        n, d = x.as_integer_ratio()
        return (n * UNIT) // d  # d is a power of two <= 2**1074: exact
    q = Fraction(x)
    n, r = divmod(q.numerator * UNIT, q.denominator)
    return n if r == 0 else Fraction(q.numerator * UNIT, q.denominator)


_SCALED: dict[float, Scaled] = {}
#: ``cached_scaled(x)``: :func:`scaled_float` of the float ``x`` if it is cached, else None
#: (the cheapest look-up, for the inlined charge of an in-memory budget).
cached_scaled = _SCALED.get


def scaled_float(x: float) -> Scaled:
    """scale() of the decimal a float charge means, cached (a budget sees few distinct
    charges, and scaling is the slow part of a charge)."""
    s = _SCALED.get(x)
    if s is not None:
        return s
    s = scale(_v.decimal_of(x))
    if len(_SCALED) >= 4096:
        _SCALED.clear()
    _SCALED[x] = s
    return s


def unscale(s: int | Fraction, power: int = 1) -> Fraction:
    """The Fraction ``s / UNIT**power`` (the inverse of :func:`scale`)."""
    return Fraction(s) / int(UNIT**power)


def _float_up(f: Fraction) -> float:
    """The smallest float >= the rational ``f`` (its binary value); +inf beyond the largest float."""
    return _v.float_up(f)


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
    Constructed with the arguments of :class:`~dpfast.accounting.PrivacyBudget` (which
    see for the privacy argument of each rule).  ``eps_cap``, ``delta_cap`` and
    ``rho_cap`` are the caps, scaled (``delta_cap`` without delta', which is set aside).
    """

    __slots__ = (
        "composition",
        "epsilon",
        "delta",
        "delta_prime",
        "rho",
        "params",
        "eps_cap",
        "delta_cap",
        "rho_cap",
        "_two_log_inv",
        "admit",
    )
    composition: str
    epsilon: float | None
    delta: float | None
    delta_prime: float | None
    rho: float | None
    params: dict[str, Any]
    eps_cap: Scaled
    delta_cap: Scaled
    rho_cap: Scaled
    _two_log_inv: float
    admit: Callable[[State, State], State | None]

    def __init__(
        self,
        epsilon: object = None,
        delta: object = 0.0,
        composition: str = "basic",
        *,
        delta_prime: object = None,
        rho: object = None,
    ) -> None:
        self.composition = _v.choice(
            "composition", composition, ("basic", "advanced", "zcdp")
        )
        self.epsilon = self.delta = self.delta_prime = self.rho = None
        # caps that do not apply to this rule stay 0 (never read)
        self._two_log_inv = 0.0
        self.eps_cap = self.delta_cap = self.rho_cap = 0
        # The exact parameters as given: what a durable store keeps to rebuild this filter.
        self.params = {
            "composition": self.composition,
            "epsilon": None,
            "delta": None,
            "delta_prime": None,
            "rho": None,
        }
        if self.composition == "zcdp":
            self._init_zcdp(epsilon, delta, delta_prime, rho)
            self.admit = self._admit_zcdp
            return
        if rho is not None:
            raise PrivacyParameterError(
                f"rho applies to composition='zcdp' only; got {rho!r}"
            )
        if epsilon is None:
            raise PrivacyParameterError(
                f"epsilon is required for composition={self.composition!r}; got None"
            )
        self.epsilon, eps_x = exact_amount("epsilon", epsilon, "positive")
        self.eps_cap = scale(eps_x)
        self.params["epsilon"] = eps_x
        if self.composition == "basic":
            if delta_prime is not None:
                raise PrivacyParameterError(
                    "delta_prime applies to composition='advanced' only; got "
                    f"{delta_prime!r}"
                )
            self.delta, dlt_x = exact_amount("delta", delta, "delta")
            self.delta_cap = scale(dlt_x)
            self.params["delta"] = dlt_x
            self.admit = self._admit_basic
            return
        self.delta, dlt_x = exact_amount("delta", delta, "delta_open")
        if delta_prime is None:
            raise PrivacyParameterError(
                "delta_prime is required for composition='advanced'; got None"
            )
        self.delta_prime, dp_x = exact_amount("delta_prime", delta_prime, "delta_open")
        if dp_x > dlt_x:
            raise PrivacyParameterError(
                f"delta_prime must be <= delta ({self.delta!r}); got {delta_prime!r}"
            )
        if _v.float_down(dp_x) == 0.0:
            raise PrivacyParameterError(
                f"delta_prime must be at least 5e-324; got {delta_prime!r}"
            )
        self.params.update(delta=dlt_x, delta_prime=dp_x)
        self.delta_cap = scale(dlt_x) - scale(dp_x)  # delta' is set aside
        # 2 ln(1/delta'), rounded up (log is within 1 ulp; the doubling is exact; delta'
        # rounded down to a float first, which only makes ln(1/delta') larger).
        self._two_log_inv = _up(2.0 * -math.log(_v.float_down(dp_x)))
        self.admit = self._admit_advanced

    def _init_zcdp(
        self, epsilon: object, delta: object, delta_prime: object, rho: object
    ) -> None:
        if delta_prime is not None:
            raise PrivacyParameterError(
                f"delta_prime applies to composition='advanced' only; got {delta_prime!r}"
            )
        if rho is not None and epsilon is None:
            if delta != 0.0:
                raise PrivacyParameterError(
                    f"delta must be 0 when the zcdp budget is given as rho; got {delta!r}"
                )
            self.rho, rho_x = exact_amount("rho", rho, "positive")
        elif rho is not None:
            raise PrivacyParameterError(
                "give either rho or epsilon (with delta) for a zcdp budget, not both"
            )
        else:
            if epsilon is None:
                raise PrivacyParameterError(
                    "a zcdp budget needs rho, or epsilon and delta; got neither"
                )
            self.epsilon, eps_x = exact_amount("epsilon", epsilon, "positive")
            self.delta, dlt_x = exact_amount("delta", delta, "delta_open")
            # the rho of the (epsilon, delta) target grows with both: compute it from the
            # floats at or below the exact values
            self.rho = zcdp_budget(_v.float_down(eps_x), _v.float_down(dlt_x))
            rho_x = Fraction(self.rho)
            self.params.update(epsilon=eps_x, delta=dlt_x)
        self.params["rho"] = rho_x
        self.rho_cap = scale(rho_x)

    @classmethod
    def from_params(cls, params: Mapping[str, Any]) -> Filter:
        """Rebuild a filter from :attr:`params` (exact values), as a store does.  A zcdp
        filter given (epsilon, delta) keeps the stored rho rather than recomputing it."""
        p = {
            k: (None if v is None else Fraction(v))
            for k, v in params.items()
            if k != "composition"
        }
        comp = params["composition"]
        if comp == "zcdp" and p["epsilon"] is not None:
            f = cls(p["epsilon"], p["delta"], "zcdp")
            f.rho, rho_x = exact_amount("rho", p["rho"], "positive")
            f.params["rho"] = rho_x
            f.rho_cap = scale(rho_x)
            return f
        delta = 0.0 if p["delta"] is None else p["delta"]
        return cls(p["epsilon"], delta, comp, delta_prime=p["delta_prime"], rho=p["rho"])

    # -- charges

    def zero(self) -> State:
        """The state of a budget with nothing spent."""
        return {"basic": (0, 0), "advanced": (0, 0, 0, 0), "zcdp": (0,)}[self.composition]

    def convert(
        self,
        epsilon: object,
        delta: object,
        rho: object,
    ) -> tuple[float, float, float | None, Amounts]:
        """Validate one charge: ``(eps_f, delta_f, rho_f, (eps_x, delta_x, rho_x))`` with
        floats for display and exact values (``rho_x`` is None outside "zcdp")."""
        if rho is not None:
            if self.composition != "zcdp":
                raise ValueError(
                    "spend_rho/reserve_rho need composition='zcdp'; this budget is "
                    f"{self.composition!r}"
                )
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
            return (scale(cast(Fraction, rho)),)  # convert() sets rho in "zcdp" mode
        e = scale(eps)
        return (e, scale(dlt), e * e, _drift_scaled(eps))  # e*e is scaled by UNIT**2

    @staticmethod
    def add(state: State, cost: State, sign: int = 1) -> State:
        """The state plus (sign=1) or minus (sign=-1) a cost."""
        return tuple(s + sign * c for s, c in zip(state, cost, strict=True))

    def _admit_basic(self, state: State, cost: State) -> State | None:
        e = state[0] + cost[0]
        d = state[1] + cost[1]
        if e <= self.eps_cap and d <= self.delta_cap:
            return (e, d)
        return None

    def _admit_zcdp(self, state: State, cost: State) -> State | None:
        r = state[0] + cost[0]
        return (r,) if r <= self.rho_cap else None

    def _admit_advanced(self, state: State, cost: State) -> State | None:
        new = self.add(state, cost)
        if new[1] > self.delta_cap:
            return None
        if new[0] <= self.eps_cap or self._advanced_bound(new[2], new[3]) <= self.eps_cap:
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

    def spent(self, state: State) -> Totals:
        """The composed total of a state, rounded up: ``(epsilon, delta, rho)`` as
        :attr:`PrivacyBudget.spent <dpfast.accounting.PrivacyBudget.spent>` reports it."""
        if self.composition == "zcdp":
            return (None, None, _v.decimal_up(unscale(state[0])))
        eps, dlt = self._spent_scaled(state)
        return (_v.decimal_up(unscale(eps)), _v.decimal_up(unscale(dlt)), None)

    def _spent_scaled(self, state: State) -> tuple[Scaled, Scaled]:
        eps, dlt = state[0], state[1]
        if self.composition == "advanced" and state[2] > 0:
            adv = self._advanced_bound(state[2], state[3])
            if adv < eps:  # the advanced bound is the better one: it costs delta'
                eps, dlt = adv, dlt + scale(self.params["delta_prime"])
        return eps, dlt

    def remaining(self, state: State) -> Totals:
        """The caps minus :meth:`spent`, rounded down (exact when it is a short decimal)."""
        if self.composition == "zcdp":
            return (
                None,
                None,
                _v.decimal_down(max(Fraction(0), unscale(self.rho_cap - state[0]))),
            )
        eps = max(Fraction(0), unscale(self.eps_cap - self._spent_scaled(state)[0]))
        dlt = max(
            Fraction(0), unscale(self.delta_cap - state[1])
        )  # delta' already set aside
        return (_v.decimal_down(eps), _v.decimal_down(dlt), None)

    def describe(self) -> str:
        if self.composition == "zcdp":
            return f"rho={self.rho!r}"
        text = f"epsilon={self.epsilon!r}, delta={self.delta!r}"
        if self.delta_prime is not None:
            text += f", delta_prime={self.delta_prime!r}"
        return text
