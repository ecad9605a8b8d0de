import os

import pytest

import dpfast.random as dr


@pytest.fixture
def seeded():
    """A factory of reproducible generators (tests only: seeded streams are not secret)."""
    return lambda seed=20261125: dr.ChaCha20(seed)


# A throwaway PostgreSQL cluster (dpfast.ledger.testing), one per test module that asks;
# with CI set a server that cannot start fails the test instead of skipping it.
@pytest.fixture(scope="module")
def pg_server():
    if not os.environ.get("CI"):
        pytest.importorskip("psycopg")
    from dpfast.ledger.testing import ThrowawayPostgres
    try:
        server = ThrowawayPostgres(fsync=False)
    except (RuntimeError, OSError) as e:
        if os.environ.get("CI"):
            pytest.fail(f"CI is set but no PostgreSQL server could be started: {e}")
        pytest.skip(f"no PostgreSQL server: {e}")
    yield server
    server.stop()
