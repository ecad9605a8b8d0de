"""ChaCha20 kernels and the bulk fill: every block count of every SIMD path against an
independent implementation, and fills of odd lengths against a word-by-word model of the
fast-key-erasure generator (buffered and direct-to-array paths must give one stream)."""

import numpy as np
import pytest

from dpfast import _core
from dpfast.random import ChaCha20

IMPLS = _core._simd_available()
WORDS = 256  # 64-bit words per refill (DPF_CHACHA_BLOCKS = 32 blocks)
LEAD = 4  # words of each keyed refill that become the next key


@pytest.mark.parametrize("impl", IMPLS)
def test_every_block_count_matches_cryptography(impl):
    # 1..70 blocks cover each kernel's interleaved groups, single groups and remainders
    # (widths 1, 2, 4, 8, 16, 32) at counters that are not multiples of any width.
    from cryptography.hazmat.primitives.ciphers import Cipher, algorithms

    rs = np.random.default_rng(15)
    key, nonce = rs.bytes(32), rs.bytes(12)
    for counter in (3, 2**32 - 70):
        enc = Cipher(
            algorithms.ChaCha20(key, counter.to_bytes(4, "little") + nonce), mode=None
        ).encryptor()
        want = enc.update(bytes(64 * 70))
        for nblocks in range(1, 71):
            got = _core._chacha_keystream(key, nonce, counter, nblocks, impl)
            assert got == want[: 64 * nblocks], (counter, nblocks)


@pytest.mark.parametrize("impl", IMPLS)
def test_every_block_count_carries_like_scalar(impl):
    # Across the 2**32 block boundary (where cryptography stops), against the scalar path
    # whose carry test_chacha.py pins.
    key, nonce = bytes(range(7, 39)), bytes(range(12))
    ref = _core._chacha_keystream(key, nonce, 2**32 - 37, 70, "scalar")
    for nblocks in range(1, 71):
        assert (
            _core._chacha_keystream(key, nonce, 2**32 - 37, nblocks, impl)
            == ref[: 64 * nblocks]
        ), nblocks


@pytest.mark.parametrize("impl", IMPLS)
def test_counter_wrap_at_every_lane(impl):
    # The SIMD kernels build a set's counter vectors in registers and take a separate
    # path for a set inside which the low counter word wraps: put the wrap at each lane
    # of each set width (and on set boundaries), also where the whole 64-bit counter
    # wraps, against the scalar path.
    key, nonce = bytes(range(40, 72)), bytes(range(12, 24))
    for start in (2**32 - 64, 2**64 - 64):
        ref = _core._chacha_keystream(key, nonce, start, 128, "scalar")
        for k in range(1, 65):
            got = _core._chacha_keystream(key, nonce, start + 64 - k, 64, impl)
            assert got == ref[64 * (64 - k) : 64 * (128 - k)], (start, k)


class KeyedModel:
    """The keyed (seeded / OS) generator written out from the raw keystream: each refill
    is 32 blocks at counter 0 under the current key, whose first 4 words are the next key
    and the other 252 the output."""

    def __init__(self, key):
        self.key = key
        self.buf = np.empty(0, dtype=np.uint64)

    def words(self, n):
        out = []
        while n > 0:
            if self.buf.size == 0:
                ks = _core._chacha_keystream(self.key, bytes(12), 0, WORDS // 8, "scalar")
                self.key = ks[:32]
                self.buf = np.frombuffer(ks, dtype="<u8")[LEAD:].astype(np.uint64)
            take = min(n, self.buf.size)
            out.append(self.buf[:take])
            self.buf = self.buf[take:]
            n -= take
        return np.concatenate(out) if out else np.empty(0, dtype=np.uint64)


# Request sizes around the refill (252 output words) and direct-batch boundaries, in an
# order that starts direct batches at every phase of the buffer.
SIZES = [
    None,
    251,
    1,
    252,
    253,
    3,
    504,
    1000,
    None,
    255,
    256,
    257,
    5000,
    7,
    777,
    2 * 252,
    None,
    12_345,
    0,
    1,
]


@pytest.mark.parametrize("impl", IMPLS)
def test_seeded_fills_match_the_model_word_by_word(impl):
    g = ChaCha20(20261126)
    _core._set_simd(g, impl)
    model = KeyedModel(g.state["key"])
    for size in SIZES:
        if size is None:
            assert g.random_raw() == int(model.words(1)[0])
        else:
            got = g.random_raw(size)
            assert got.shape == (size,)
            assert np.array_equal(got, model.words(size)), size
        # the next key and the words not yet handed out are the model's, after every call
        st = g.state
        assert st["key"] == model.key
        assert np.array_equal(st["buffer"], model.buf)


def test_fill_starting_mid_buffer_matches_unbuffered_draws():
    # One large fill from every position of a partly used buffer equals scalar draws.
    for used in (0, 1, 3, 4, 5, 100, 247, 248, 251):
        a, b = ChaCha20(77), ChaCha20(77)
        a.random_raw(used)
        b.random_raw(used)
        bulk = a.random_raw(3 * 252 + 11)
        one = np.array([b.random_raw() for _ in range(3 * 252 + 11)], dtype=np.uint64)
        assert np.array_equal(bulk, one), used


@pytest.mark.parametrize("impl", IMPLS)
def test_stream_fills_are_the_raw_keystream(impl):
    # STREAM mode: no key erasure, every word is output, the counter runs through 2**32.
    key, nonce, counter = bytes(range(32)), bytes(range(12)), 2**32 - 100
    g = ChaCha20(key=key, nonce=nonce, counter=counter)
    _core._set_simd(g, impl)
    sizes = [5, 256, 251, 513, 1, 2000, 700]
    got = np.concatenate([g.random_raw(s) for s in sizes])
    nblocks = -(-sum(sizes) // 8)
    want = np.frombuffer(
        _core._chacha_keystream(key, nonce, counter, nblocks, "scalar"), dtype="<u8"
    )[: sum(sizes)]
    assert np.array_equal(got, want)
    assert g.state["counter"] == counter + WORDS // 8 * -(-sum(sizes) // WORDS)
