"""Type aliases shared by dpfast.release's annotations."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
#: None, a dpfast ChaCha20, a numpy BitGenerator or Generator (dpfast._core.resolve_rng)
Rng = Any
#: None or anything with ``spend(epsilon, delta, *, label=None)``
Budget = Any
