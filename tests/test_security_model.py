"""Issue 9: one test per finding of the adversarial review (each fails on the main of
that time).  The rules are in docs/security-model.md; tests/test_properties.py checks them
over generated inputs."""

import math
import signal
from decimal import Decimal
from fractions import Fraction

import numpy as np
import pytest

import dpfast
from dpfast import _validation as V
from dpfast import accuracy as A
from dpfast import mechanisms as M
from dpfast import random as dr
from dpfast import selection as S
from dpfast import sparse as SP
from dpfast import stats as R
from dpfast.randomized_response import kary_response

PPE = dpfast.PrivacyParameterError
SVT_KINDS = [
    lambda **kw: SP.AboveThreshold(1e9, epsilon=1.0, **kw),
    lambda **kw: SP.Sparse(1e9, cutoff=2, epsilon=1.0, **kw),
    lambda **kw: SP.NumericSparse(1e9, cutoff=2, epsilon=1.0, **kw),
]


def g(seed=1):
    return dr.ChaCha20(seed)


class Spy:
    def __init__(self):
        self.calls = []

    def spend(self, epsilon, delta=0.0, *, label=None):
        self.calls.append((epsilon, delta, label))


# ------------------------------------------------- critical: SVT integers above 2**53


@pytest.mark.parametrize("make", SVT_KINDS)
@pytest.mark.parametrize("mode", ["secure", "fast"])
@pytest.mark.parametrize("big", [2**53, 2**53 + 1, 2**63, 2**64 + 7, -(2**70)])
def test_svt_integer_values_beyond_2_53_are_answered(make, mode, big):
    # main: 2**53 answered, 2**53 + 1 raised PrivacyParameterError echoing the value
    s = make(mode=mode, rng=g())
    s.step(big)
    s2 = make(mode=mode, rng=g())
    s2.feed([1, big])
    s3 = make(mode=mode, rng=g())
    s3.feed(
        np.array(
            [1, max(min(big, 2**64 - 1), -(2**63))],
            dtype=np.uint64 if big >= 2**63 else np.int64,
        )
    )
    assert s.consumed == 1 and s2.consumed >= 1


def test_svt_integers_clamp_to_2_53_exactly():
    # the clamp is to the exact double 2**53, so 2**53 and anything larger give the same
    # answers from the same generator state
    a = SP.NumericSparse(0.0, cutoff=3, epsilon=1.0, rng=g(5), value_range=1e17)
    b = SP.NumericSparse(0.0, cutoff=3, epsilon=1.0, rng=g(5), value_range=1e17)
    ra = a.feed([2**53, 2**60, 10**30])
    rb = b.feed(np.array([2.0**53] * 3))
    assert np.array_equal(ra, rb)


@pytest.mark.parametrize("values", [[1, 2], [1, 2**63], [1, 2**64], [1, 2.5], [2**70, 0.5]])
def test_svt_list_handling_does_not_depend_on_magnitudes(values):
    # main: np.asarray chose int64 / uint64 / object from the magnitudes; object raised
    s = SP.AboveThreshold(1e9, epsilon=1.0, rng=g())
    assert s.feed(values).dtype == np.bool_


@pytest.mark.parametrize(
    "bad",
    [
        np.array([1.0], dtype=np.longdouble),
        [np.longdouble(1)],
        np.array([1.0], dtype=object),
        [Decimal(1)],
        [Fraction(1, 3)],
    ],
)
def test_svt_refuses_inexact_types_by_type(bad):
    s = SP.AboveThreshold(1e9, epsilon=1.0, rng=g())
    with pytest.raises(TypeError):
        s.feed(bad)
    assert s.consumed == 0


# ------------------------------------------------- critical: silent rounding before calibration


@pytest.mark.parametrize(
    "call",
    [
        lambda x: M.laplace_mechanism(x, epsilon=1.0),
        lambda x: M.gaussian_mechanism(x, epsilon=1.0, delta=1e-6),
        lambda x: V.float_array("x", x),
        lambda x: S.exponential_mechanism(np.atleast_1d(x), epsilon=1.0),
        lambda x: S.report_noisy_max(np.atleast_1d(x), epsilon=1.0),
        lambda x: SP.AboveThreshold(0.0, epsilon=1.0).step(x),
    ],
)
@pytest.mark.parametrize("value", [1.0, 2.0**60 + 128])
def test_longdouble_refused_by_type_whatever_the_value(call, value):
    # main: rounded to float64 (2**60 + 128 and 2**60 + 129 became 256 apart)
    with pytest.raises(TypeError, match="dtype|type"):
        call(np.longdouble(value))


def test_mixed_lists_convert_exactly_or_clamp():
    kind, arr = V.real_data("v", [2**60 + 1, 0.5])
    assert kind == "f" and arr[0] == 2.0**53  # clamped, never rounded
    kind, arr = V.real_data("v", [2**60 + 1, 3])
    assert kind == "i" and arr[0] == 2**60 + 1  # exact on the integer path
    kind, arr = V.real_data("v", [2**64, -(2**64)])
    assert kind == "i" and arr.tolist() == [2**63 - 1, -(2**63)]


# ------------------------------------------------- integer mechanisms never refuse a value


@pytest.mark.parametrize(
    "call",
    [
        lambda x: M.laplace_mechanism(x, epsilon=1.0, rng=g()),
        lambda x: M.geometric_mechanism(x, epsilon=1.0, rng=g()),
        lambda x: M.discrete_gaussian_mechanism(x, epsilon=1.0, delta=1e-6, rng=g()),
    ],
)
@pytest.mark.parametrize(
    "value", [2**63 - 1, 2**63, 2**64, -(2**63), -(2**63) - 1, 10**30, np.uint64(2**64 - 1)]
)
def test_integer_mechanisms_clamp_and_saturate(call, value):
    # main: OverflowError before drawing (outside int64) or after (value + noise)
    out = call(value)
    assert -(2**63) <= int(out) <= 2**63 - 1
    arr = call([value, 0])
    assert arr.dtype == np.int64


def test_uint64_scores_beyond_2_63_are_clamped():
    scores = np.array([2**64 - 1, 2**63, 0], dtype=np.uint64)
    for f in (S.exponential_mechanism, S.report_noisy_max, S.permute_and_flip):
        assert f(scores, epsilon=1.0, rng=g()) in (0, 1)


# ------------------------------------------------- one non-finite record policy


@pytest.mark.parametrize("mode", ["secure", "fast"])
def test_nan_records_are_dropped_everywhere(mode):
    kw = dict(lower=0.0, upper=10.0, epsilon=1.0, mode=mode)
    data, clean = [1.0, math.nan, 4.0, math.nan], [1.0, 4.0]
    assert R.sum(data, rng=g(), **kw) == R.sum(clean, rng=g(), **kw)
    assert R.mean(data, rng=g(), **kw) == R.mean(clean, rng=g(), **kw)
    assert R.quantile(data, 0.5, rng=g(), **kw) == R.quantile(clean, 0.5, rng=g(), **kw)
    h1, _ = R.histogram(data, 4, range=(0.0, 8.0), epsilon=1.0, rng=g(), mode=mode)
    h2, _ = R.histogram(clean, 4, range=(0.0, 8.0), epsilon=1.0, rng=g(), mode=mode)
    assert np.array_equal(h1, h2)


def test_infinite_records_are_clamped_or_outside_the_bins():
    kw = dict(lower=-2.0, upper=10.0, epsilon=1.0)
    assert R.sum([math.inf, -math.inf], rng=g(), **kw) == R.sum([10.0, -2.0], rng=g(), **kw)
    assert R.mean([math.inf, 1.0], rng=g(), **kw) == R.mean([10.0, 1.0], rng=g(), **kw)
    assert R.quantile([math.inf, 1.0], 0.5, rng=g(), **kw) == R.quantile(
        [1e300, 1.0], 0.5, rng=g(), **kw
    )
    h1, _ = R.histogram([math.inf, 1.0], 2, range=(0.0, 2.0), epsilon=1.0, rng=g())
    h2, _ = R.histogram([1.0], 2, range=(0.0, 2.0), epsilon=1.0, rng=g())
    assert np.array_equal(h1, h2)


# ------------------------------------------------- messages never echo private values


def _message(call):
    with pytest.raises(Exception) as info:
        call()
    return str(info.value)


def test_kary_response_codes_out_of_range_are_clamped_not_refused():
    # neighbouring respondents (an in-range code and an out-of-range one) are both answered
    for v in ([2, 1], [123457, 1], [-3, 1]):
        out = kary_response(v, 3, epsilon=1.0)
        assert out.shape == (2,) and ((0 <= out) & (out < 3)).all()


@pytest.mark.parametrize(
    "call",
    [
        lambda: SP.AboveThreshold(0.0, epsilon=1.0).feed([1.0, math.nan]),
        lambda: SP.AboveThreshold(0.0, epsilon=1.0).step(-math.inf),
        lambda: M.laplace_mechanism([1.0, math.inf], epsilon=1.0),
        lambda: M.gaussian_mechanism(math.nan, epsilon=1.0, delta=1e-6),
        lambda: S.exponential_mechanism([1.0, math.nan], epsilon=1.0),
        lambda: S.top_k([1.0, -math.inf, 2.0], 1, epsilon=1.0),
    ],
)
def test_nonfinite_private_values_are_not_echoed(call):
    msg = _message(call).lower()
    assert "nan" not in msg.replace("nan and", "") and "got inf" not in msg
    assert "got -inf" not in msg


# ------------------------------------------------- extreme public parameters


@pytest.mark.parametrize(
    "call, exc",
    [
        (
            lambda: SP.AboveThreshold(0.0, epsilon=1.0, sensitivity=5e-324).feed(
                [1.0, -1.0]
            ),
            None,
        ),
        (lambda: SP.Sparse(0.0, cutoff=2, epsilon=1.0, delta=5e-324).feed([1.0]), None),
        (
            lambda: (
                SP.NumericSparse(0.0, cutoff=2, epsilon=1.0, delta=5e-324).feed([1.0]).size
            ),
            None,
        ),
        (lambda: SP.AboveThreshold(0.0, epsilon=1.0, granularity=5e-324), PPE),
        (lambda: M.laplace_mechanism(1.0, epsilon=10**400), PPE),
        (lambda: M.laplace_mechanism(1.0, epsilon=1e308), None),
        (lambda: M.gaussian_mechanism(1.0, epsilon=1e308, delta=1e-6), None),
        (
            lambda: M.gaussian_mechanism(
                [1.0, 2.0], epsilon=1e308, delta=1e-6, mode="fast"
            ),
            None,
        ),
        (lambda: M.gaussian_mechanism(3, epsilon=1e308, delta=1e-6), None),
        (lambda: M.laplace_mechanism(1.0, epsilon=1.0, granularity=1e-300), PPE),
        (
            lambda: M.gaussian_mechanism(1.0, epsilon=1.0, delta=1e-6, granularity=1e-300),
            PPE,
        ),
        (lambda: R.histogram([1.0], 2**63, range=(0.0, 1.0), epsilon=1.0), PPE),
        (lambda: R.histogram([1.0], 2**40, range=(0.0, 1.0), epsilon=1.0), PPE),
        (lambda: R.histogram([1.0], 4, range=(-1e308, 1e308), epsilon=1.0), PPE),
        (lambda: A.randomized_response_error(5e-324, n=100, beta=0.05), PPE),
        (lambda: A.randomized_response_error(5e-324, n=100, beta=0.05, k=5), PPE),
        (lambda: dr.os_entropy(2**62), PPE),
        (lambda: dr.os_entropy(2**80), PPE),
        (lambda: dr.discrete_laplace(2**62, 3), PPE),
        (lambda: dr.geometric(2**62, 3), PPE),
    ],
)
def test_extreme_public_parameters(call, exc):
    if exc is None:
        out = call()
        assert np.all(np.isfinite(np.asarray(out, dtype=float)))
    else:
        with pytest.raises(exc):
            call()


@pytest.mark.parametrize(
    "call",
    [
        lambda b: M.laplace_mechanism(1.0, epsilon=1.0, budget=b),
        lambda b: M.laplace_mechanism([1, 2], epsilon=1.0, budget=b),
        lambda b: M.gaussian_mechanism(1.0, epsilon=1.0, delta=1e-6, budget=b),
        lambda b: S.exponential_mechanism([1.0, 2.0], epsilon=1.0, budget=b),
        lambda b: S.top_k([1.0, 2.0], 1, epsilon=1.0, budget=b),
        lambda b: R.count([1], epsilon=1.0, budget=b),
        lambda b: R.sum([1.0], lower=0.0, upper=1.0, epsilon=1.0, budget=b),
        lambda b: kary_response([1], 3, epsilon=1.0, budget=b),
        lambda b: dpfast.randomized_response.randomized_response(
            [True], epsilon=1.0, budget=b
        ),
        lambda b: SP.AboveThreshold(0.0, epsilon=1.0, budget=b),
    ],
)
def test_budget_without_spend_is_a_type_error(call):
    # main: AttributeError
    with pytest.raises(TypeError, match="budget"):
        call(object())


def test_uniform_over_the_whole_double_range_is_finite():
    # main: inf (high - low overflowed)
    x = dr.uniform(-1e308, 1e308, 10000, rng=g())
    assert np.isfinite(x).all() and (x < 1e308).all() and x.min() < -1e307 < 1e307 < x.max()
    assert math.isfinite(dr.uniform(-1.7e308, 1.7e308, rng=g()))


def test_discrete_laplace_scale_is_capped_where_int64_holds_the_law():
    assert dr.discrete_laplace(2**56, 10, rng=g()).dtype == np.int64
    with pytest.raises(PPE, match="2\\*\\*56"):
        dr.discrete_laplace(2**56 + 1, rng=g())


# ------------------------------------------------- validation gaps


def test_granularity_true_is_refused_after_one_in_a_cached_plan():
    M.laplace_mechanism(1.0, epsilon=1.0, granularity=1)
    with pytest.raises(TypeError):
        M.laplace_mechanism(1.0, epsilon=1.0, granularity=True)
    M.gaussian_mechanism(1.0, epsilon=1.0, delta=1e-6, granularity=1)
    with pytest.raises(TypeError):
        M.gaussian_mechanism(1.0, epsilon=1.0, delta=1e-6, granularity=True)


@pytest.mark.parametrize(
    "gran, exc", [("banana", TypeError), (math.nan, PPE), (-1.0, PPE), (True, TypeError)]
)
def test_granularity_is_validated_on_the_integer_path(gran, exc):
    with pytest.raises(exc):
        M.laplace_mechanism(3, epsilon=1.0, granularity=gran)
    with pytest.raises(exc):
        M.gaussian_mechanism(3, epsilon=1.0, delta=1e-6, granularity=gran)


def test_report_noisy_max_charges_an_upper_bound_of_the_sum():
    # 2**20 + 2**-34 rounds down to 2**20 in binary64: main charged 2**20
    for eps, veps in [(2.0**20, 2.0**-34), (0.1, 0.2), (3.0, 1e-9), (0.7, 0.1)]:
        spy = Spy()
        S.report_noisy_max(
            [1.0, 2.0],
            epsilon=eps,
            return_value=True,
            value_epsilon=veps,
            rng=g(),
            budget=spy,
        )
        charged = spy.calls[0][0]
        # decimal parameters (issue 14): the exact sum of the decimals, as a Fraction
        assert charged == Fraction(repr(eps)) + Fraction(repr(veps))


# ------------------------------------------------- ChaCha20 state pointer


def test_os_keyed_chacha_does_not_hand_out_its_state_address():
    with pytest.raises(TypeError, match="state address"):
        dr.ChaCha20().ctypes
    with pytest.raises(TypeError, match="state address"):
        dr.ChaCha20().cffi
    with pytest.raises(TypeError, match="state address"):
        dr.default_rng().ctypes
    assert dr.ChaCha20(7).ctypes.state_address != 0  # seeded: predictable by design
    # numpy's Generator still works on the OS-keyed generator (it uses the capsule)
    assert 0.0 <= np.random.Generator(dr.ChaCha20()).random() < 1.0


# ------------------------------------------------- NumericSparse value range


def test_numeric_sparse_value_range_is_public_and_chosen_by_the_user():
    s = SP.NumericSparse(0.0, cutoff=1, epsilon=1.0, rng=g())
    assert 2.19e12 < s.value_range < 2.2e12  # the default, documented
    assert s.step(1e13) < 2.3e12  # clamped, as documented
    s = SP.NumericSparse(0.0, cutoff=1, epsilon=1.0, rng=g(), value_range=1e14)
    assert s.value_range == 1e14
    assert abs(s.step(1e13) - 1e13) < 1e6
    s = SP.NumericSparse(0.0, cutoff=1, epsilon=1.0, rng=g(), value_range=10.0)
    assert abs(s.step(1e13) - 10.0) < 1e3  # a user's tighter clamp
    f = SP.NumericSparse(0.0, cutoff=1, epsilon=1.0, rng=g(), mode="fast", value_range=10.0)
    assert abs(f.step(1e13) - 10.0) < 1e3
    with pytest.raises(PPE, match="value_range"):
        SP.NumericSparse(0.0, cutoff=1, epsilon=1.0, granularity=2.0**-20, value_range=1e14)
    with pytest.raises(PPE, match="value_range"):
        SP.AboveThreshold(0.0, epsilon=1.0, value_range=math.inf)
    # the shared docstring no longer says that out-of-range values raise
    assert "or one beyond the secure grid's\n        range, raises" not in SP.Sparse.__doc__
    assert "clamped to :attr:`value_range`" in SP.Sparse.__doc__


# ------------------------------------------------- Ctrl-C
# (the secure top-k test lives in tests/test_sigint.py, with the other SIGINT tests)


@pytest.mark.skipif(not hasattr(signal, "setitimer"), reason="needs setitimer")
def test_ctrl_c_mid_feed_keeps_every_answer_once():
    n = 8 * 2**20  # eight slices of the C loop (main: one C call, no check)
    values = np.zeros(n)
    s = SP.Sparse(1e6, cutoff=5, epsilon=1.0, rng=g(3))
    ref = SP.Sparse(1e6, cutoff=5, epsilon=1.0, rng=g(3))

    fired = []

    def handler(signum, frame):
        # interrupt once, inside the batch: after a slice, before the last one
        if not fired and 0 < s.consumed < n:
            fired.append(True)
            raise KeyboardInterrupt

    old = signal.signal(signal.SIGALRM, handler)
    signal.setitimer(signal.ITIMER_REAL, 0.0005, 0.0005)
    try:
        got = s.feed(values)
    except KeyboardInterrupt as exc:
        got = exc.svt_answers
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0, 0)
        signal.signal(signal.SIGALRM, old)
    assert fired and 0 < got.size < n  # Ctrl-C was seen mid-batch...
    assert got.size % 2**20 == 0  # ...between two slices
    assert s.consumed == got.size
    assert np.array_equal(got, ref.feed(values[: got.size]))
    rest = s.feed(values[got.size : got.size + 1000])  # the stream goes on where it stopped
    assert s.consumed == got.size + rest.size == got.size + 1000


def test_shifted_exponential_mechanism_saturates_int64_gaps():
    # the gap 2**64 - 1 of an int64 score plus a test shift wrapped to a small gap on main
    # (P[1] = 0.5 instead of e^-2 / (e^-0.25 + e^-2) = 0.148 at gamma = 2**-63)
    from dpfast import _core

    scores = np.array([2**63 - 1, -(2**63)], dtype=np.int64)
    gen = g(2)
    ones = sum(_core.em_secure(scores, 1.0, 1, 63, gen, 2**61) for _ in range(4000))
    assert 0.12 < ones / 4000 < 0.18  # 6 standard deviations around 0.148
