"""Type aliases shared by dpfast.query_release's annotations."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from .._privacy import Budget as _Budget
from .._privacy import Rng as _Rng

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
#: None, a dpfast ChaCha20, a numpy BitGenerator or Generator (dpfast._privacy.Rng)
Rng = _Rng
#: None or anything with ``spend(epsilon, delta, *, label=None)`` (dpfast._privacy.Budget)
Budget = _Budget | None
