# Type stubs for the compiled Cython layer (dpfast/_core.pyx and its .pxi parts).
#
# Every name the Python modules and the tests use is declared here with its real types:
# there is deliberately no module-level ``__getattr__``, so a kernel added to the Cython
# layer without a stub is a mypy error in the module that calls it.
from collections.abc import Mapping
from typing import Any, Final, Literal, overload

import numpy as np
import numpy.typing as npt
from numpy.random import BitGenerator, Generator, SeedSequence

_Rng = None | BitGenerator | Generator
_Size = None | int | tuple[int, ...]
_F64 = npt.NDArray[np.float64]
_I64 = npt.NDArray[np.int64]
_U8 = npt.NDArray[np.uint8]
_Impl = Literal["best", "scalar", "sse2", "neon", "avx2", "avx512"]

# ------------------------------------------------------------------ ChaCha20 (_core.pyx)

class ChaCha20(BitGenerator):
    def __init__(
        self,
        seed: None
        | int
        | np.integer[Any]
        | bytes
        | bytearray
        | memoryview
        | SeedSequence = ...,
        *,
        key: bytes | bytearray | memoryview | None = ...,
        nonce: bytes | bytearray | memoryview | None = ...,
        counter: int | None = ...,
    ) -> None: ...
    @property
    def mode(self) -> Literal["os", "seeded", "stream"]: ...
    @property
    def simd(self) -> str: ...
    # random_raw: inherited from numpy's BitGenerator (the same overloads).
    @property
    def state(self) -> dict[str, Any]: ...
    @state.setter
    def state(self, value: Mapping[str, Any]) -> None: ...
    # numpy >= 2 types spawn as list[Self]; numpy 1.26 as list[BitGenerator] (invariant)
    def spawn(self, n_children: int) -> list[ChaCha20]: ...  # type: ignore[override, unused-ignore]

def default_rng() -> ChaCha20: ...
def os_entropy(n: int) -> bytes: ...
def resolve_rng(rng: _Rng) -> BitGenerator: ...
def _chacha_from_state(state: dict[str, Any]) -> ChaCha20: ...
def _chacha_keystream(
    key: bytes, nonce: bytes, counter: int, nblocks: int, impl: _Impl
) -> bytes: ...
def _simd_available() -> list[str]: ...
def _set_simd(g: ChaCha20, name: str) -> None: ...
def secure_rng(rng: _Rng) -> BitGenerator: ...

# ---------------------------------------------------------- continuous laws (_continuous.pxi)

_SLICE: Final[int]
UNIFORM: Final[int]
EXPONENTIAL: Final[int]
NORMAL: Final[int]
LAPLACE: Final[int]
GUMBEL: Final[int]

@overload
def continuous(
    kind: int, a: float, b: float, size: None, rng: _Rng, out: None
) -> float: ...
@overload
def continuous(
    kind: int, a: float, b: float, size: _Size, rng: _Rng, out: _F64
) -> _F64: ...
@overload
def continuous(
    kind: int, a: float, b: float, size: int | tuple[int, ...], rng: _Rng, out: _F64 | None
) -> _F64: ...

# ------------------------------------------------------------- fallback samplers (_compat.pxi)

BOUNDED_MAX_STEPS: Final[int]

@overload
def laplace_bounded(
    sampler: DiscreteLaplaceExact | None,
    x: float,
    k: int,
    lower: float,
    upper: float,
    scale: float,
    rng: _Rng,
) -> float: ...
@overload
def laplace_bounded(
    sampler: DiscreteLaplaceExact | None,
    x: _F64,
    k: int,
    lower: float,
    upper: float,
    scale: float,
    rng: _Rng,
) -> _F64: ...
@overload
def gamma(shape: float, scale: float, size: None, rng: _Rng) -> float: ...
@overload
def gamma(shape: float, scale: float, size: int | tuple[int, ...], rng: _Rng) -> _F64: ...
@overload
def uniform_full_precision(size: None, rng: _Rng) -> float: ...
@overload
def uniform_full_precision(size: int | tuple[int, ...], rng: _Rng) -> _F64: ...

# ------------------------------------------------------------ exact samplers (_discrete.pxi)

BERNOULLI: Final[int]
BERNOULLI_EXP: Final[int]
GEOMETRIC: Final[int]
DISCRETE_LAPLACE: Final[int]
DISCRETE_GAUSSIAN: Final[int]
BIG_MAX_BITS: Final[int]
DLAP_CT_MAX_DIGITS: Final[int]
DGAUSS_CT_MAX: Final[int]

@overload
def discrete(kind: int, a: int, b: int, size: None, rng: _Rng) -> int: ...
@overload
def discrete(kind: int, a: int, b: int, size: int | tuple[int, ...], rng: _Rng) -> _I64: ...
@overload
def discrete_big(kind: int, num: int, den: int, size: None, rng: _Rng) -> int: ...
@overload
def discrete_big(
    kind: int, num: int, den: int, size: int | tuple[int, ...], rng: _Rng
) -> _I64: ...
@overload
def uniform_below(bound: int, size: None, rng: _Rng) -> int: ...
@overload
def uniform_below(bound: int, size: int | tuple[int, ...], rng: _Rng) -> _I64: ...
def exp_neg_interval(num: int, den: int, prec: int) -> tuple[int, int]: ...

class DiscreteLaplaceCT:
    def __init__(self, s_num: int, s_den: int) -> None: ...
    @property
    def scale(self) -> tuple[int, int]: ...
    @property
    def digits(self) -> int: ...
    @property
    def words(self) -> tuple[int, int]: ...
    @property
    def thresholds(self) -> list[list[int]]: ...
    @property
    def sign_threshold(self) -> int: ...
    @property
    def slack(self) -> float: ...
    @property
    def slack_geometric(self) -> float: ...
    @overload
    def draw(self, geometric: bool, size: None, rng: _Rng) -> int: ...
    @overload
    def draw(self, geometric: bool, size: int | tuple[int, ...], rng: _Rng) -> _I64: ...

class DiscreteGaussianCT:
    def __init__(self, sigma2_num: int, sigma2_den: int) -> None: ...
    @property
    def sigma2(self) -> tuple[int, int]: ...
    @property
    def thresholds(self) -> list[int]: ...
    @property
    def slack(self) -> float: ...
    @overload
    def draw(self, size: None, rng: _Rng) -> int: ...
    @overload
    def draw(self, size: int | tuple[int, ...], rng: _Rng) -> _I64: ...

class DiscreteLaplaceExact:
    def __init__(self, s_num: int, s_den: int, fast_bits: int = ...) -> None: ...
    @property
    def scale(self) -> tuple[int, int]: ...
    @property
    def block(self) -> int: ...
    @property
    def digits(self) -> int: ...
    @property
    def words(self) -> tuple[int, int]: ...
    @overload
    def draw(self, geometric: bool, size: None, rng: _Rng) -> int: ...
    @overload
    def draw(self, geometric: bool, size: int | tuple[int, ...], rng: _Rng) -> _I64: ...

class DiscreteGaussianExact:
    def __init__(
        self, sigma2_num: int, sigma2_den: int, fast_bits: int = ..., span2: int = ...
    ) -> None: ...
    @property
    def blocks(self) -> tuple[int, int]: ...
    @property
    def sigma2(self) -> tuple[int, int]: ...
    @property
    def t(self) -> int: ...
    @property
    def table_span(self) -> int: ...
    @overload
    def draw(self, size: None, rng: _Rng) -> int: ...
    @overload
    def draw(self, size: int | tuple[int, ...], rng: _Rng) -> _I64: ...

_Prepared = (
    DiscreteLaplaceCT | DiscreteGaussianCT | DiscreteLaplaceExact | DiscreteGaussianExact
)

class ReplayWords(BitGenerator):
    def __init__(self, words: npt.ArrayLike) -> None: ...
    # numpy's own (abstract in numpy 1.26's stubs; not settable at run time)
    @property
    def state(self) -> dict[str, Any]: ...
    @state.setter
    def state(self, value: Mapping[str, Any]) -> None: ...
    @property
    def consumed(self) -> int: ...
    @property
    def overrun(self) -> bool: ...

def _probe_draws(
    sampler: _Prepared, n: int, rng: _Rng
) -> tuple[npt.NDArray[np.uint64], _I64]: ...

# ------------------------------------------------------- releases on a grid (_mechanisms.pxi)

@overload
def grid_release(
    sampler: DiscreteLaplaceExact | DiscreteGaussianExact, x: float, k: int, rng: _Rng
) -> float: ...
@overload
def grid_release(
    sampler: DiscreteLaplaceExact | DiscreteGaussianExact, x: _F64, k: int, rng: _Rng
) -> _F64: ...
@overload
def int_release(
    sampler: DiscreteLaplaceExact | DiscreteGaussianExact, x: int, rng: _Rng
) -> int: ...
@overload
def int_release(
    sampler: DiscreteLaplaceExact | DiscreteGaussianExact, x: _I64, rng: _Rng
) -> _I64: ...
def grid_add(x: float, z: int, k: int) -> float: ...

class ScalarPlan:
    @property
    def sampler(self) -> DiscreteLaplaceExact | DiscreteGaussianExact: ...
    @property
    def k(self) -> int: ...
    def __init__(
        self, sampler: DiscreteLaplaceExact | DiscreteGaussianExact, k: int = ...
    ) -> None: ...
    def grid(self, x: object) -> float | None: ...
    def integer(self, x: object) -> int | None: ...

def _seed_scalar_stream(seed: int | None) -> None: ...

# ----------------------------------------------------------------- selection (_selection.pxi)

SEL_GUMBEL: Final[int]
SEL_EXPONENTIAL: Final[int]
SEL_LAPLACE: Final[int]

def scores_argmax(scores: npt.NDArray[Any]) -> int: ...
def em_secure(
    scores: npt.NDArray[Any], inv_grid: float, g: int, s: int, rng: _Rng, shift: int = ...
) -> int: ...
def topk_secure(
    scores: npt.NDArray[Any], inv_grid: float, g: int, s: int, k: int, rng: _Rng
) -> _I64: ...
def noisy_max_secure(
    scores: npt.NDArray[Any], inv_grid: float, g: int, s: int, noise: int, rng: _Rng
) -> int: ...
def noisy_max_fast(
    scores: npt.NDArray[Any], gamma: float, noise: int, rng: _Rng
) -> int: ...
def topk_fast(scores: npt.NDArray[Any], gamma: float, k: int, rng: _Rng) -> _I64: ...
def rr_coins(truth: _U8, rng: _Rng) -> _U8: ...
def rr_binary(truth: _U8, threshold: int, rng: _Rng) -> _U8: ...
def rr_kary(
    truth: npt.NDArray[Any], k: int, threshold: int, rng: _Rng
) -> npt.NDArray[Any]: ...
def _selection_constants() -> list[tuple[int, ...]]: ...

# ----------------------------------------------------- grouped contributions (_grouped.pxi)

def bound_contributions(
    unit: _I64,
    n_units: int,
    key: _I64,
    n_keys: int,
    value: _F64 | None,
    grid: tuple[float, float, float, int, int] | None,
    max_partitions: int,
    max_contributions: int,
    want_units: bool,
    rng: _Rng,
) -> tuple[_I64, _I64 | None, _I64 | None]: ...
def select_partitions(units: _I64, table: npt.NDArray[np.uint64], rng: _Rng) -> _U8: ...

# ------------------------------------------------------ Boosting for People (_learn.pxi)

def boost_premultiply(v: _F64, c: npt.NDArray[np.int8], down: float, up: float) -> _F64: ...
def boost_grid(g_min: float, r: float, g_max: float, n_max: int) -> _F64: ...
def boost_grid_sums(a: _F64, g: _F64) -> _F64: ...
def boost_solve_w(a: _F64, target: float) -> tuple[float, int]: ...
def boost_cap(a: _F64, w: float) -> tuple[_F64, int, float]: ...
def boost_sample(v: _F64, k: int, rng: _Rng) -> _I64: ...

# ---------------------------------------------------------- query release (_release.pxi)

def rel_reduce(src: _F64, shape: _I64, keep: int, out: _F64) -> None: ...
def rel_expand_mul(w: _F64, shape: _I64, keep: int, factor: _F64) -> None: ...
def rel_slice_sum(w: _F64, shape: _I64, fixed: int, vals: _I64) -> float: ...
def rel_slice_scale(
    w: _F64, shape: _I64, fixed: int, vals: _I64, factor: float
) -> float: ...
def rel_mw_cells(
    w: _F64,
    shape: _I64,
    masks: npt.NDArray[np.uint32],
    vals: _I64,
    targets: _F64,
    passes: int,
    n: float,
    Z: float,
) -> float: ...
def rel_mw_marginal(
    w: _F64, shape: _I64, keep: int, targets: _F64, n: float, scratch: _F64
) -> float: ...
def rel_pmw_probe(
    stream: _SVTStream, est: float, truth: float, T: float, ask_both: bool
) -> float: ...

# ------------------------------------------------------------- sparse vector (_sparse.pxi)

SVT_VALUE_LIMIT: Final[int]
SVT_MAX_INV_L: Final[int]
SVT_CHUNK: Final[int]
SVT_ATOM_BITS_MIN: Final[int]
SVT_ATOM_BITS_MAX: Final[int]

class _SVTStream:
    def _configure_secure(
        self,
        rng: _Rng,
        cutoff: int,
        numeric: bool,
        grid: float,
        threshold: float,
        inv_l: float,
        atom_bits: int,
        thr_num: int,
        thr_den: int,
        val_num: int,
        val_den: int,
        constant_time: bool,
    ) -> tuple[float, float]: ...
    def _set_value_range(self, value_range: float) -> None: ...
    def _configure_fast(
        self,
        rng: _Rng,
        cutoff: int,
        numeric: bool,
        threshold: float,
        thr_scale: float,
        q_scale: float,
        val_scale: float,
    ) -> None: ...
    def _start(self) -> None: ...
    def _halted_message(self) -> str: ...
    # The result is bool (AboveThreshold, Sparse) or float64 (NumericSparse); the public
    # subclasses in dpfast.sparse narrow it.
    def feed(
        self, values: npt.ArrayLike, thresholds: npt.ArrayLike | None = ...
    ) -> npt.NDArray[Any]: ...
    def step(self, value: float, threshold: float | None = ...) -> bool | float: ...
    @property
    def halted(self) -> bool: ...
    @property
    def consumed(self) -> int: ...
    @property
    def positives(self) -> int: ...
    @property
    def remaining_positives(self) -> int: ...

@overload
def _svt_query_noise_chunk(
    inv_l: float,
    words: npt.ArrayLike,
    impl: _Impl = ...,
    atom_bits: int = ...,
    rt: None = ...,
    grid: float = ...,
) -> _I64: ...
@overload
def _svt_query_noise_chunk(
    inv_l: float,
    words: npt.ArrayLike,
    impl: _Impl,
    atom_bits: int,
    rt: int,
    grid: float = ...,
) -> tuple[_I64, _F64]: ...
def _svt_simd_available() -> list[str]: ...
def _svt_inversion_constants(
    inv_l: float, atom_bits: int = ...
) -> tuple[float, int, int]: ...

# Query release: general query rows (CSR) and reduction plans (release branch).
def rel_csr_matvec(
    w: _F64, indptr: _I64, indices: npt.NDArray[np.int32], vals: _F64 | None, out: _F64
) -> None: ...
def rel_mw_rows(
    w: _F64,
    indptr: _I64,
    indices: npt.NDArray[np.int32],
    vals: _F64 | None,
    rows: _I64,
    targets: _F64,
    passes: int,
    n: float,
    Z: float,
) -> float: ...

class RelPlan:
    arrays: tuple[npt.NDArray[Any], ...]
    size: int
    ntables: int
    nout: int
    def __init__(
        self,
        shape: npt.ArrayLike,
        parent: npt.ArrayLike,
        keep: npt.ArrayLike,
        sndim: npt.ArrayLike,
        soff: npt.ArrayLike,
        sshape: npt.ArrayLike,
        toff: npt.ArrayLike,
        fsrc: npt.ArrayLike,
        fkeep: npt.ArrayLike,
        offsets: npt.ArrayLike,
    ) -> None: ...

def rel_plan_answer(plan: RelPlan, w: _F64, out: _F64) -> None: ...
def rel_mw_joint(plan: RelPlan, w: _F64, targets: _F64, passes: int, n: float) -> None: ...
