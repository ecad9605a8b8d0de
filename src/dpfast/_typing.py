"""Type aliases and protocols shared by dpfast's annotations (no run-time behaviour).

Public parameters are annotated with the widest type dpfast accepts and validates
exactly; private data with ``numpy.typing.ArrayLike``; results with precise types.
"""

from __future__ import annotations

from decimal import Decimal
from fractions import Fraction
from typing import Any, TypeAlias

import numpy as np
import numpy.typing as npt

from ._privacy import Budget, Rng

__all__ = [
    "Real",
    "PrivacyParam",
    "RngLike",
    "SupportsSpend",
    "F64Array",
    "I64Array",
    "BoolArray",
]

#: A public real parameter (threshold, sensitivity, bounds): every ``numbers.Real``
#: dpfast converts exactly (``float`` covers ``int`` for a type checker).
Real: TypeAlias = float | Fraction | np.floating[Any] | np.integer[Any]
#: epsilon and delta: a real number, or a ``Decimal`` taken as the exact value it spells.
PrivacyParam: TypeAlias = Real | Decimal
#: ``rng=`` (:data:`dpfast._privacy.Rng`, its one definition).
RngLike: TypeAlias = Rng

F64Array: TypeAlias = npt.NDArray[np.float64]
I64Array: TypeAlias = npt.NDArray[np.int64]
BoolArray: TypeAlias = npt.NDArray[np.bool_]


#: What ``budget=`` needs (:class:`dpfast._privacy.Budget`, its one definition).
SupportsSpend = Budget
