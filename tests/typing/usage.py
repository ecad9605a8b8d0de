"""Typical user code, type-checked by ``mypy --strict`` in tests/test_typing.py (never run).

Each ``assert_type`` fails the check if the result is ``Any`` or less precise than a user
needs.  usage_releases.py holds the releases, mechanisms and objects.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
import numpy.typing as npt
from typing_extensions import assert_type

import dpfast
from dpfast import accounting, accuracy, grouped, randomized_response, selection, sparse
from dpfast.accounting import Accountant, EpsilonDelta, RDPConversion
from dpfast.random import ChaCha20, default_rng

# ---------------------------------------------------------------- the CSPRNG under numpy

gen = np.random.Generator(ChaCha20())
assert_type(gen.normal(0.0, 1.0, size=10), npt.NDArray[np.float64])
seeded = ChaCha20(20261126)
assert_type(seeded.mode, Literal["os", "seeded", "stream"])
assert_type(seeded.random_raw(), int)
assert_type(seeded.spawn(2), list[ChaCha20])
assert_type(default_rng(), ChaCha20)
keystream = ChaCha20(key=bytes(32), nonce=bytes(12), counter=1)
assert_type(keystream.random_raw(4), npt.NDArray[np.uint64])

# ---------------------------------------------------------------- the sparse vector technique

at = sparse.AboveThreshold(100.0, epsilon=0.5, rng=seeded)
answers = at.feed([3.0, 10.0, 250.0])
assert_type(answers, npt.NDArray[np.bool_])
assert_type(at.halted, bool)

stream = sparse.Sparse(50.0, cutoff=3, epsilon=1.0, delta=1e-6)
for value in (10.0, 75.0, 20.0, 90.0):
    if stream.halted:
        break
    above = stream.step(value)
    assert_type(above, bool)
assert_type(stream.privacy_cost, tuple[float, float])
assert_type(stream.remaining_positives, int)

numeric = sparse.NumericSparse(0.0, cutoff=2, epsilon=1.0, mode="fast")
assert_type(numeric.feed(np.arange(5.0)), npt.NDArray[np.float64])
assert_type(numeric.step(3.0), float)

# ---------------------------------------------------------------- selection

scores = np.array([3.0, 1.0, 4.0, 1.0, 5.0])
best = selection.exponential_mechanism(scores, epsilon=1.0, sensitivity=1.0, rng=gen)
assert_type(best, int)
assert_type(selection.permute_and_flip([1, 2, 3], epsilon=0.5), int)
assert_type(selection.report_noisy_max(scores, epsilon=1.0), int)
assert_type(
    selection.report_noisy_max(scores, epsilon=1.0, return_value=True), tuple[int, float]
)
assert_type(selection.top_k(scores, 2, epsilon=1.0), npt.NDArray[np.int64])

# ---------------------------------------------------------------- randomized response

assert_type(randomized_response.randomized_response(True, epsilon=1.0), bool)
reports = randomized_response.randomized_response([True, False, True], epsilon=1.0)
assert_type(reports, npt.NDArray[np.bool_])
assert_type(
    randomized_response.estimate_proportion(reports, epsilon=1.0), tuple[float, float]
)
codes = randomized_response.kary_response(np.array([0, 1, 2]), 3, epsilon=2.0)
assert_type(codes, npt.NDArray[np.int64])
assert_type(randomized_response.kary_response(1, 3, epsilon=2.0), int)

# ---------------------------------------------------------------- accounting

acc = Accountant("pld").compose_gaussian(sigma=5.0, count=100).compose_laplace(2.0)
assert_type(acc, Accountant)
assert_type(acc.epsilon(1e-5), float)
assert_type(acc.delta(1.0), float)
assert_type(accounting.calibrate_gaussian(1.0, 1e-5, count=10), float)
assert_type(accounting.zcdp_to_dp(accounting.gaussian_zcdp(3.0), 1e-6), float)
assert_type(accounting.optimal_composition(0.1, 0.0, 50, 1e-6), EpsilonDelta)
orders = accounting.DEFAULT_RDP_ORDERS
assert_type(accounting.rdp_to_dp(orders, accounting.rdp_gaussian(2.0), 1e-5), RDPConversion)
assert_type(
    accounting.pld_compose([(accounting.pld_laplace(1.0), 10)]).epsilon(1e-6), float
)
assert_type(accounting.max_releases_gaussian(10.0, 1.0, 1.0, 1e-6), int)
assert_type(accounting.gdp_to_dp(accounting.gdp_compose([0.5, 0.5]), 1e-5), float)

# ---------------------------------------------------------------- grouped releases

p_keep = grouped.partition_selection_probability(5, epsilon=1.0, delta=1e-6)
assert_type(p_keep, float)
assert_type(
    grouped.partition_selection_probability([1, 5, 50], epsilon=1.0, delta=1e-6),
    npt.NDArray[np.float64],
)
released = grouped.grouped_release(
    units=[1, 2, 2], keys=["a", "b", "b"], epsilon=1.0, delta=1e-6, max_partitions=1
)

# ---------------------------------------------------------------- accuracy

assert_type(accuracy.laplace_error(1.0, beta=0.05), float)
assert_type(accuracy.above_threshold_alpha(100, 0.05, epsilon=1.0), float)

# ---------------------------------------------------------------- errors

try:
    selection.exponential_mechanism(scores, epsilon=-1.0)
except dpfast.PrivacyParameterError as exc:
    assert_type(exc, dpfast.PrivacyParameterError)
