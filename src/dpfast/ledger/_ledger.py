"""A ledger: many keyed budgets in one store, and the operator's view of them."""

from __future__ import annotations

import json
import os
import socket
from typing import Any, Literal

import numpy as np

from .._errors import PrivacyParameterError
from .._typing import PrivacyParam
from ..accounting.budget import PrivacyAmount
from ..accounting.rules import Filter
from . import _chain, _schema1
from ._budget import KeyedStore, LedgerBudget, Reopen
from ._chain import open_reservations, params_text
from ._store import LedgerError, SQLStore
from ._verify import VerifyReport, verify_budget


def _check_key(key: object) -> str:
    if not isinstance(key, str):
        raise TypeError(f"key must be a str; got {type(key).__name__} {key!r}")
    if not 0 < len(key) <= 200 or not key.isprintable():
        raise PrivacyParameterError(
            f"key must be 1 to 200 printable characters; got {key!r}"
        )
    return key


class Ledger:
    """Keyed privacy budgets in one durable store; see :func:`dpfast.ledger.open`."""

    def __init__(self, store: SQLStore, *, reopen: Reopen | None = None) -> None:
        self._store = store
        self.url = store.url
        self._reopen = (
            reopen  # how an unpickled budget reconnects (from dpfast.ledger.open)
        )

    def budget(
        self,
        key: str,
        epsilon: PrivacyParam | None = None,
        delta: PrivacyParam = 0.0,
        rule: str = "basic",
        *,
        delta_prime: PrivacyParam | None = None,
        rho: PrivacyParam | None = None,
        create: bool = False,
    ) -> LedgerBudget:
        """Open budget ``key``, or create it (``create=True``) with these caps.

        Parameters
        ----------
        key : str
            The budget's name (per dataset, tenant, analyst...).
        epsilon, delta, rule, delta_prime, rho
            The caps and composition rule, as ``epsilon, delta, composition, delta_prime,
            rho`` of :class:`~dpfast.accounting.PrivacyBudget`.  Omit them all to open an
            existing budget with its stored caps.
        create : bool, default False
            Create the budget if it does not exist (create-or-open; many processes may
            race to create it, exactly one row results).

        Returns
        -------
        LedgerBudget

        Raises
        ------
        LedgerError
            No such budget (and ``create`` is false), or the store failed.
        PrivacyParameterError
            The caps given differ from the stored budget's, or are invalid.
        """
        _check_key(key)
        if epsilon is None and rho is None:
            if create:
                raise PrivacyParameterError(
                    f"creating budget {key!r} needs its caps (epsilon or rho)"
                )
            stored = self._store.params(key)
            if stored is None:
                raise LedgerError(
                    f"no budget {key!r} in {self.url!r} (create it with create=True and its caps)"
                )
        else:
            filt = Filter(epsilon, delta, rule, delta_prime=delta_prime, rho=rho)
            wanted = params_text(filt)
            stored = self._store.create(key, filt) if create else self._store.params(key)
            if stored is None:
                raise LedgerError(
                    f"no budget {key!r} in {self.url!r} (pass create=True to create it)"
                )
            if stored != wanted:
                legacy = _schema1.legacy_filter(epsilon, delta, rule, delta_prime, rho)
                if legacy is None or stored != params_text(legacy):
                    raise PrivacyParameterError(
                        f"budget {key!r} exists with other caps ({stored}); asked for {wanted}"
                    )
        return LedgerBudget.with_store(
            Filter.from_params(json.loads(stored)),
            KeyedStore(self._store, key, self._reopen),
        )

    def keys(self) -> list[str]:
        """The keys of every budget in this ledger, sorted."""
        return [row[0] for row in self._store.keys()]

    def summary(self) -> list[dict[str, Any]]:
        """One dict per budget: key, rule, caps, spent, remaining, rows, open reservations
        and the head hash of its history."""
        out = []
        for key, params, state_text, seq, head in self._store.keys():
            filt = Filter.from_params(json.loads(params))
            state = _chain.parse_state(state_text)
            out.append(
                {
                    "key": key,
                    "rule": filt.composition,
                    "caps": filt.describe(),
                    "spent": PrivacyAmount(*filt.spent(state)),
                    "remaining": PrivacyAmount(*filt.remaining(state)),
                    "rows": int(seq) + 1,
                    "head": head,
                }
            )
        return out

    def history(self, key: str) -> list[_chain.HistoryRow]:
        """The history of budget ``key`` (a list of :class:`HistoryRow`)."""
        rows, budget = self._store.history(_check_key(key))
        if budget is None:
            raise LedgerError(f"no budget {key!r} in {self.url!r}")
        return rows

    def verify(self, key: str | None = None) -> list[VerifyReport]:
        """Check the hash chain of each budget's history and replay it.

        For each budget: rows are numbered 0, 1, ... without gaps; each row's hash matches
        its contents and the previous row's hash; the budget row's head, count and
        parameters match the history; replaying the history through the budget's filter
        never exceeds the caps, each reservation is settled at most once, and ends at
        the stored state.  Returns a list of :class:`VerifyReport` (one per budget).
        """
        keys = self.keys() if key is None else [_check_key(key)]
        return [verify_budget(self._store, k) for k in keys]

    def release(
        self,
        key: str,
        seq: int,
        *,
        reason: str,
        force: bool = False,
    ) -> _chain.HistoryRow:
        """Give back an open reservation whose process died (an operator's decision).

        A reservation counts as spent until it is committed or rolled back; when the
        process that made it died, nothing settles it and it stays spent, which is the
        conservative outcome.  Release it only if nothing computed under it was released.
        Refused while its process is still running on this host, unless ``force``.
        Appends a "release" row (with ``reason``) and returns the reservation's row.
        """
        if isinstance(seq, (bool, np.bool_)) or not isinstance(seq, (int, np.integer)):
            raise TypeError(f"seq must be an int; got {type(seq).__name__}")
        seq = int(seq)
        if not isinstance(reason, str) or not reason.strip():
            raise PrivacyParameterError("release needs a reason (kept in the history)")
        rows = self.history(key)
        row = next((r for r in open_reservations(rows) if r.seq == seq), None)
        if row is None:
            raise LedgerError(f"budget {key!r} has no open reservation {seq}")
        if not force and row.host == socket.gethostname() and _alive(row.pid):
            raise LedgerError(
                f"reservation {seq} belongs to process {row.pid} on this host, "
                "which is still running; it may still commit (use force to override)"
            )
        return self._store.settle(key, seq, "release", note=reason)

    def close(self) -> None:
        self._store.close()

    def __enter__(self) -> Ledger:
        return self

    def __exit__(self, *exc: object) -> Literal[False]:
        self.close()
        return False

    def __repr__(self) -> str:
        return f"Ledger({self.url!r})"


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
