"""The privacy budget (a privacy filter) with reserve/commit/rollback and an immutable ledger.

Mechanisms call :meth:`PrivacyBudget.spend` *before* they draw noise, so an overspending
request is refused while nothing has been released yet.
"""

from __future__ import annotations

import dataclasses
import math
import threading
from fractions import Fraction
from typing import NamedTuple

from .. import _validation as _v
from .._errors import BudgetExceededError, PrivacyParameterError
from ._numeric import _fraction_to_float_down, _fraction_to_float_up, _up
from .zcdp import zcdp_budget


class PrivacyAmount(NamedTuple):
    """An amount of privacy budget: (epsilon, delta) in "basic"/"advanced" mode, rho in
    "zcdp" mode (the fields that do not apply are ``None``)."""

    epsilon: float | None
    delta: float | None
    rho: float | None = None


@dataclasses.dataclass(frozen=True, slots=True)
class LedgerEntry:
    """One immutable line of a :class:`PrivacyBudget` ledger.

    ``status`` is "spent" (a direct charge), "reserved", "committed" or "rolled_back";
    a settled reservation replaces its "reserved" line by a new entry with the same
    ``index``.  ``rho`` is set in "zcdp" mode only; a :meth:`PrivacyBudget.spend_rho`
    line has ``epsilon == delta == 0.0`` and its cost in ``rho``.
    """

    index: int
    label: str | None
    epsilon: float
    delta: float
    rho: float | None
    status: str


@dataclasses.dataclass(frozen=True, slots=True, eq=False)
class Reservation:
    """A charge held by :meth:`PrivacyBudget.reserve` until it is committed or rolled back."""

    index: int
    label: str | None
    epsilon: float
    delta: float
    rho: float | None
    _owner: object = dataclasses.field(repr=False, compare=False)


def _exact(name, value, check):
    """Validate with the shared helper, then keep the value exactly (a Fraction or int
    stays exact; a float becomes the Fraction of its binary value)."""
    f = check(name, value)
    if isinstance(value, (Fraction, int)) and not isinstance(value, bool):
        return f, Fraction(value)
    return f, Fraction(f)


def _label(label):
    if label is not None and not isinstance(label, str):
        raise TypeError(f"label must be a str or None; got {type(label).__name__} {label!r}")
    return label


class PrivacyBudget:
    """A thread-safe privacy budget (a privacy *filter*) with an immutable ledger.

    Mechanisms call :meth:`spend` (or :meth:`reserve` then :meth:`commit`) *before*
    drawing noise; a charge that would take the total over the budget raises
    :class:`~dpfast.BudgetExceededError` and records nothing.

    Parameters
    ----------
    epsilon : float or Fraction, optional
        Total epsilon > 0 ("basic", "advanced"; "zcdp" when ``rho`` is not given).
    delta : float or Fraction, default 0.0
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

    Arithmetic is exact: every amount is kept as the :class:`~fractions.Fraction` of the
    float (or Fraction) passed in.  A float such as 1e-4 is slightly larger than 1/10^4,
    so 10,000 charges of ``1e-4`` exceed a budget of ``1.0`` and the 10,000th is refused;
    pass ``Fraction(1, 10_000)`` to charge exactly a ten-thousandth.  Reserved amounts
    count as spent until rolled back.  Every method takes one lock, so concurrent
    charges can never overspend.

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
    >>> budget = PrivacyBudget(1.0)
    >>> budget.spend(0.25, label="count")          # doctest: +ELLIPSIS
    LedgerEntry(index=0, label='count', epsilon=0.25, ...)
    >>> r = budget.reserve(0.5)
    >>> budget.commit(r)                             # doctest: +ELLIPSIS
    LedgerEntry(index=1, ...)
    >>> budget.remaining
    PrivacyAmount(epsilon=0.25, delta=0.0, rho=None)
    """

    def __init__(self, epsilon=None, delta=0.0, composition="basic", *, delta_prime=None, rho=None):
        self.composition = _v.choice("composition", composition, ("basic", "advanced", "zcdp"))
        self._lock = threading.Lock()
        self._ledger: list[LedgerEntry] = []
        self._active: dict[int, Reservation] = {}
        self._eps = Fraction(0)  # sum eps_i
        self._delta = Fraction(0)  # sum delta_i
        self._sq = Fraction(0)  # sum eps_i^2 (advanced)
        self._drift = Fraction(0)  # sum of upward-rounded eps_i (e^eps_i - 1) (advanced)
        self._rho = Fraction(0)  # sum rho_i (zcdp)
        self.epsilon = self.delta = self.delta_prime = self.rho = None
        if self.composition == "zcdp":
            if delta_prime is not None:
                raise PrivacyParameterError("delta_prime applies to composition='advanced' only; got "
                                            f"{delta_prime!r}")
            if rho is not None:
                if epsilon is not None:
                    raise PrivacyParameterError("give either rho or epsilon (with delta) for a zcdp budget, not both")
                if delta != 0.0:
                    raise PrivacyParameterError(f"delta must be 0 when the zcdp budget is given as rho; got {delta!r}")
                self.rho, self._rho_budget = _exact("rho", rho, _v.positive)
            else:
                if epsilon is None:
                    raise PrivacyParameterError("a zcdp budget needs rho, or epsilon and delta; got neither")
                self.epsilon = _v.positive("epsilon", epsilon)
                self.delta = _v.delta(delta, allow_zero=False)
                self.rho = zcdp_budget(self.epsilon, self.delta)
                self._rho_budget = Fraction(self.rho)
            return
        if rho is not None:
            raise PrivacyParameterError(f"rho applies to composition='zcdp' only; got {rho!r}")
        if epsilon is None:
            raise PrivacyParameterError(f"epsilon is required for composition={self.composition!r}; got None")
        self.epsilon, self._eps_budget = _exact("epsilon", epsilon, _v.positive)
        if self.composition == "basic":
            if delta_prime is not None:
                raise PrivacyParameterError("delta_prime applies to composition='advanced' only; got "
                                            f"{delta_prime!r}")
            self.delta, self._delta_budget = _exact("delta", delta, lambda n, x: _v.delta(x, n))
            return
        # advanced
        self.delta, delta_budget = _exact("delta", delta, lambda n, x: _v.delta(x, n, allow_zero=False))
        if delta_prime is None:
            raise PrivacyParameterError("delta_prime is required for composition='advanced'; got None")
        self.delta_prime, dp_exact = _exact("delta_prime", delta_prime, lambda n, x: _v.delta(x, n, allow_zero=False))
        if dp_exact > delta_budget:
            raise PrivacyParameterError(f"delta_prime must be <= delta ({self.delta!r}); got {delta_prime!r}")
        self._delta_budget = delta_budget - dp_exact
        # 2 ln(1/delta'), rounded up (log is within 1 ulp; the doubling is exact).
        self._two_log_inv = _up(2.0 * -math.log(self.delta_prime))

    # ---- internal accounting (call with the lock held) --------------------------------

    def _advanced_bound(self, sq, drift):
        """Upper bound on sqrt(2 ln(1/delta') sq) + drift, as a Fraction."""
        inner = _up(self._two_log_inv * _fraction_to_float_up(sq))
        return Fraction(_up(math.sqrt(inner))) + drift

    def _charge(self, eps, dlt, rho_f, sign=1):
        """The totals after adding (sign=+1) or removing (-1) a charge."""
        if self.composition == "zcdp":
            return (self._rho + sign * rho_f,)
        new = [self._eps + sign * eps, self._delta + sign * dlt]
        if self.composition == "advanced":
            new.append(self._sq + sign * eps * eps)
            new.append(self._drift + sign * self._drift_term(eps))
        return tuple(new)

    @staticmethod
    def _drift_term(eps):
        # eps (e^eps - 1) rounded up: expm1 and the product are each within 1 ulp.
        e = float(eps)
        return Fraction(_up(e * math.expm1(e)))

    def _within(self, totals):
        if self.composition == "zcdp":
            return totals[0] <= self._rho_budget
        if totals[1] > self._delta_budget:
            return False
        if totals[0] <= self._eps_budget:
            return True
        if self.composition == "advanced":
            return self._advanced_bound(totals[2], totals[3]) <= self._eps_budget
        return False

    def _store(self, totals):
        if self.composition == "zcdp":
            (self._rho,) = totals
            return
        self._eps, self._delta = totals[0], totals[1]
        if self.composition == "advanced":
            self._sq, self._drift = totals[2], totals[3]

    def _convert(self, epsilon, delta, rho):
        """Validate one charge; return floats and exact values (eps, delta, rho)."""
        if rho is not None:
            if self.composition != "zcdp":
                raise ValueError("spend_rho/reserve_rho need composition='zcdp'; this budget is "
                                 f"{self.composition!r}")
            rho_f, rho_x = _exact("rho", rho, _v.nonnegative)
            return 0.0, 0.0, rho_f, Fraction(0), Fraction(0), rho_x
        eps_f, eps_x = _exact("epsilon", epsilon, _v.nonnegative)
        dlt_f, dlt_x = _exact("delta", delta, lambda n, x: _v.delta(x, n))
        if self.composition == "zcdp":
            if dlt_x != 0:
                raise PrivacyParameterError(
                    "delta must be 0 for a charge against a zcdp budget (a pure epsilon-DP "
                    f"mechanism is epsilon^2/2-zCDP); got {delta!r}; use spend_rho for other mechanisms"
                )
            rho_x = eps_x * eps_x / 2
            return eps_f, 0.0, _fraction_to_float_up(rho_x), eps_x, dlt_x, rho_x
        return eps_f, dlt_f, None, eps_x, dlt_x, None

    def _admit(self, epsilon, delta, rho, label, status):
        eps_f, dlt_f, rho_f, eps_x, dlt_x, rho_x = self._convert(epsilon, delta, rho)
        label = _label(label)
        with self._lock:
            totals = self._charge(eps_x, dlt_x, rho_x)
            if not self._within(totals):
                what = f"rho={rho_f!r}" if rho is not None else f"epsilon={eps_f!r}, delta={dlt_f!r}"
                raise BudgetExceededError(
                    f"charge ({what}, label={label!r}) refused: it would exceed the budget; "
                    f"remaining {self._remaining_locked()}"
                )
            self._store(totals)
            entry = LedgerEntry(len(self._ledger), label, eps_f, dlt_f, rho_f, status)
            self._ledger.append(entry)
            if status == "reserved":
                res = Reservation(entry.index, label, eps_f, dlt_f, rho_f, (self, (eps_x, dlt_x, rho_x)))
                self._active[entry.index] = res
                return res
            return entry

    # ---- public API --------------------------------------------------------------------

    def spend(self, epsilon, delta=0.0, *, label=None):
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
            The charge would overspend; nothing was recorded.
        PrivacyParameterError, TypeError
            Invalid arguments; nothing was recorded.

        Privacy
        -------
        See the class docstring: the charge is admitted only if the composed total stays
        within the budget.
        """
        return self._admit(epsilon, delta, None, label, "spent")

    def spend_rho(self, rho, *, label=None):
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
        return self._admit(None, 0.0, rho, label, "spent")

    def reserve(self, epsilon, delta=0.0, *, label=None):
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
        return self._admit(epsilon, delta, None, label, "reserved")

    def reserve_rho(self, rho, *, label=None):
        """Like :meth:`reserve` for a rho-zCDP charge ("zcdp" mode only)."""
        return self._admit(None, 0.0, rho, label, "reserved")

    def _settle(self, reservation, status):
        if not isinstance(reservation, Reservation):
            raise TypeError(f"reservation must be a Reservation; got {type(reservation).__name__}")
        owner = reservation._owner
        if not isinstance(owner, tuple) or owner[0] is not self:
            raise ValueError("reservation belongs to another PrivacyBudget")
        eps_x, dlt_x, rho_x = owner[1]
        with self._lock:
            if self._active.pop(reservation.index, None) is None:
                raise RuntimeError(
                    f"reservation {reservation.index} was already settled "
                    f"({self._ledger[reservation.index].status})"
                )
            if status == "rolled_back":
                self._store(self._charge(eps_x, dlt_x, rho_x, sign=-1))
            old = self._ledger[reservation.index]
            entry = dataclasses.replace(old, status=status)
            self._ledger[reservation.index] = entry
            return entry

    def commit(self, reservation):
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

    def rollback(self, reservation):
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

    def can_spend(self, epsilon, delta=0.0):
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
        eps_f, dlt_f, rho_f, eps_x, dlt_x, rho_x = self._convert(epsilon, delta, None)
        with self._lock:
            return self._within(self._charge(eps_x, dlt_x, rho_x))

    def can_spend_rho(self, rho):
        """Whether :meth:`spend_rho` would succeed right now ("zcdp" mode)."""
        *_, rho_x = self._convert(None, 0.0, rho)
        with self._lock:
            return self._within(self._charge(0, 0, rho_x))

    def _spent_locked(self):
        if self.composition == "zcdp":
            return PrivacyAmount(None, None, _fraction_to_float_up(self._rho))
        eps = self._eps
        dlt = self._delta
        if self.composition == "advanced" and self._sq > 0:
            adv = self._advanced_bound(self._sq, self._drift)
            if adv < eps:  # the advanced bound is the better one: it costs delta'
                eps, dlt = adv, dlt + Fraction(self.delta_prime)
        return PrivacyAmount(_fraction_to_float_up(eps), _fraction_to_float_up(dlt), None)

    def _remaining_locked(self):
        if self.composition == "zcdp":
            return PrivacyAmount(None, None, _fraction_to_float_down(max(Fraction(0), self._rho_budget - self._rho)))
        spent = self._spent_locked()
        eps = max(Fraction(0), self._eps_budget - Fraction(spent.epsilon))
        dlt = self._delta_budget - self._delta  # in "advanced" mode delta' is already set aside
        return PrivacyAmount(_fraction_to_float_down(eps), _fraction_to_float_down(max(Fraction(0), dlt)), None)

    @property
    def spent(self):
        """The composed total of all non-rolled-back charges, rounded up.

        "basic": (sum eps_i, sum delta_i).  "advanced": (min(sum eps_i, advanced bound),
        sum delta_i + delta_prime).  "zcdp": rho = sum rho_i."""
        with self._lock:
            return self._spent_locked()

    @property
    def remaining(self):
        """Budget minus :attr:`spent`, rounded down.  In "advanced" mode epsilon is not
        additive: use :meth:`can_spend` to test a charge.  ``delta`` excludes delta_prime."""
        with self._lock:
            return self._remaining_locked()

    @property
    def ledger(self):
        """A copy of the ledger: a list of immutable :class:`LedgerEntry`, oldest first."""
        with self._lock:
            return list(self._ledger)

    def __repr__(self):
        if self.composition == "zcdp":
            budget = f"rho={self.rho!r}"
        else:
            budget = f"epsilon={self.epsilon!r}, delta={self.delta!r}"
            if self.delta_prime is not None:
                budget += f", delta_prime={self.delta_prime!r}"
        return f"PrivacyBudget({budget}, composition={self.composition!r}, spent={self.spent})"
