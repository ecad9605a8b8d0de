"""Bulk fills on several threads, with the same output for any number of threads.

A fill of ``n >= PARALLEL_MIN`` values is cut into chunks of ``CHUNK`` values, a size
that never depends on the number of threads.  The caller's generator gives one 256-bit
key K (four raw words, drawn under its lock), and chunk i draws from
``ChaCha20(key=K, nonce=i)``: independent keystreams (ChaCha20 is a PRF of key and
nonce), no state shared between threads in the inner loops.  The result is therefore a
function of the generator's state and n only: a seeded generator gives the same array
with ``workers=1``, 2 or 64, and a secure (OS-keyed) one gives sub-streams as
unpredictable as its own.  Below ``PARALLEL_MIN`` the fill runs as before, on the
generator itself.

Turning it off: ``workers=1`` runs every chunk on the calling thread; the environment
variable ``DPFAST_WORKERS`` (read once, at import) sets the default thread count
(``DPFAST_WORKERS=1``: never start threads).  The C loops release the GIL, so the
threads run in parallel.

Scheduling: each thread takes the next chunk nobody has taken yet, so a thread that is
paused (by the OS, or by the host of a virtual machine) does not hold back the others.

Ctrl-C: Python runs signal handlers in the main thread only, between two of the chunks
the main thread runs (a chunk is a few milliseconds).  When the main thread sees an
exception there (KeyboardInterrupt) or from a worker, it sets a stop flag that every
thread reads before its next chunk, waits for the chunks already started (so no thread
still writes into the buffers), and re-raises.  Nothing is returned; the caller's
generator has given its key and is consistent; with ``workers=1`` the chunks run in a
Python loop on the calling thread and stop at the next chunk.
"""

from __future__ import annotations

import math
import os
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, wait
from typing import Any

import numpy as np
import numpy.typing as npt
from numpy.random import BitGenerator

from . import _core
from . import _validation as _v
from ._typing import RngLike

CHUNK = 1 << 16
PARALLEL_MIN = 1 << 18
_ENV = os.environ.get("DPFAST_WORKERS")
_DEFAULT = max(1, int(_ENV)) if _ENV and _ENV.isdigit() else (os.cpu_count() or 1)
_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


def _reset_after_fork() -> None:
    # a child process inherits the pool object but not its threads
    global _pool
    _pool = None


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_reset_after_fork)


def workers(value: int | np.integer[Any] | None) -> int:
    """The thread count asked for: None (the default) or an int >= 1."""
    if value is None:
        return _DEFAULT
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"workers must be None or an int >= 1; got {type(value).__name__}")
    if value < 1:
        raise _v.PrivacyParameterError(f"workers must be >= 1; got {value!r}")
    return int(value)


def _executor() -> ThreadPoolExecutor:
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(
                max_workers=max(_DEFAULT, os.cpu_count() or 1), thread_name_prefix="dpfast"
            )
        return _pool


def chunked(
    n: int,
    gen: BitGenerator,
    nworkers: int,
    task: Callable[[int, int, _core.ChaCha20], None],
) -> None:
    """Run task(lo, hi, sub_rng) over the chunks of [0, n), on up to nworkers threads.
    gen is the caller's resolved generator (a numpy BitGenerator)."""
    key = np.ascontiguousarray(gen.random_raw(4), dtype="<u8")
    kbytes = key.tobytes()
    key[...] = 0
    bounds = [(lo, min(lo + CHUNK, n)) for lo in range(0, n, CHUNK)]

    def run(i: int) -> None:
        lo, hi = bounds[i]
        task(lo, hi, _core.ChaCha20(key=kbytes, nonce=i.to_bytes(12, "little")))

    nworkers = min(nworkers, len(bounds))
    if nworkers <= 1:
        for i in range(len(bounds)):
            run(i)
        return
    stop = threading.Event()
    nxt = iter(range(len(bounds)))
    nxt_lock = threading.Lock()

    # each thread takes the next chunk not yet taken until none is left or stopped: a
    # thread that the OS (or the host of a virtual machine) pauses does not hold back
    # chunks the others could run; the output does not depend on who runs which chunk
    def take(_w: int) -> None:
        while not stop.is_set():
            with nxt_lock:
                i = next(nxt, -1)
            if i < 0:
                return
            run(i)

    pool = _executor()
    futures = [pool.submit(take, w) for w in range(1, nworkers)]
    try:
        take(0)
        for f in futures:
            f.result()  # re-raises a worker's exception
    except BaseException:
        stop.set()
        wait(futures)  # a second Ctrl-C here leaves the rest to finish on their own
        raise


def fill(
    shape: tuple[int, ...] | None,
    dtype: npt.DTypeLike,
    rng: RngLike,
    nworkers: int,
    draw: Callable[[int, _core.ChaCha20], npt.NDArray[Any]],
) -> npt.NDArray[Any] | None:
    """A new array of `shape`, filled by draw(m, sub_rng) -> array of m values per chunk;
    None when the fill is too small to split (the caller fills serially)."""
    if shape is None:
        return None
    # exact product: a size beyond int64 goes to the serial path, which refuses it
    n = math.prod(shape)
    if not PARALLEL_MIN <= n < 2**62:
        return None
    out = np.empty(shape, dtype=dtype)
    flat = out.reshape(-1)

    def task(lo: int, hi: int, sub: _core.ChaCha20) -> None:
        flat[lo:hi] = draw(hi - lo, sub)

    chunked(n, _core.resolve_rng(rng), nworkers, task)
    return out


def release(
    data: npt.ArrayLike,
    rng: RngLike,
    nworkers: int,
    apply: Callable[[npt.NDArray[Any], _core.ChaCha20], npt.NDArray[Any]],
) -> npt.NDArray[Any] | None:
    """apply(chunk_of_data, sub_rng) -> released chunk, over the chunks of a 1-d view of
    data; None when data is too small to split."""
    if np.ndim(data) == 0 or np.size(data) < PARALLEL_MIN:
        return None
    src = np.ascontiguousarray(data).reshape(-1)
    out = np.empty_like(src)

    def task(lo: int, hi: int, sub: _core.ChaCha20) -> None:
        out[lo:hi] = apply(src[lo:hi], sub)

    chunked(src.size, _core.resolve_rng(rng), nworkers, task)
    return out.reshape(np.shape(data))
