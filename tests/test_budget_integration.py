"""Every mechanism refuses bad parameters before it charges the budget (found by review:
some planned their grid or their released value only after charging)."""

import pytest

import dpfast
from dpfast import mechanisms as M
from dpfast import selection as S
from dpfast import stats as R
from dpfast.accounting import PrivacyBudget

CASES = [
    (
        "exponential mechanism, tiny sensitivity",
        lambda b: S.exponential_mechanism(
            [1.0, 2.0], epsilon=1.0, sensitivity=1e-300, budget=b
        ),
    ),
    (
        "top-k, tiny sensitivity",
        lambda b: S.top_k([1.0, 2.0], 1, epsilon=1.0, sensitivity=1e-300, budget=b),
    ),
    (
        "noisy max, released value with an infinite scale",
        lambda b: S.report_noisy_max(
            [1.0, 2.0],
            epsilon=1.0,
            return_value=True,
            value_epsilon=1e-300,
            sensitivity=1e10,
            budget=b,
        ),
    ),
    (
        "noisy max, integer released value with a huge scale",
        lambda b: S.report_noisy_max(
            [1, 2], epsilon=1.0, return_value=True, value_epsilon=1e-17, budget=b
        ),
    ),
    (
        "fast Laplace, infinite scale",
        lambda b: M.laplace_mechanism(
            1.0, epsilon=1e-300, sensitivity=1e10, mode="fast", budget=b
        ),
    ),
    (
        "secure Laplace, infinite scale",
        lambda b: M.laplace_mechanism(1.0, epsilon=1e-300, sensitivity=1e10, budget=b),
    ),
    (
        "fast Gaussian, infinite scale",
        lambda b: M.gaussian_mechanism(
            1.0, epsilon=1e-300, delta=1e-5, l2_sensitivity=1e10, mode="fast", budget=b
        ),
    ),
    (
        "sum, bounds below the smallest grid",
        lambda b: R.sum([0.0], lower=0.0, upper=1e-315, epsilon=1.0, budget=b),
    ),
    (
        "mean, bounds below the smallest grid",
        lambda b: R.mean([0.0], lower=0.0, upper=1e-315, epsilon=1.0, budget=b),
    ),
]


@pytest.mark.parametrize("name, call", CASES, ids=[c[0] for c in CASES])
def test_refused_parameters_spend_nothing(name, call):
    budget = PrivacyBudget(100.0, 0.5)
    with pytest.raises(dpfast.PrivacyParameterError):
        call(budget)
    assert budget.spent.epsilon == 0 and budget.spent.delta == 0
    assert budget.ledger == []
