"""Typical user code of releases, mechanisms, mechanism objects and the budget, checked
by ``mypy --strict`` in tests/test_typing.py (never run).

Each ``assert_type`` states the result type a user should see: never ``Any``.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
from typing_extensions import assert_type

import dpfast
from dpfast import mechanisms, objects, stats
from dpfast.accounting import (
    EpsilonDelta,
    PrivacyAmount,
    PrivacyBudget,
    advanced_composition,
    basic_composition,
)
from dpfast.random import ChaCha20

rng = ChaCha20(7)
ages = np.array([31, 47, 25, 62, 38], dtype=np.int64)

# ---------------------------------------------------------------- releases under one budget

budget = PrivacyBudget(1.0, 1e-6)
n = stats.count(ages, epsilon=0.25, budget=budget)
assert_type(n, int | float)
avg = stats.mean(ages, lower=0.0, upper=100.0, epsilon=0.25, budget=budget)
assert_type(avg, float)
total = stats.sum(ages, lower=0.0, upper=100.0, epsilon=0.25, budget=budget)
assert_type(total, float)
hist, edges = stats.histogram(
    ages, bins=[0, 20, 40, 60, 80, 100], epsilon=0.25, budget=budget
)
assert_type(edges, npt.NDArray[np.float64])
assert_type(budget.remaining, PrivacyAmount)
assert_type(budget.spent, PrivacyAmount)
assert_type(budget.spend(0.1, 0.0, label="by hand"), dpfast.accounting.LedgerEntry)

# ---------------------------------------------------------------- mechanisms (functions)

# a mechanism returns what its input is: an int or a float, or an int64 or float64 array
released = mechanisms.laplace_mechanism(3.5, epsilon=1.0, rng=rng)
assert_type(released, mechanisms.Released)
noisy = mechanisms.laplace_mechanism(np.zeros(4), epsilon=1.0, rng=rng)
assert isinstance(noisy, np.ndarray)
assert_type(noisy.astype(np.float64), npt.NDArray[np.float64])
g = mechanisms.gaussian_mechanism(3.5, epsilon=1.0, delta=1e-6)
assert isinstance(g, float)
assert_type(g, float)
assert_type(mechanisms.geometric_mechanism(12, epsilon=1.0), mechanisms.Released)

# ---------------------------------------------------------------- mechanism objects

lap = objects.Laplace(1.0, sensitivity=1.0)
assert_type(lap.release(10.0), mechanisms.Released)  # same types as the function
x = lap.release(np.arange(3.0))
assert isinstance(x, np.ndarray)
gauss = objects.Gaussian(1.0, 1e-6, sensitivity=1.0)
y = gauss.release(10.0)
assert isinstance(y, float)
assert_type(y, float)

# ---------------------------------------------------------------- composition

assert_type(basic_composition([0.1] * 10), EpsilonDelta)
assert_type(advanced_composition(0.1, 0.0, 100, 1e-6), EpsilonDelta)
assert_type(basic_composition([0.1] * 10).epsilon, float)
