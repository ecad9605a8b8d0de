import pytest

import dpfast.random as dr


@pytest.fixture
def seeded():
    """A factory of reproducible generators (tests only: seeded streams are not secret)."""
    return lambda seed=20261125: dr.ChaCha20(seed)
