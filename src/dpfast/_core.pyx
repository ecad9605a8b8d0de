# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""The Cython layer of dpfast: generator plumbing, GIL release, status -> exception.

Nothing here decides privacy; it converts arguments that the Python layer has already
validated, holds the generator's lock, releases the GIL around every bulk C loop, and maps
the C core's status codes to exceptions in one place (``_check``).
"""

import hashlib
import math
import threading

import numpy as np
cimport numpy as cnp
from libc.stdint cimport uint8_t, uint32_t, uint64_t
from libc.string cimport memcpy, memset
from numpy.random cimport BitGenerator, bitgen_t
from numpy.random.bit_generator import ISeedSequence, SeedlessSeedSequence, SeedSequence

from dpfast._cdpf cimport *
from . import _validation
from ._errors import DPFastError, EntropyError, PrivacyParameterError
from ._insecure import warn_rng as _warn_rng

cnp.import_array()

# A Cython subclass lays its fields after numpy's BitGenerator as compiled here; a numpy
# whose BitGenerator is larger (it grows bitgen_t) would overlap them.  Refuse loudly.
if (<type>BitGenerator).__basicsize__ != sizeof(BitGenerator):
    raise ImportError(
        "dpfast was compiled against a numpy whose BitGenerator has a different layout "
        f"({sizeof(BitGenerator)} bytes) from the numpy installed now "
        f"({np.__version__}, {(<type>BitGenerator).__basicsize__} bytes); reinstall dpfast "
        "so that it is built against this numpy")

if dpf_chacha_global_init() != 0:
    raise ImportError("dpfast: could not register the fork handler")
dpf_continuous_init()


cdef int _check(int status) except -1:
    """The one place where C status codes become exceptions."""
    if status == DPF_OK:
        return 0
    if status == DPF_E_ENTROPY:
        raise EntropyError("the operating system supplied no entropy; refusing to continue "
                           "with a weaker source")
    if status == DPF_E_NOMEM:
        raise MemoryError()
    if status == DPF_E_RANGE:
        # A draw fell outside what the sampler represents exactly: possible only at the
        # documented limits of a public parameter, with negligible probability; never a
        # silent wrong value (and never OverflowError: docs/security-model.md, rule 3).
        raise PrivacyParameterError(
            "a noise draw fell outside the range the sampler represents exactly (possible "
            "only near the documented limits of the noise parameters); nothing was released")
    raise DPFastError(f"internal error: C core returned status {status}")


# ---------------------------------------------------------------- ChaCha20

cdef uint64_t _cc_next_u64(void *st) noexcept nogil:
    return dpf_chacha_next_u64(<dpf_chacha_t *>st)

cdef uint32_t _cc_next_u32(void *st) noexcept nogil:
    return dpf_chacha_next_u32(<dpf_chacha_t *>st)

cdef double _cc_next_double(void *st) noexcept nogil:
    return <double>(dpf_chacha_next_u64(<dpf_chacha_t *>st) >> 11) * (1.0 / 9007199254740992.0)

_MODE_NAMES = {DPF_CHACHA_OS: "os", DPF_CHACHA_SEEDED: "seeded", DPF_CHACHA_STREAM: "stream"}
_SEED_TAG = b"dpfast.ChaCha20.seed\x00"


def _as_bytes(name, value, length):
    if not isinstance(value, (bytes, bytearray, memoryview)):
        raise TypeError(f"{name} must be bytes of length {length}; got {type(value).__name__}")
    value = bytes(value)
    if len(value) != length:
        raise ValueError(f"{name} must be exactly {length} bytes; got {len(value)}")
    return value


cdef class ChaCha20(BitGenerator):
    """ChaCha20 (RFC 8439) as a ``numpy.random.BitGenerator``: dpfast's CSPRNG.

    ``ChaCha20()``
        Keyed with 256 bits from the operating system (getrandom, arc4random_buf or
        BCryptGenRandom); raises :class:`~dpfast.EntropyError` if none is available.
        This is the only mode for production.  It uses fast key erasure (each refill
        replaces the key and every word is wiped once handed out), is rekeyed from the
        OS in a forked child, and never shows its key: ``repr`` and ``state`` omit it,
        and pickling or copying it raises ``TypeError``.
    ``ChaCha20(seed)``
        A reproducible stream for tests and simulation, **not for production**: anyone
        who knows the seed knows every output.  ``seed`` is a non-negative int or a
        ``numpy.random.SeedSequence`` (the key is 8 words of its state) or bytes (the
        key is SHA-256 of a tag and the bytes).  Fast key erasure as above; a forked
        child continues the same stream, as with any seeded numpy generator.
    ``ChaCha20(key=..., nonce=..., counter=0)``
        The raw RFC 8439 keystream of a 32-byte key and 12-byte nonce from block
        ``counter``; ``random_raw()`` returns it as little-endian 64-bit words, so
        published test vectors can be checked directly.  After 2**32 blocks the counter
        carries into the first nonce word (the original 64-bit-counter ChaCha).

    Any numpy ``Generator`` can use it: ``numpy.random.Generator(ChaCha20())``.
    """
    cdef dpf_chacha_t *_st
    cdef int _mapped
    cdef int _mode

    def __init__(self, seed=None, *, key=None, nonce=None, counter=None):
        cdef bytes k, n = b"\x00" * 12
        cdef uint64_t ctr = 0
        if self._st != NULL:
            # Re-keying in place would free the state under a fill that another thread
            # runs without the GIL (it binds the state before taking the lock).
            raise TypeError("a ChaCha20 cannot be re-initialised; create a new one")
        seed_seq = SeedlessSeedSequence()
        if key is not None or nonce is not None or counter is not None:
            if seed is not None:
                raise TypeError("give either seed or key/nonce/counter, not both")
            if key is None:
                raise TypeError("key is required with nonce or counter")
            k = _as_bytes("key", key, 32)
            if nonce is not None:
                n = _as_bytes("nonce", nonce, 12)
            if counter is not None:
                if isinstance(counter, bool) or not isinstance(counter, int) or not 0 <= counter < 2**64:
                    raise ValueError(f"counter must be an int in [0, 2**64); got {counter!r}")
                ctr = counter
            mode = DPF_CHACHA_STREAM
        elif seed is None:
            mode = DPF_CHACHA_OS
        else:
            mode = DPF_CHACHA_SEEDED
            if isinstance(seed, (bytes, bytearray, memoryview)):
                k = hashlib.sha256(_SEED_TAG + bytes(seed)).digest()
            else:
                if isinstance(seed, ISeedSequence):
                    seed_seq = seed
                elif isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (int, np.integer)):
                    raise TypeError("seed must be a non-negative int, bytes or a SeedSequence; "
                                    f"got {type(seed).__name__}")
                elif seed < 0:
                    raise ValueError(f"seed must be >= 0; got {seed}")
                else:
                    seed_seq = SeedSequence(int(seed))
                k = np.asarray(seed_seq.generate_state(8, np.uint32), dtype="<u4").tobytes()
        BitGenerator.__init__(self, seed_seq)
        self._st = dpf_chacha_alloc(mode, &self._mapped)
        if self._st == NULL:
            raise MemoryError()
        self._mode = mode
        if mode == DPF_CHACHA_OS:
            _check(dpf_chacha_key_os(self._st))
        else:
            dpf_chacha_key(self._st, <const uint8_t *>k, <const uint8_t *>n, ctr)
        self._bitgen.state = <void *>self._st
        self._bitgen.next_uint64 = &_cc_next_u64
        self._bitgen.next_uint32 = &_cc_next_u32
        self._bitgen.next_double = &_cc_next_double
        self._bitgen.next_raw = &_cc_next_u64

    def __dealloc__(self):
        if self._st != NULL:
            dpf_chacha_free(self._st, self._mapped)
            self._st = NULL

    @property
    def mode(self):
        """``'os'``, ``'seeded'`` or ``'stream'``."""
        return _MODE_NAMES[self._mode]

    # numpy's BitGenerator.ctypes / .cffi hand out the address of the generator's state
    # (for numba); for this generator that state *is* the ChaCha key and buffer, and a
    # copy of it predicts every later output.  An OS-keyed generator refuses them (seeded
    # and stream generators are predictable by design and keep them).  This closes the
    # standard interfaces only: code running in the same process can still reach the
    # state through the capsule numpy's Generator needs, or by reading memory; see
    # docs/security-model.md ("In-process code").
    def _state_interface(self, str name):
        if self._mode == DPF_CHACHA_OS:
            raise TypeError("an OS-keyed ChaCha20 does not expose its state address (it "
                            "would let the caller clone the key); use a seeded ChaCha20 "
                            f"for numba/{name} simulations")
        return getattr(BitGenerator, name).__get__(self, type(self))

    @property
    def ctypes(self):
        """numpy's ctypes interface; refused for an OS-keyed generator (see above)."""
        return self._state_interface("ctypes")

    @property
    def cffi(self):
        """numpy's cffi interface; refused for an OS-keyed generator (see above)."""
        return self._state_interface("cffi")

    @property
    def simd(self):
        """The block-function implementation this generator uses (e.g. ``'avx512'``)."""
        return dpf_chacha_impl_name(self._st.impl).decode()

    def __repr__(self):
        return f"ChaCha20(mode={self.mode!r}, simd={self.simd!r})"

    def random_raw(self, size=None, output=True):
        """The next 64-bit words of the stream (in keystream order)."""
        cdef cnp.ndarray arr
        cdef uint64_t v
        cdef size_t n
        if size is None:
            with self.lock:
                v = dpf_chacha_next_u64(self._st)
            return int(v) if output else None
        arr = np.empty(size, dtype=np.uint64)
        n = arr.size
        with self.lock, nogil:
            dpf_chacha_fill(self._st, <uint64_t *>cnp.PyArray_DATA(arr), n)
        return arr if output else None

    @property
    def state(self):
        """The generator's state.  For an OS-keyed generator: only its mode (the key is
        secret).  Otherwise a dict that ``state = ...`` restores exactly."""
        cdef dpf_chacha_t *c = self._st
        d = {"bit_generator": "ChaCha20", "mode": self.mode}
        if self._mode == DPF_CHACHA_OS:
            return d
        with self.lock:
            d["key"] = np.array([c.key[i] for i in range(8)], dtype="<u4").tobytes()
            d["nonce"] = np.array([c.nonce[i] for i in range(3)], dtype="<u4").tobytes()
            d["counter"] = int(c.counter)
            d["buffer"] = np.array([c.buf[i] for i in range(c.pos, c.len)], dtype=np.uint64)
            d["half"] = int(c.half) if c.has_half else None
        return d

    @state.setter
    def state(self, value):
        cdef dpf_chacha_t *c = self._st
        cdef cnp.ndarray buf
        cdef Py_ssize_t i, nb
        if self._mode == DPF_CHACHA_OS:
            raise TypeError("the state of an OS-keyed ChaCha20 cannot be set")
        if not isinstance(value, dict) or value.get("bit_generator") != "ChaCha20":
            raise ValueError("state must be a dict from ChaCha20.state")
        if value.get("mode") != self.mode:
            raise ValueError(f"state is for mode {value.get('mode')!r}; this generator is {self.mode!r}")
        key = _as_bytes("key", value["key"], 32)
        nonce = _as_bytes("nonce", value["nonce"], 12)
        counter = value["counter"]
        buf = np.ascontiguousarray(value["buffer"], dtype=np.uint64)
        nb = buf.shape[0]
        if buf.ndim != 1 or nb > DPF_CHACHA_WORDS:
            raise ValueError("state['buffer'] has the wrong shape")
        half = value.get("half")
        with self.lock:
            dpf_chacha_key(c, <const uint8_t *>key, <const uint8_t *>nonce, <uint64_t>counter)
            c.pos = DPF_CHACHA_WORDS - nb
            c.len = DPF_CHACHA_WORDS
            for i in range(nb):
                c.buf[c.pos + i] = (<uint64_t *>cnp.PyArray_DATA(buf))[i]
            if half is not None:
                c.half = <uint32_t>half
                c.has_half = 1

    def __reduce__(self):
        if self._mode == DPF_CHACHA_OS:
            raise TypeError("an OS-keyed ChaCha20 holds a secret key and cannot be pickled "
                            "or copied; create a new ChaCha20() where it is needed")
        return (_chacha_from_state, (self.state,))

    def spawn(self, int n_children):
        """Independent child generators: fresh OS-keyed ones for an OS-keyed parent,
        SeedSequence children for an int- or SeedSequence-seeded one."""
        if self._mode == DPF_CHACHA_OS:
            return [ChaCha20() for _ in range(n_children)]
        if isinstance(self._seed_seq, SeedlessSeedSequence):
            raise TypeError("only OS-keyed or SeedSequence-seeded ChaCha20 can spawn")
        with self.lock:     # SeedSequence.spawn counts its children: one caller at a time
            children = self._seed_seq.spawn(n_children)
        return [ChaCha20(s) for s in children]


def _chacha_from_state(state):
    mode = state.get("mode")
    zero = b"\x00" * 32
    if mode == "stream":
        g = ChaCha20(key=zero)
    elif mode == "seeded":
        g = ChaCha20(zero)
    else:
        raise ValueError(f"cannot restore a ChaCha20 of mode {mode!r}")
    g.state = state
    return g


_tls = threading.local()


cpdef ChaCha20 default_rng():
    """The calling thread's OS-keyed ChaCha20 (created on first use).

    Each thread has its own, so threads never wait on each other's lock; a forked child
    rekeys it before its first draw."""
    try:
        return _tls.rng
    except AttributeError:
        g = ChaCha20()
        _tls.rng = g
        return g


def _chacha_keystream(key, nonce, counter, nblocks, impl):
    """Raw keystream bytes computed by one named implementation (tests, benchmarks)."""
    impls = {"best": DPF_IMPL_BEST, "scalar": DPF_IMPL_SCALAR, "sse2": DPF_IMPL_VEC128,
             "neon": DPF_IMPL_VEC128, "avx2": DPF_IMPL_AVX2, "avx512": DPF_IMPL_AVX512}
    key = _as_bytes("key", key, 32)
    nonce = _as_bytes("nonce", nonce, 12)
    out = bytearray(64 * nblocks)
    cdef unsigned char[::1] view = out
    if nblocks and dpf_chacha_keystream(impls[impl], <const uint8_t *>key,
                                        <const uint8_t *>nonce, <uint64_t>counter,
                                        &view[0], nblocks) != 0:
        raise ValueError(f"implementation {impl!r} is not available on this CPU")
    return bytes(out)


def _simd_available():
    """Names of the ChaCha20 implementations this CPU can run, best last."""
    return [dpf_chacha_impl_name(i).decode() for i in range(1, DPF_IMPL_COUNT)
            if dpf_chacha_impl_available(i)]


def _set_simd(ChaCha20 g, name):
    """Make one generator use a given implementation (tests of every SIMD path)."""
    for i in range(1, DPF_IMPL_COUNT):
        if dpf_chacha_impl_available(i) and dpf_chacha_impl_name(i).decode() == name:
            with g.lock:
                g._st.impl = i
            return
    raise ValueError(f"implementation {name!r} is not available on this CPU")


def os_entropy(n):
    """n bytes (0 <= n <= 2**30) from the operating system's CSPRNG; EntropyError if it
    has none."""
    n = _validation.integer("n", n, minimum=0, maximum=2 ** 30)
    out = bytearray(n)
    cdef unsigned char[::1] view = out
    if n:
        _check(dpf_os_entropy(&view[0], n))
    return bytes(out)


# ---------------------------------------------------------------- binding any generator

cdef BitGenerator _resolve(object rng):
    """None -> this thread's default; a numpy Generator -> its bit generator."""
    if rng is None:
        return default_rng()
    if isinstance(rng, BitGenerator):
        return <BitGenerator>rng
    if isinstance(rng, np.random.Generator):
        return <BitGenerator>rng.bit_generator
    raise TypeError("rng must be None, a dpfast.random.ChaCha20, a numpy BitGenerator or a "
                    f"numpy Generator; got {type(rng).__name__}")


def resolve_rng(rng):
    """The bit generator that ``rng=`` names (TypeError for anything else): mechanisms
    resolve it before charging a budget, so a bad ``rng`` never spends privacy."""
    return _resolve(rng)


cpdef BitGenerator secure_rng(object rng):
    """``resolve_rng`` for a secure mechanism: the same bit generator, plus an
    :class:`~dpfast.InsecureRandomnessWarning` when it is predictable (a seeded or keyed
    ChaCha20, any other numpy BitGenerator; a numpy Generator is judged by its bit
    generator, so ``Generator(ChaCha20())`` is secure).  ``rng=None`` returns at the first
    test, in C: the default path pays nothing for the check."""
    if rng is None:
        return default_rng()
    cdef BitGenerator bg = _resolve(rng)
    if not (isinstance(bg, ChaCha20) and (<ChaCha20>bg)._mode == DPF_CHACHA_OS):
        _warn_rng(bg)
    return bg


cdef int _bind(BitGenerator bg, dpf_rng_t *r) except -1:
    if isinstance(bg, ChaCha20):
        r.cc = (<ChaCha20>bg)._st
        r.state = NULL
        r.next_u64 = NULL
        return 0
    if bg._bitgen.next_uint64 == NULL or bg._bitgen.state == NULL:
        # numpy issue 25023: a Python-level subclass that never filled bitgen_t.
        raise TypeError(f"{type(bg).__name__} does not provide a C bitgen_t")
    r.cc = NULL
    r.state = bg._bitgen.state
    r.next_u64 = bg._bitgen.next_uint64
    return 0


include "_continuous.pxi"
include "_discrete.pxi"
include "_mechanisms.pxi"
include "_sparse.pxi"
include "_selection.pxi"
include "_learn.pxi"
include "_grouped.pxi"
include "_release.pxi"
include "_compat.pxi"
