"""The privacy budget (a privacy filter): a composition rule and a store.

Mechanisms call :meth:`PrivacyBudget.spend` *before* they draw noise, so an overspending
request is refused while nothing has been released yet.  A budget is two parts:

* its *rule* (:class:`~dpfast.accounting.rules.Filter`): the caps and the composition
  rule, pure arithmetic on a *state* of exact totals (the mathematics, in
  :mod:`dpfast.accounting.rules`);
* its *store* (:class:`BudgetStore`): where the state and the ledger live, and the one
  atomic step in which the rule admits a charge.  :class:`MemoryStore` keeps them in
  this process under a lock; the stores of :mod:`dpfast.ledger` keep them in a SQLite or
  PostgreSQL row and admit each charge in one transaction.

Every budget, in memory or in a ledger, is the one class :class:`PrivacyBudget`:
``PrivacyBudget(epsilon, ...)`` builds a rule and a memory store,
:meth:`PrivacyBudget.with_store` joins a rule to any store (as
:meth:`dpfast.ledger.Ledger.budget` does).  The rule decides whether a charge fits and
what the total is; the store only keeps what the rule computed.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import os
import threading
from collections.abc import Iterable, Sequence
from fractions import Fraction
from typing import Any, NamedTuple, NoReturn, Protocol, TypeVar, cast

from .._active import activate as _activate
from .._errors import BudgetExceededError, PrivacyParameterError
from .._privacy import Cost
from .rules import (  # noqa: F401 - UNIT, LEGACY_FACTOR, exact_amount, scale, unscale: this module's names before the rules moved
    LEGACY_FACTOR,
    UNIT,
    Amounts,
    Filter,
    State,
    cached_scaled,
    exact_amount,
    scale,
    scaled_float,
    unscale,
)

_INF = math.inf

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


def _label(label: object) -> str | None:
    if label is not None and not isinstance(label, str):
        raise TypeError(
            f"label must be a str or None; got {type(label).__name__} {label!r}"
        )
    return label


# ---- stores -------------------------------------------------------------------------------


class Charge(NamedTuple):
    """One validated charge, as a :class:`BudgetStore` admits it."""

    cost: State  # the increment of the rule's state
    amounts: Amounts  # exact (epsilon, delta, rho)
    label: str | None
    epsilon: float  # for display (the ledger line)
    delta: float
    rho: float | None
    is_rho: bool  # charged as rho (spend_rho, reserve_rho)


_B = TypeVar("_B", bound="PrivacyBudget")


class BudgetStore(Protocol):
    """Where a :class:`PrivacyBudget` keeps its state and ledger.

    A store never decides: :meth:`admit` asks the rule (``rule.admit(state, cost)``) for
    each charge inside one atomic step (a lock, a database transaction) and keeps the
    state it returns, all charges or none.
    """

    #: The message of the ValueError for a reservation of another budget.
    foreign: str

    def check_process(self) -> None:
        """Raise if this process may not charge the store (before any validation)."""

    def admit(
        self, rule: Filter, charges: Sequence[Charge], status: str
    ) -> list[LedgerEntry]:
        """Admit every charge or none (raise :func:`refusal` for the first that does not
        fit); record each with ``status`` ("spent" or "reserved"); return their lines."""

    def settle(self, reservation: Reservation, cost: State, status: str) -> LedgerEntry:
        """Commit ("committed") or roll back ("rolled_back", giving ``cost`` back) an open
        reservation of this store; return its updated ledger line."""

    def state(self) -> State:
        """The current state (a snapshot)."""

    def entries(self) -> list[LedgerEntry]:
        """The ledger lines, oldest first."""

    def same(self, other: object) -> bool:
        """Whether ``other`` stores the same budget as this store."""

    def reduce(self) -> tuple[Any, ...]:
        """``__reduce__`` of a budget on this store (or raise ``TypeError``)."""


def refusal(
    rule: Filter, where: str, charges: Sequence[Charge], state: State, i: int
) -> BudgetExceededError:
    """The error of a store that cannot admit ``charges[i]`` on ``state``: names the
    charge, the budget (``where``, in a ledger), and what remains."""
    c = charges[i]
    what = f"rho={c.rho!r}" if c.is_rho else f"epsilon={c.epsilon!r}, delta={c.delta!r}"
    extra = (
        f" (charge {i + 1} of {len(charges)}; none of them was recorded)"
        if len(charges) > 1
        else ""
    )
    return BudgetExceededError(
        f"charge ({what}, label={c.label!r}){where} refused: it would exceed "
        f"the budget{extra}; remaining {PrivacyAmount(*rule.remaining(state))}"
    )


class MemoryStore:
    """A budget's state and ledger in this process's memory, under one lock.

    It belongs to the process that created it: a copy in a forked child refuses every
    charge and pickling refuses (each copy would spend the whole budget).
    """

    foreign = "reservation belongs to another PrivacyBudget"
    __slots__ = ("_state", "_ledger", "_open", "_lock", "_fork_gen")

    def __init__(self, state: State) -> None:
        self._state = state
        self._ledger: list[LedgerEntry] = []
        self._open: set[int] = set()  # indices of unsettled reservations
        self._lock = threading.Lock()
        self._fork_gen = _FORK[0]

    def check_process(self) -> None:
        # Each forked copy of an in-memory budget would spend the whole remaining budget
        # (a review saw 4 workers and the parent spend epsilon = 5 from a budget of 1).
        if self._fork_gen != _FORK[0]:
            raise BudgetExceededError(
                "this PrivacyBudget was created in another process: a forked copy never "
                "spends (every copy would spend the same budget); use a shared ledger, "
                "dpfast.ledger.open('sqlite:///path.db').budget(key, ...), in every process"
            )

    def spend_basic(
        self, rule: Filter, epsilon: float, delta: float, label: str | None
    ) -> LedgerEntry | None:
        """The common charge inlined ("basic" rule, float amounts already range-checked):
        the same steps as :meth:`admit` with ``Filter.cost`` and the basic admission;
        ``None`` where the general path must decide (another process, or a refusal)."""
        if self._fork_gen != _FORK[0]:
            return None
        ce = cached_scaled(epsilon)  # each float charges the decimal it prints as
        if ce is None:
            ce = scaled_float(epsilon)
        cd = (cached_scaled(delta) or scaled_float(delta)) if delta else 0
        with self._lock:
            e, dl = self._state
            e += ce
            dl += cd
            if e <= rule.eps_cap and dl <= rule.delta_cap:
                self._state = (e, dl)
                entry = LedgerEntry(len(self._ledger), label, epsilon, delta, None, "spent")
                self._ledger.append(entry)
                return entry
        return None

    def admit(
        self, rule: Filter, charges: Sequence[Charge], status: str
    ) -> list[LedgerEntry]:
        with self._lock:
            state = self._state
            for i, c in enumerate(charges):
                new = rule.admit(state, c.cost)
                if new is None:
                    raise refusal(rule, "", charges, state, i)
                state = new
            self._state = state
            out = []
            for c in charges:
                entry = LedgerEntry(
                    len(self._ledger), c.label, c.epsilon, c.delta, c.rho, status
                )
                self._ledger.append(entry)
                if status == "reserved":
                    self._open.add(entry.index)
                out.append(entry)
            return out

    def settle(self, reservation: Reservation, cost: State, status: str) -> LedgerEntry:
        self.check_process()
        index = reservation.index
        with self._lock:
            if index not in self._open:
                raise RuntimeError(
                    f"reservation {index} was already settled ({self._ledger[index].status})"
                )
            self._open.discard(index)
            if status == "rolled_back":
                self._state = Filter.add(self._state, cost, -1)
            entry = self._ledger[index]._replace(status=status)
            self._ledger[index] = entry
            return entry

    def state(self) -> State:
        with self._lock:
            return self._state

    def entries(self) -> list[LedgerEntry]:
        with self._lock:
            return list(self._ledger)

    def same(self, other: object) -> bool:
        return other is self

    def reduce(self) -> NoReturn:
        raise TypeError(
            "an in-memory PrivacyBudget cannot be pickled or copied: the copy would spend "
            "the same budget again; share a ledger-backed budget (dpfast.ledger), which "
            "reconnects to its store when unpickled"
        )


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

    def __init__(
        self,
        epsilon: object = None,
        delta: object = 0.0,
        composition: str = "basic",
        *,
        delta_prime: object = None,
        rho: object = None,
    ) -> None:
        rule = Filter(epsilon, delta, composition, delta_prime=delta_prime, rho=rho)
        self._bind(rule, MemoryStore(rule.zero()))

    @classmethod
    def with_store(cls: type[_B], rule: Filter, store: BudgetStore) -> _B:
        """The budget of ``rule`` whose state and ledger live in ``store``.

        Parameters
        ----------
        rule : Filter
            The caps and composition rule (:class:`~dpfast.accounting.rules.Filter`).
        store : BudgetStore
            A :class:`MemoryStore` holding ``rule.zero()``, or a store of
            :mod:`dpfast.ledger` (which :meth:`dpfast.ledger.Ledger.budget` builds).

        Returns
        -------
        PrivacyBudget
            An instance of ``cls``, with every method of this class; the rule decides
            each charge, the store keeps it atomically.
        """
        budget = cls.__new__(cls)
        budget._bind(rule, store)
        return budget

    def _bind(self, rule: Filter, store: BudgetStore) -> None:
        self._rule = rule
        self._store = store
        self.composition = rule.composition
        self.epsilon, self.delta = rule.epsilon, rule.delta
        self.delta_prime, self.rho = rule.delta_prime, rule.rho
        # spend's inlined path: the memory store's "basic" rule only
        self._fast = (
            store.spend_basic
            if isinstance(store, MemoryStore) and rule.composition == "basic"
            else None
        )

    def __reduce__(self) -> tuple[Any, ...]:  # the store decides (memory: always raises)
        return self._store.reduce()

    # ---- charging: validate, let the store admit atomically ----------------------------

    def _charge(
        self, epsilon: object, delta: object, rho: object, label: object, status: str
    ) -> Any:
        """Validate one charge and have the store admit it; return its ledger line
        (status "spent") or its reservation (status "reserved")."""
        store, rule = self._store, self._rule
        store.check_process()
        eps_f, dlt_f, rho_f, amounts = rule.convert(epsilon, delta, rho)
        text = label if label is None or type(label) is str else _label(label)
        c = Charge(rule.cost(amounts), amounts, text, eps_f, dlt_f, rho_f, rho is not None)
        line = store.admit(rule, (c,), status)[0]
        if status == "reserved":
            return Reservation(
                line.index, c.label, c.epsilon, c.delta, c.rho, (self, c.cost)
            )
        return line

    def _charge_all(
        self, charges: Sequence[tuple[object, object, object, object]], status: str
    ) -> list[Any]:
        """:meth:`_charge` for several ``(epsilon, delta, rho, label)``, all or none."""
        store, rule = self._store, self._rule
        store.check_process()
        prepared = []
        for epsilon, delta, rho, label in charges:
            eps_f, dlt_f, rho_f, amounts = rule.convert(epsilon, delta, rho)
            prepared.append(
                Charge(
                    rule.cost(amounts),
                    amounts,
                    _label(label),
                    eps_f,
                    dlt_f,
                    rho_f,
                    rho is not None,
                )
            )
        lines = store.admit(rule, prepared, status)
        if status == "reserved":
            return [
                Reservation(e.index, c.label, c.epsilon, c.delta, c.rho, (self, c.cost))
                for e, c in zip(lines, prepared, strict=True)
            ]
        return lines

    def _settle(self, reservation: Reservation, status: str) -> LedgerEntry:
        if not isinstance(reservation, Reservation):
            raise TypeError(
                f"reservation must be a Reservation; got {type(reservation).__name__}"
            )
        owner = reservation._owner
        if (
            not isinstance(owner, tuple)
            or not isinstance(owner[0], PrivacyBudget)
            or not self._store.same(owner[0]._store)
        ):
            raise ValueError(self._store.foreign)
        return self._store.settle(reservation, owner[1], status)

    # ---- public API ---------------------------------------------------------------------

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

    def spend(
        self, epsilon: object, delta: object = 0.0, *, label: str | None = None
    ) -> LedgerEntry:
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
        if (
            self._fast is not None
            and type(epsilon) is float
            and type(delta) is float
            and 0.0 <= epsilon < _INF
            and 0.0 <= delta < 1.0
            and (label is None or type(label) is str)
        ):
            entry = self._fast(self._rule, epsilon, delta, label)
            if entry is not None:
                return entry
        return cast(LedgerEntry, self._charge(epsilon, delta, None, label, "spent"))

    def spend_parallel(
        self, charges: Iterable[object], *, label: str | None = None
    ) -> LedgerEntry:
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
                    raise TypeError(
                        f"each charge must be (epsilon, delta) or epsilon; got {c!r}"
                    )
                items.append((c[0], c[1]))
            else:
                items.append((c, 0.0))
        if not items:
            raise PrivacyParameterError(
                "spend_parallel needs at least one charge; got none"
            )
        eps, dlt = [], []
        for e, d in items:
            eps_x, dlt_x, _ = self._rule.convert(e, d, None)[3]
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
        return cast(LedgerEntry, self._charge(None, 0.0, rho, label, "spent"))

    def reserve(
        self, epsilon: object, delta: object = 0.0, *, label: str | None = None
    ) -> Reservation:
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
        return cast(Reservation, self._charge(epsilon, delta, None, label, "reserved"))

    def reserve_rho(self, rho: object, *, label: str | None = None) -> Reservation:
        """Like :meth:`reserve` for a rho-zCDP charge ("zcdp" mode only)."""
        return cast(Reservation, self._charge(None, 0.0, rho, label, "reserved"))

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
        *_, amounts = self._rule.convert(epsilon, delta, None)
        return self._rule.admit(self._store.state(), self._rule.cost(amounts)) is not None

    def can_spend_rho(self, rho: object) -> bool:
        """Whether :meth:`spend_rho` would succeed right now ("zcdp" mode)."""
        *_, amounts = self._rule.convert(None, 0.0, rho)
        return self._rule.admit(self._store.state(), self._rule.cost(amounts)) is not None

    @property
    def spent(self) -> PrivacyAmount:
        """The composed total of all non-rolled-back charges, rounded up.

        "basic": (sum eps_i, sum delta_i).  "advanced": (min(sum eps_i, advanced bound),
        sum delta_i + delta_prime).  "zcdp": rho = sum rho_i."""
        return PrivacyAmount(*self._rule.spent(self._store.state()))

    @property
    def remaining(self) -> PrivacyAmount:
        """Budget minus :attr:`spent`, rounded down.  In "advanced" mode epsilon is not
        additive: use :meth:`can_spend` to test a charge.  ``delta`` excludes delta_prime."""
        return PrivacyAmount(*self._rule.remaining(self._store.state()))

    @property
    def ledger(self) -> list[LedgerEntry]:
        """A copy of the ledger: a list of immutable :class:`LedgerEntry`, oldest first."""
        return self._store.entries()

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}({self._rule.describe()}, "
            f"composition={self.composition!r}, spent={self.spent})"
        )
