"""Fixtures shared by the test modules (pytest finds them here; never import them)."""

import os

import pytest

import dpfast.random as dr
from release_helpers import toy_domain, toy_histogram


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


# The toy domain and histogram of the dpfast.query_release tests (tests/release_helpers.py); a
# module may define its own ``dom`` (test_release_joint.py does), which then wins there.
@pytest.fixture
def dom():
    return toy_domain()


@pytest.fixture
def hist(dom):
    return toy_histogram(dom)
