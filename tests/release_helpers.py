"""Shared pieces of the dpfast.query_release tests: the toy domain and histogram (the fixtures
``dom`` and ``hist`` of tests/conftest.py), and an instrumented histogram that counts
every read of its private counts."""

import numpy as np

from dpfast.query_release import Domain, Histogram

SHAPE = (3, 4, 2, 5)


def toy_domain():
    return Domain(["a", "b", "c", "d"], SHAPE)


def toy_histogram(dom):
    g = np.random.default_rng(5)
    return Histogram(dom, g.integers(0, 20, dom.size))


class Spy(Histogram):
    """A histogram that counts every read of its private counts."""

    __slots__ = ("reads",)

    def __init__(self, domain, counts):
        super().__init__(domain, counts)
        self.reads = 0

    @property
    def counts(self):
        self.reads += 1
        return self._counts
