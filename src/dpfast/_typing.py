"""Type aliases and protocols shared by dpfast's annotations (no run-time behaviour).

Public parameters are annotated with the widest type dpfast accepts and validates
exactly; private data with ``numpy.typing.ArrayLike``; results with precise types.
"""

from __future__ import annotations

from decimal import Decimal
from fractions import Fraction
from typing import Any, Protocol, TypeAlias

import numpy as np
import numpy.typing as npt
from numpy.random import BitGenerator, Generator

__all__ = ["Real", "PrivacyParam", "RngLike", "SupportsSpend", "F64Array", "I64Array",
           "BoolArray"]

#: A public real parameter (threshold, sensitivity, bounds): every ``numbers.Real``
#: dpfast converts exactly (``float`` covers ``int`` for a type checker).
Real: TypeAlias = float | Fraction | np.floating[Any] | np.integer[Any]
#: epsilon and delta: a real number, or a ``Decimal`` taken as the exact value it spells.
PrivacyParam: TypeAlias = Real | Decimal
#: ``rng=``: ``None`` (the calling thread's OS-keyed ChaCha20), a numpy BitGenerator
#: (dpfast's ChaCha20 is one) or a numpy Generator.
RngLike: TypeAlias = None | BitGenerator | Generator

F64Array: TypeAlias = npt.NDArray[np.float64]
I64Array: TypeAlias = npt.NDArray[np.int64]
BoolArray: TypeAlias = npt.NDArray[np.bool_]


class SupportsSpend(Protocol):
    """What ``budget=`` needs: :class:`dpfast.accounting.PrivacyBudget`, a ledger budget,
    or any object with this method (it raises to refuse a charge)."""

    # epsilon and delta as the caller gave them (float, Fraction, Decimal: budgets add
    # exact values), so Any here: any implementation's own parameter types match.
    def spend(self, epsilon: Any, delta: Any = ..., *, label: str | None = ...) -> object: ...
