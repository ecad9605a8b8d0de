"""dpfast.selection.exponential_mechanism_draws (the k draws of Boosting for Queries):
the same draws as k calls of exponential_mechanism on the same generator."""

import numpy as np
import pytest

import dpfast
import dpfast.random as dr
from dpfast import selection as sel


@pytest.mark.parametrize("mode", ["secure", "fast"])
@pytest.mark.parametrize(
    "scores", [np.array([0.5, -3.0, 2.25, 1.0]), np.array([3, 0, 7, 7], dtype=np.int64)]
)
def test_draws_equal_separate_calls(mode, scores):
    a = sel.exponential_mechanism_draws(
        scores, 50, epsilon=0.7, sensitivity=2.0, rng=dr.ChaCha20(9), mode=mode
    )
    g = dr.ChaCha20(9)
    b = [
        sel.exponential_mechanism(scores, epsilon=0.7, sensitivity=2.0, rng=g, mode=mode)
        for _ in range(50)
    ]
    assert a.dtype == np.int64 and a.tolist() == b


def test_draws_validate_first():
    with pytest.raises(dpfast.PrivacyParameterError):
        sel.exponential_mechanism_draws([1.0, np.nan], 3, epsilon=1.0)
    with pytest.raises(dpfast.PrivacyParameterError):
        sel.exponential_mechanism_draws([1.0, 2.0], -1, epsilon=1.0)
    with pytest.raises(dpfast.PrivacyParameterError):
        sel.exponential_mechanism_draws([1.0, 2.0], 3, epsilon=0.0)
    assert sel.exponential_mechanism_draws([1.0], 0, epsilon=1.0).shape == (0,)
    assert "exponential_mechanism_draws" not in sel.__all__
