# Type stubs for the compiled Cython layer (dpfast/_core.pyx).
from typing import Any, overload

import numpy as np
import numpy.typing as npt
from numpy.random import BitGenerator, Generator, SeedSequence

_Rng = None | BitGenerator | Generator

class ChaCha20(BitGenerator):
    def __init__(
        self,
        seed: None | int | bytes | SeedSequence = ...,
        *,
        key: bytes | None = ...,
        nonce: bytes | None = ...,
        counter: int | None = ...,
    ) -> None: ...
    @property
    def mode(self) -> str: ...
    @property
    def simd(self) -> str: ...
    @overload
    def random_raw(self, size: None = ..., output: bool = ...) -> int: ...
    @overload
    def random_raw(self, size: int | tuple[int, ...], output: bool = ...) -> npt.NDArray[np.uint64]: ...
    @property
    def state(self) -> dict[str, Any]: ...
    @state.setter
    def state(self, value: dict[str, Any]) -> None: ...
    def spawn(self, n_children: int) -> list[ChaCha20]: ...

def default_rng() -> ChaCha20: ...
def os_entropy(n: int) -> bytes: ...
def resolve_rng(rng: _Rng) -> BitGenerator: ...
def continuous(kind: int, a: float, b: float, size: Any, rng: _Rng, out: Any) -> Any: ...
def grid_release(kind: int, x: Any, k: int, a: int, b: int, rng: _Rng) -> Any: ...
def int_release(kind: int, x: Any, a: int, b: int, rng: _Rng) -> Any: ...

UNIFORM: int
EXPONENTIAL: int
NORMAL: int
LAPLACE: int
GUMBEL: int
NOISE_DLAP: int
NOISE_DGAUSS: int

# The remaining private entry points (discrete samplers, selection and sparse-vector
# kernels, the SVT stream base class) are reached only through the Python modules.
def __getattr__(name: str) -> Any: ...
