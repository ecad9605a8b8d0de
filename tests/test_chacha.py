"""ChaCha20: RFC 8439 known answers, an independent implementation, stream stability,
modes, key secrecy, fork and threads."""

import copy
import hashlib
import multiprocessing
import os
import pickle
import sys
import threading

import numpy as np
import pytest

import dpfast
from dpfast import _core
from dpfast.random import ChaCha20, default_rng, os_entropy

IMPLS = _core._simd_available()
RFC_KEY = bytes(range(32))

# RFC 8439 §2.3.2: key 00..1f, nonce 00:00:00:09:00:00:00:4a:00:00:00:00, counter 1.
RFC_232_NONCE = bytes.fromhex("000000090000004a00000000")
RFC_232_BLOCK = bytes.fromhex(
    "10f1e7e4d13b5915500fdd1fa32071c4c7d1f4c733c068030422aa9ac3d46c4e"
    "d2826446079faa0914c2d705d98b02a2b5129cd1de164eb9cbd083e8a2503c4e"
)
# RFC 8439 §2.4.2: same key, nonce 00:00:00:00:00:00:00:4a:00:00:00:00, counter 1.
RFC_242_NONCE = bytes.fromhex("000000000000004a00000000")
RFC_242_PLAIN = (
    b"Ladies and Gentlemen of the class of '99: If I could offer you only "
    b"one tip for the future, sunscreen would be it."
)
RFC_242_CIPHER = bytes.fromhex(
    "6e2e359a2568f98041ba0728dd0d6981e97e7aec1d4360c20a27afccfd9fae0b"
    "f91b65c5524733ab8f593dabcd62b3571639d624e65152ab8f530c359f0861d8"
    "07ca0dbf500d6a6156a38e088a22b65e52bc514d16ccf806818ce91ab7793736"
    "5af90bbf74a35be6b40b8eedf2785e42874d"
)
# RFC 8439 A.1 test vector #1: all-zero key and nonce, counter 0.
RFC_A1_BLOCK = bytes.fromhex(
    "76b8e0ada0f13d90405d6ae55386bd28bdd219b8a08ded1aa836efcc8b770dc7"
    "da41597c5157488d7724e03fb8d84a376a43b8f41518a11cc387b669b2ee6586"
)


@pytest.mark.parametrize("impl", IMPLS)
def test_rfc8439_block(impl):
    assert _core._chacha_keystream(RFC_KEY, RFC_232_NONCE, 1, 1, impl) == RFC_232_BLOCK
    assert _core._chacha_keystream(bytes(32), bytes(12), 0, 1, impl) == RFC_A1_BLOCK


@pytest.mark.parametrize("impl", IMPLS)
def test_rfc8439_encryption(impl):
    ks = _core._chacha_keystream(RFC_KEY, RFC_242_NONCE, 1, 2, impl)
    cipher = bytes(p ^ k for p, k in zip(RFC_242_PLAIN, ks))
    assert cipher == RFC_242_CIPHER


def test_random_raw_is_keystream_in_order():
    g = ChaCha20(key=RFC_KEY, nonce=RFC_232_NONCE, counter=1)
    words = g.random_raw(8)
    assert words.astype("<u8").tobytes() == RFC_232_BLOCK
    # across several refills, scalar draws and bulk fills interleaved
    g = ChaCha20(key=RFC_KEY, nonce=RFC_232_NONCE, counter=1)
    got = [g.random_raw() for _ in range(5)] + list(g.random_raw(2000)) + [g.random_raw()]
    ks = _core._chacha_keystream(RFC_KEY, RFC_232_NONCE, 1, 2006 * 8 // 64 + 1, "scalar")
    want = np.frombuffer(ks, dtype="<u8")[:2006]
    assert np.array_equal(np.array(got, dtype=np.uint64), want)


@pytest.mark.parametrize("impl", IMPLS)
def test_against_cryptography(impl):
    # cryptography (OpenSSL) is an independent implementation; a test dependency.
    from cryptography.hazmat.primitives.ciphers import Cipher, algorithms

    rs = np.random.default_rng(8439)
    # 45 blocks: interleaved pairs of SIMD groups, one single group, then scalar blocks
    # cryptography >= 50 refuses to run its 32-bit counter past 2**32, so these stop at the
    # boundary; the carry beyond it is test_counter_carries_into_nonce's.
    for nblocks, counter in [
        (1, 0),
        (7, 3),
        (37, 1000),
        (45, 9),
        (64, 2**32 - 64),
        (45, 2**32 - 45),
    ]:
        key, nonce = rs.bytes(32), rs.bytes(12)
        enc = Cipher(
            algorithms.ChaCha20(key, counter.to_bytes(4, "little") + nonce), mode=None
        ).encryptor()
        assert _core._chacha_keystream(key, nonce, counter, nblocks, impl) == enc.update(
            bytes(64 * nblocks)
        )


@pytest.mark.parametrize("impl", IMPLS)
def test_counter_carries_into_nonce(impl):
    # Documented: past 2**32 blocks the counter's high half is added to nonce word 0.
    key = bytes(range(1, 33))
    nonce = (7).to_bytes(4, "little") + bytes(8)
    nonce_plus = (8).to_bytes(4, "little") + bytes(8)
    a = _core._chacha_keystream(key, nonce, 2**32 - 2, 4, impl)
    b = _core._chacha_keystream(key, nonce, 2**32 - 2, 2, impl)
    c = _core._chacha_keystream(key, nonce_plus, 0, 2, impl)
    assert a == b + c


def test_every_simd_path_gives_the_same_generator_stream():
    ref = None
    for impl in IMPLS:
        g = ChaCha20(12345)
        _core._set_simd(g, impl)
        out = g.random_raw(3000)
        if ref is None:
            ref = out
        assert np.array_equal(out, ref), impl
    with pytest.raises(ValueError):
        _core._set_simd(ChaCha20(1), "no-such-simd")


# Stream stability: a seeded stream is part of the API (reproducible experiments), so
# these digests change only with a deliberate, documented break.
STABLE = {
    12345: "6f7db66268edb4e82f591445cfc71388339e7b58805d7d5742019cbf2ae273fe",
    0: "9eacb42b0caba2d2627d1def0842663324d09ea53c52f698b395e0fdd100de74",
}


def _digest(g, n=1000):
    return hashlib.sha256(g.random_raw(n).astype("<u8").tobytes()).hexdigest()


@pytest.mark.parametrize("seed", sorted(STABLE))
def test_seeded_stream_stability(seed):
    assert _digest(ChaCha20(seed)) == STABLE[seed]


def test_bytes_seed_stability():
    assert _digest(ChaCha20(b"dpfast")) == STABLE_BYTES


STABLE_BYTES = "4bc82781a3cd84a73f979d3c8e5a771656f9b3bded1d10dcacc941b8e6032d94"


def test_seeds_reproduce_and_differ():
    assert np.array_equal(ChaCha20(5).random_raw(600), ChaCha20(5).random_raw(600))
    assert not np.array_equal(ChaCha20(5).random_raw(8), ChaCha20(6).random_raw(8))
    assert not np.array_equal(ChaCha20(b"5").random_raw(8), ChaCha20(5).random_raw(8))
    ss = np.random.SeedSequence(99)
    assert np.array_equal(ChaCha20(ss).random_raw(8), ChaCha20(99).random_raw(8))


def test_os_keyed_generators_differ():
    a, b = ChaCha20(), ChaCha20()
    assert a.mode == "os"
    assert len(set(a.random_raw(4)) & set(b.random_raw(4))) == 0


def test_fast_key_erasure_replaces_the_key():
    g = ChaCha20(7)
    k0 = g.state["key"]
    g.random_raw(1)
    k1 = g.state["key"]
    assert k1 != k0  # the first refill already replaced the seed key
    g.random_raw(300)  # more than one buffer
    assert g.state["key"] != k1


def test_os_keyed_never_shows_its_key():
    g = ChaCha20()
    g.random_raw(3)
    assert g.state == {"bit_generator": "ChaCha20", "mode": "os"}
    assert "key" not in repr(g)
    with pytest.raises(TypeError, match="cannot be pickled"):
        pickle.dumps(g)
    with pytest.raises(TypeError):
        copy.deepcopy(g)
    with pytest.raises(TypeError):
        g.state = {"bit_generator": "ChaCha20", "mode": "os"}


@pytest.mark.parametrize(
    "make",
    [
        lambda: ChaCha20(3),
        lambda: ChaCha20(b"x"),
        lambda: ChaCha20(key=RFC_KEY, nonce=RFC_232_NONCE),
    ],
)
def test_pickle_and_state_round_trip(make):
    g = make()
    g.random_raw(77)
    gen = np.random.Generator(g)
    gen.integers(0, 2**32, size=3, dtype=np.uint32)  # leaves half a word buffered
    h = pickle.loads(pickle.dumps(g))
    assert np.array_equal(
        np.random.Generator(h).integers(0, 2**32, 5, dtype=np.uint32),
        gen.integers(0, 2**32, 5, dtype=np.uint32),
    )
    assert np.array_equal(h.random_raw(500), g.random_raw(500))
    k = make()
    k.state = g.state
    assert np.array_equal(k.random_raw(10), g.random_raw(10))


def test_numpy_generator_interop():
    gen = np.random.Generator(ChaCha20(2024))
    x = gen.random(100_000)
    assert 0.0 <= x.min() and x.max() < 1.0
    assert abs(x.mean() - 0.5) < 0.01
    assert gen.integers(0, 10, 1000).max() == 9


def test_spawn():
    kids = ChaCha20(11).spawn(3)
    assert all(k.mode == "seeded" for k in kids)
    assert np.array_equal(kids[1].random_raw(4), ChaCha20(11).spawn(3)[1].random_raw(4))
    assert all(k.mode == "os" for k in ChaCha20().spawn(2))
    with pytest.raises(TypeError):
        ChaCha20(b"bytes-seeded").spawn(1)


@pytest.mark.parametrize(
    "kwargs, exc",
    [
        ({"seed": -1}, ValueError),
        ({"seed": 1.5}, TypeError),
        ({"seed": True}, TypeError),
        ({"key": b"short"}, ValueError),
        ({"key": "x" * 32}, TypeError),
        ({"key": bytes(32), "nonce": bytes(8)}, ValueError),
        ({"key": bytes(32), "counter": -1}, ValueError),
        ({"key": bytes(32), "counter": 2**64}, ValueError),
        ({"nonce": bytes(12)}, TypeError),
        ({"seed": 1, "key": bytes(32)}, TypeError),
    ],
)
def test_bad_arguments(kwargs, exc):
    with pytest.raises(exc):
        ChaCha20(**kwargs)


def test_os_entropy():
    a, b = os_entropy(32), os_entropy(32)
    assert len(a) == 32 and a != b
    assert os_entropy(0) == b""


def test_default_rng_is_per_thread():
    mine = default_rng()
    assert mine is default_rng() and mine.mode == "os"
    box = []
    t = threading.Thread(target=lambda: box.append(default_rng()))
    t.start()
    t.join()
    assert box[0] is not mine


def test_shared_generator_across_threads_never_repeats():
    g = ChaCha20()
    results = [None] * 8

    def work(i):
        parts = [g.random_raw(997) for _ in range(20)] + [
            np.array([g.random_raw()], np.uint64)
        ]
        results[i] = np.concatenate(parts)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    allw = np.concatenate(results)
    assert allw.size == 8 * (20 * 997 + 1)
    assert np.unique(allw).size == allw.size  # 2^-64 collision odds: a repeat is a bug


def test_per_thread_seeded_generators_match_serial():
    serial = [ChaCha20(s).random_raw(5000) for s in range(6)]
    out = [None] * 6

    def work(s):
        out[s] = ChaCha20(s).random_raw(5000)

    threads = [threading.Thread(target=work, args=(s,)) for s in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(np.array_equal(a, b) for a, b in zip(serial, out))


def _child_words(conn, explicit, seeded):
    conn.send(
        (default_rng().random_raw(16), explicit.random_raw(16), seeded.random_raw(16))
    )
    conn.close()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork() on this platform (Windows)")
def test_fork_child_never_repeats_parent():
    explicit, seeded = ChaCha20(), ChaCha20(77)
    # Leave words buffered, so a child that kept the buffer would repeat them.
    default_rng().random_raw(3)
    explicit.random_raw(3)
    seeded.random_raw(3)
    ctx = multiprocessing.get_context("fork")
    parent_end, child_end = ctx.Pipe()
    p = ctx.Process(target=_child_words, args=(child_end, explicit, seeded))
    p.start()
    child = parent_end.recv()
    p.join()
    assert p.exitcode == 0
    mine = (default_rng().random_raw(16), explicit.random_raw(16), seeded.random_raw(16))
    assert not set(child[0]) & set(mine[0])
    assert not set(child[1]) & set(mine[1])
    # Seeded streams are deterministic by design: the child continues the same stream.
    assert np.array_equal(child[2], mine[2])


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork() on this platform (Windows)")
def test_raw_os_fork_rekeys():
    g = ChaCha20()
    g.random_raw(1)
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # child: write 8 words and exit without running pytest's teardown
        os.write(w, g.random_raw(8).tobytes())
        os._exit(0)
    os.close(w)
    data = b""
    while len(data) < 64:
        chunk = os.read(r, 64)
        if not chunk:
            break
        data += chunk
    os.close(r)
    os.waitpid(pid, 0)
    child = np.frombuffer(data, dtype=np.uint64)
    assert child.size == 8
    assert not set(child) & set(g.random_raw(8))


def test_import_exposes_errors():
    assert issubclass(dpfast.EntropyError, OSError)
    assert issubclass(dpfast.PrivacyParameterError, ValueError)
    assert issubclass(dpfast.BudgetExceededError, RuntimeError)
    assert issubclass(dpfast.MechanismHaltedError, RuntimeError)
    assert all(
        issubclass(e, dpfast.DPFastError)
        for e in (
            dpfast.EntropyError,
            dpfast.PrivacyParameterError,
            dpfast.BudgetExceededError,
            dpfast.MechanismHaltedError,
        )
    )
    assert sys.modules["dpfast._core"].__file__.endswith((".so", ".pyd"))
