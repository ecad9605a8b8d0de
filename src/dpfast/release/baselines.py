"""Data-independent baselines: Laplace / Gaussian noise per query and on whole
marginals (Dwork & Roth Thm 3.6 and 3.22, per query or per marginal).  They are what MWEM and PMW must beat."""

import math

import numpy as np

from .. import _core
from .. import _insecure
from .. import _validation as _v
from .. import mechanisms as _mech
from .._active import NO_BUDGET
from .._active import label as _label
from .cost import PrivacyCost, charge, check_budget
from .workloads import MarginalWorkload

__all__ = ["laplace_per_query", "laplace_marginals", "gaussian_per_query",
           "gaussian_marginals", "marginal_sensitivity"]


def marginal_sensitivity(workload):
    """Exact (L1, L2) sensitivity of the vector of all cells of a set of marginals under
    add/remove-one neighbours: (m, sqrt(m)) -- a record adds 1 to one cell per marginal,
    and the marginals of a workload are distinct attribute sets."""
    _workload(workload)
    return workload.sensitivity()


def _workload(w):
    if not isinstance(w, MarginalWorkload):
        raise TypeError(f"workload must be a MarginalWorkload; got {type(w).__name__}")
    return w


def _finish(noisy, n_public):
    if n_public is not None:           # post-processing: a count lies in [0, n]
        np.clip(noisy, 0.0, n_public, out=noisy)
    return noisy


def _n(n_public):
    return None if n_public is None else _v.positive("n_public", n_public)


def _prepare(workload, epsilon, n_public, rng, mode, budget):
    """Validate every public argument, then charge the budget, before the data is read."""
    _workload(workload)
    epsilon = _v.epsilon(epsilon)
    n_public = _n(n_public)
    mode = _insecure.mode(mode)
    rng = _core.secure_rng(rng)
    check_budget(budget)
    return epsilon, n_public, mode, rng


def laplace_per_query(workload, histogram, *, epsilon, n_public=None, rng=None,
                      mode="secure", budget=None, label=None):
    """Every query its own share ``ε/|Q|``: ``Lap(|Q|/ε)`` on each answer.

    Privacy
    -------
    ε-DP by basic composition of ``|Q|`` sensitivity-1 counting queries (Dwork & Roth
    Thm 3.16); the textbook baseline that ignores the workload's structure.

    Accuracy
    --------
    Each answer's noise is ``Lap(|Q|/ε)``.

    References
    ----------
    Dwork & Roth 2014, Thm 3.6, 3.16.
    """
    epsilon, n_public, mode, rng = _prepare(workload, epsilon, n_public, rng, mode,
                                            budget)
    charge(budget, PrivacyCost(epsilon, 0.0, None), _label(label, "laplace_per_query"))
    truth = workload.answer(histogram)
    noisy = _mech.laplace_mechanism(truth, epsilon=epsilon,
                                    sensitivity=float(workload.n_queries), rng=rng,
                                    mode=mode, budget=NO_BUDGET)   # charged above
    return _finish(noisy, n_public)


def laplace_marginals(workload, histogram, *, epsilon, n_public=None, rng=None,
                      mode="secure", budget=None, label=None):
    """Lap(m/ε) on every cell of the m marginals.

    Privacy
    -------
    ε-DP: the whole cell vector has L1 sensitivity m (:func:`marginal_sensitivity`).

    Accuracy
    --------
    Each answer's noise is Lap(m/ε); the honest strong baseline on marginal workloads.

    References
    ----------
    Dwork & Roth 2014, Thm 3.6; Barak et al., PODS 2007 (marginals).
    """
    epsilon, n_public, mode, rng = _prepare(workload, epsilon, n_public, rng, mode,
                                            budget)
    l1, _ = workload.sensitivity()
    charge(budget, PrivacyCost(epsilon, 0.0, None), _label(label, "laplace_marginals"))
    truth = workload.answer(histogram)
    noisy = _mech.laplace_mechanism(truth, epsilon=epsilon, sensitivity=l1, rng=rng,
                                    mode=mode, budget=NO_BUDGET)   # charged above
    return _finish(noisy, n_public)


def gaussian_per_query(workload, histogram, *, epsilon, delta, n_public=None, rng=None,
                       mode="secure", budget=None, label=None):
    """Gaussian noise calibrated to L2 sensitivity ``sqrt(|Q|)`` (each query treated as an
    arbitrary counting query).  (ε, δ)-DP (:func:`dpfast.mechanisms.gaussian_mechanism`)."""
    return _gaussian(workload, histogram, epsilon, delta, math.sqrt(workload.n_queries),
                     n_public, rng, mode, budget, _label(label, "gaussian_per_query"))


def _gaussian(workload, histogram, epsilon, delta, l2, n_public, rng, mode, budget, label):
    epsilon, n_public, mode, rng = _prepare(workload, epsilon, n_public, rng, mode,
                                            budget)
    delta = _v.delta(delta, allow_zero=False)
    _mech.gaussian_sigma(epsilon, delta, l2)   # may refuse the parameters: before charging
    charge(budget, PrivacyCost(epsilon, delta, None), label)
    truth = workload.answer(histogram)
    noisy = _mech.gaussian_mechanism(truth, epsilon=epsilon, delta=delta,
                                     l2_sensitivity=l2, rng=rng, mode=mode,
                                     budget=NO_BUDGET)   # charged above
    return _finish(noisy, n_public)


def gaussian_marginals(workload, histogram, *, epsilon, delta, n_public=None, rng=None,
                       mode="secure", budget=None, label=None):
    """Gaussian noise on every cell, calibrated to the exact L2 sensitivity sqrt(m).
    (ε, δ)-DP (:func:`dpfast.mechanisms.gaussian_mechanism`)."""
    _workload(workload)
    return _gaussian(workload, histogram, epsilon, delta, workload.sensitivity()[1],
                     n_public, rng, mode, budget, _label(label, "gaussian_marginals"))
