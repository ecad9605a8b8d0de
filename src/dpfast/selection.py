"""Differentially private selection: exponential mechanism, report noisy max,
permute-and-flip, top-k.

Every function takes a vector of scores (utilities) ``scores[i] = u(x, i)`` of the
candidates ``0 .. m-1`` and returns indices into it.  The candidate set is the index range
``range(len(scores))``: it must be fixed before looking at the data (Dwork & Roth, after
Def. 3.4: "the range of potential prices is independent of the actual bids"); a candidate
that exists for one database and not for a neighbour breaks differential privacy.  Score
``i`` must have sensitivity ``sensitivity`` (Delta): adding or removing one record changes
it by at most Delta.  With ``monotonic=True`` the caller also promises that adding a record
never decreases any score and removing one never increases any (counting queries), which
halves the noise.

Modes
-----
``mode="secure"`` (default)
    Exact sampling on a public grid, floating-point-attack safe (Mironov 2012): float scores
    are rounded to multiples of ``G = 2**j``, the power of two with
    ``Delta / G in [2**12, 2**13)`` (chosen from Delta only); the rounding is charged to the
    sensitivity (see ``_grid``); integer scores are used as they are.  All probabilities
    are then realised with exact integer samplers (Canonne, Kamath, Steinke 2020), so the
    output law is exactly the stated one on the rounded scores.  Not constant time.
``mode="fast"``
    Ordinary floating-point noise (Gumbel, Laplace, exponential) from the ChaCha20 stream:
    the textbook mechanisms, for simulation.  Never the default.

Budget
------
Every function takes ``budget=None``.  If given (or, when it is None, if a budget is
active: ``with b.active():``), ``budget.spend(epsilon_total, 0.0, label=...)`` is called
after the arguments are validated and before anything is drawn; if it raises (e.g.
``BudgetExceededError``) nothing is drawn.  ``label=`` names the charge (default: the
function's name); ``budget=dpfast.NO_BUDGET`` charges nothing.  A zCDP budget
(``composition="zcdp"``) is charged one selection's rho by the one rule,
:func:`selection_rho` (``spend_rho``): ``epsilon**2/8`` for :func:`exponential_mechanism`,
``epsilon**2/2`` for :func:`permute_and_flip` and :func:`report_noisy_max`; ``top_k`` and
``report_noisy_max(return_value=True)`` spend their total epsilon, which a zCDP budget
reads as ``epsilon**2/2``.  Without any budget nothing is charged and you account for the
release.  A predictable ``rng`` (seeded ChaCha20, numpy
generator) or ``mode="fast"`` warns (``dpfast.InsecureRandomnessWarning``).
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Literal, cast, overload

import numpy as np
import numpy.typing as npt
from numpy.random import BitGenerator

from . import _core, _draw, _insecure, _plans
from . import _validation as _v
from ._active import label as _label
from ._errors import PrivacyParameterError
from ._privacy import Cost, charge
from ._typing import I64Array, PrivacyParam, Real, RngLike, SupportsSpend

_Scores = npt.NDArray[np.float64] | npt.NDArray[np.int64]

__all__ = [
    "exponential_mechanism",
    "report_noisy_max",
    "permute_and_flip",
    "top_k",
    "selection_rho",
    "SELECTION_METHODS",
]

_MAX_CANDIDATES = 2**40  # csrc/include/dpfast/selection.h
_MIN_NOISE_GAMMA = Fraction(1, 2**40)  # secure noisy max: noise scale <= 2**40 grid units


# ---------------------------------------------------------------- validation helpers


def _flag(name: str, value: object) -> bool:
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    raise TypeError(f"{name} must be a bool; got {type(value).__name__} {value!r}")


def _scores(scores: npt.ArrayLike, mode: str) -> _Scores:
    """The scores as a 1-d C-contiguous float64 or int64 array (a copy only when needed).

    Integer scores stay integer on the secure path (exact, no grid); the fast path works in
    float64.  Empty, NaN or infinite scores are rejected here, before any budget is
    charged."""
    arr: _Scores
    kind, arr = _v.real_data("scores", scores)
    if arr.ndim != 1:
        raise ValueError(f"scores must be one-dimensional; got shape {arr.shape}")
    if arr.size == 0:
        raise PrivacyParameterError("scores must not be empty; got 0 candidates")
    if arr.size > _MAX_CANDIDATES:
        raise PrivacyParameterError(
            f"scores must have at most 2**40 candidates; got {arr.size}"
        )
    if kind == "i" and mode == "secure":
        # exact; integers beyond int64 (a uint64 >= 2**63, a big Python int) were clamped
        # to int64 by real_data: 1-Lipschitz, so no score's sensitivity grows
        arr = np.ascontiguousarray(arr, dtype=np.int64)
    else:
        if kind == "i":
            # exact in float64
            arr = np.clip(arr, -_v.EXACT_INT, _v.EXACT_INT).astype(np.int64, copy=False)
        arr = np.ascontiguousarray(arr, dtype=np.float64)
        if _core.scores_argmax(arr) < 0:
            raise PrivacyParameterError(
                "scores must be finite everywhere (NaN and +-inf are outside every "
                "sensitivity bound; the score is not shown: it is private)"
            )
    return arr


#: The selection laws :func:`selection_rho` knows.  "exponential" and "gumbel" are the
#: exponential mechanism (Gumbel-max has exactly its law); "permute_and_flip",
#: "report_noisy_max" (Laplace noise) and "report_noisy_max_exponential" are not.
SELECTION_METHODS = (
    "exponential",
    "gumbel",
    "permute_and_flip",
    "report_noisy_max",
    "report_noisy_max_exponential",
)


def selection_rho(method: str, epsilon: float | Fraction) -> Fraction:
    """The rho-zCDP that one epsilon-DP selection by ``method`` is charged: the one rule
    every module (selection, objects, release) takes a selection's zCDP cost from.

    The exponential mechanism ("exponential", and "gumbel", its law) is epsilon-bounded
    range: between neighbours the log ratio of any two outputs' probabilities moves by at
    most epsilon, whatever the scores' monotonicity (Durfee & Rogers 2019, Def. 3.1 and
    Lemma 3.2), and epsilon-bounded range implies epsilon^2/8-zCDP (Cesar & Rogers 2021,
    Lemma 3.4, by Hoeffding's lemma).  Permute-and-flip and report-noisy-max with Laplace
    or exponential noise are epsilon-DP but not bounded range in general: with
    non-monotone scores (MWEM's marginal errors, where one record moves two scores by +1
    and -1) one permute-and-flip selection's Renyi divergence exceeds epsilon^2/8
    (tests/test_release_privacy.py enumerates it), so they are charged epsilon^2/2, the
    zCDP of any epsilon-DP mechanism (Bun & Steinke 2016, Prop. 1.4).  Exact: a Fraction
    of the exact value of ``epsilon``."""
    if method not in SELECTION_METHODS:
        raise ValueError(f"method must be one of {SELECTION_METHODS}; got {method!r}")
    eps = _v.charged(epsilon)
    return eps * eps / (8 if method in ("exponential", "gumbel") else 2)


def _selection_cost(method: str, epsilon: float) -> Cost:
    """The cost of one epsilon-DP selection by ``method``, as :func:`charge` charges it:
    ``epsilon`` (as given) on an (epsilon, delta) budget, ``selection_rho(method,
    epsilon)`` (exact, ``spend_rho``) on a zCDP one -- epsilon^2/8 for the exponential
    mechanism, epsilon^2/2 for permute-and-flip and noisy max (OpenDP under-reported
    those, opendp#2911)."""
    return Cost(epsilon, 0.0, selection_rho(method, epsilon))


# the secure selection plan lives with the other plans (dpfast._plans)
_dyadic_floor = _plans.dyadic_floor
_grid = _plans.selection_grid


def _fast_gamma(
    epsilon: float, sensitivity: float, monotonic: bool, rounds: int = 1
) -> float:
    """epsilon/(2 Delta) per round (epsilon/Delta when monotone), clamped to a finite value."""
    gamma = epsilon / (rounds * sensitivity * (1.0 if monotonic else 2.0))
    return min(gamma, 1e300) if gamma > 0.0 else 5e-324


def _common(
    scores: npt.ArrayLike,
    epsilon: PrivacyParam,
    sensitivity: Real,
    monotonic: bool,
    rng: RngLike,
    mode: str,
) -> tuple[_Scores, float, float, bool, str, BitGenerator]:
    eps = _v.epsilon(epsilon)
    sens = _v.positive("sensitivity", sensitivity)
    mono = _flag("monotonic", monotonic)
    mode = _insecure.mode(mode)
    arr = _scores(scores, mode)
    bg = _core.secure_rng(rng)
    return arr, eps, sens, mono, mode, bg


# ---------------------------------------------------------------- mechanisms


def exponential_mechanism(
    scores: npt.ArrayLike,
    *,
    epsilon: PrivacyParam,
    sensitivity: Real = 1.0,
    monotonic: bool = False,
    rng: RngLike = None,
    mode: str = "secure",
    budget: SupportsSpend | None = None,
    label: str | None = None,
) -> int:
    """Choose candidate ``i`` with probability proportional to
    ``exp(epsilon * scores[i] / (2 * sensitivity))`` (``/ sensitivity`` when monotonic).

    Parameters
    ----------
    scores : array_like of real, shape (m,)
        Utility of each candidate, finite, m >= 1.  Integer dtypes are used exactly on the
        secure path.  The candidates (indices) must not depend on the data.
    epsilon : float
        Privacy parameter, finite and > 0.
    sensitivity : float
        Largest change of any score when one record is added or removed (Delta u).
    monotonic : bool
        True only if every score is monotone in the data set (e.g. counts).
    rng : None, ChaCha20, numpy BitGenerator or Generator
        None: the calling thread's OS-keyed ChaCha20.
    mode : {"secure", "fast"}
        "secure": exact sampler on the public grid (below).  "fast": Gumbel-max in floating
        point, ``argmax(epsilon*u/(2*Delta) + Gumbel(0,1))`` (simulation only).
    budget : object with ``spend(epsilon, delta, *, label)``, optional
        Charged ``epsilon`` before anything is drawn; a zCDP
        :class:`~dpfast.accounting.PrivacyBudget` is charged ``rho = epsilon**2/8``
        (bounded range, Cesar & Rogers 2021), not ``epsilon**2/2``.  None: the active
        budget (``with b.active():``), if any; ``NO_BUDGET``: nothing.
    label : str, optional
        Recorded with the charge (default: the function's name).

    Returns
    -------
    int
        The chosen index.

    Privacy
    -------
    epsilon-DP under add/remove neighbours (Def. 3.4, Thm 3.10 of Dwork & Roth; monotone
    variant: exponent ``epsilon u / Delta``).  Secure mode samples *exactly* the
    exponential mechanism on the grid-rounded scores with the slightly smaller rate
    ``gamma = epsilon / W`` per grid step (``W = 2 Delta/G + 5``, ``G = 2**j`` with
    ``Delta/G in [2**12, 2**13)``): the rounding is paid for by the sensitivity, so the
    guarantee is exactly epsilon-DP with no slack; the loss of accuracy is a factor
    ``(2 Delta/G) / W >= 0.9993`` in the exponent.  Integer scores are not rounded:
    ``gamma = epsilon/(2 Delta)`` (rounded down to a dyadic), the textbook law.
    Gaps of more than ``2**50`` grid steps below the best score are clamped there (a
    transform of the same sensitivity; those candidates' weights are below
    ``exp(-2**50 gamma)``).  The algorithm (csrc/selection.c, ``em_draw``) is rejection
    sampling with a dyadic envelope and exact Bernoulli(exp(-x)) coins; no floating point
    touches a score-dependent probability.  Its running time depends on the scores (it is
    not constant time).  Fast mode: Gumbel-max has exactly the exponential mechanism's law
    in real arithmetic, but its floating point noise is not attack-safe.

    Accuracy
    --------
    ``P[u(out) <= OPT - (2 Delta/epsilon)(ln(m/|R_OPT|) + t)] <= exp(-t)`` (Thm 3.11,
    Cor. 3.12); see :func:`dpfast.accuracy.exponential_mechanism_error`.

    References
    ----------
    McSherry & Talwar, "Mechanism Design via Differential Privacy", FOCS 2007.
    Dwork & Roth 2014, Sec. 3.4.  Canonne, Kamath, Steinke, "The Discrete Gaussian for
    Differential Privacy", NeurIPS 2020.  Mironov, "On Significance of the Least
    Significant Bits for Differential Privacy", CCS 2012.
    """
    label = _label(label, "exponential_mechanism")
    arr, epsilon, sensitivity, monotonic, mode, rng = _common(
        scores, epsilon, sensitivity, monotonic, rng, mode
    )
    # plan first: nothing is charged for parameters that fail
    plan = _exponential_plan(epsilon, sensitivity, monotonic, arr, mode)
    charged = _v.budget(budget)
    if charged is not None:
        charge(charged, _selection_cost("exponential", epsilon), label)
    return _exponential_draw(arr, plan, rng)


def _exponential_plan(
    epsilon: float, sensitivity: float, monotonic: bool, arr: _Scores, mode: str
) -> tuple[float, ...]:
    """The exponential mechanism's plan, from public parameters only: the secure grid
    ``(inv_grid, g, s)`` (:func:`_grid`) or the fast path's ``(gamma,)``."""
    if mode == "secure":
        return _grid(epsilon, sensitivity, monotonic, arr.dtype == np.int64)
    return (_fast_gamma(epsilon, sensitivity, monotonic),)


def _exponential_draw(arr: _Scores, plan: tuple[float, ...], rng: BitGenerator) -> int:
    """One draw of the planned exponential mechanism (nothing validated or charged)."""
    if len(plan) == 3:
        inv_grid, g, s = plan
        return int(_core.em_secure(arr, inv_grid, int(g), int(s), rng))
    return int(_core.noisy_max_fast(arr, plan[0], _core.SEL_GUMBEL, rng))


def exponential_release(
    scores: npt.ArrayLike,
    *,
    epsilon: PrivacyParam,
    sensitivity: Real = 1.0,
    monotonic: bool = False,
    rng: BitGenerator,
    mode: str = "secure",
) -> int:
    """:func:`exponential_mechanism` for a composite that has charged its whole cost and
    resolved ``rng`` and ``mode`` (which warned once): the same checks of the scores and
    parameters, the same plan and the same draw, nothing charged and no warning.  Not
    exported."""
    eps = _v.epsilon(epsilon)
    sens = _v.positive("sensitivity", sensitivity)
    mono = _flag("monotonic", monotonic)
    arr = _scores(scores, mode)
    return _exponential_draw(arr, _exponential_plan(eps, sens, mono, arr, mode), rng)


def _noise_grid(
    epsilon: float, sensitivity: float, monotonic: bool, arr: _Scores
) -> tuple[float, int, int]:
    inv_grid, g, s = _grid(epsilon, sensitivity, monotonic, arr.dtype == np.int64)
    if Fraction(g, 2**s) < _MIN_NOISE_GAMMA:
        raise PrivacyParameterError(
            "epsilon / sensitivity is too small for the exact noisy-max sampler (the noise "
            "would exceed 2**40 grid steps); use a larger epsilon or mode='fast'; got "
            f"epsilon={epsilon!r}, sensitivity={sensitivity!r}"
        )
    return inv_grid, g, s


@overload
def report_noisy_max(
    scores: npt.ArrayLike,
    *,
    epsilon: PrivacyParam,
    sensitivity: Real = ...,
    monotonic: bool = ...,
    noise: str = ...,
    return_value: Literal[False] = ...,
    value_epsilon: PrivacyParam | None = ...,
    rng: RngLike = ...,
    mode: str = ...,
    budget: SupportsSpend | None = ...,
    label: str | None = ...,
) -> int: ...
@overload
def report_noisy_max(
    scores: npt.ArrayLike,
    *,
    epsilon: PrivacyParam,
    sensitivity: Real = ...,
    monotonic: bool = ...,
    noise: str = ...,
    return_value: Literal[True],
    value_epsilon: PrivacyParam | None = ...,
    rng: RngLike = ...,
    mode: str = ...,
    budget: SupportsSpend | None = ...,
    label: str | None = ...,
) -> tuple[int, float]: ...
@overload
def report_noisy_max(
    scores: npt.ArrayLike,
    *,
    epsilon: PrivacyParam,
    sensitivity: Real = ...,
    monotonic: bool = ...,
    noise: str = ...,
    return_value: bool,
    value_epsilon: PrivacyParam | None = ...,
    rng: RngLike = ...,
    mode: str = ...,
    budget: SupportsSpend | None = ...,
    label: str | None = ...,
) -> int | tuple[int, float]: ...
def report_noisy_max(
    scores: npt.ArrayLike,
    *,
    epsilon: PrivacyParam,
    sensitivity: Real = 1.0,
    monotonic: bool = False,
    noise: str = "laplace",
    return_value: bool = False,
    value_epsilon: PrivacyParam | None = None,
    rng: RngLike = None,
    mode: str = "secure",
    budget: SupportsSpend | None = None,
    label: str | None = None,
) -> int | tuple[int, float]:
    """Add independent noise to every score and report the index of the largest.

    Parameters
    ----------
    scores : array_like of real, shape (m,)
        Finite scores, m >= 1; the candidates must not depend on the data.
    epsilon : float
        Privacy parameter of the selection, finite and > 0.
    sensitivity : float
        Delta: the largest change of any score when one record is added or removed.
    monotonic : bool
        True only for monotone scores such as counts (Claim 3.9's setting).
    noise : {"laplace", "exponential"}
        Laplace of scale ``2 Delta/epsilon`` (``Delta/epsilon`` when monotonic), or one-sided
        exponential of the same scale (whose law is permute-and-flip's).  Gaussian noise is
        not offered: report noisy max with Gaussian noise is not epsilon-DP (Dwork & Roth,
        Sec. 3.5.3).
    return_value : bool
        Also release the chosen score with *fresh* Laplace noise of scale
        ``Delta/value_epsilon`` (the selection's noise is never released).
    value_epsilon : float, optional
        Privacy parameter of the released value; default ``epsilon``.
    rng, mode, budget
        As in :func:`exponential_mechanism`.  The budget is charged the total epsilon (a
        zCDP budget ``selection_rho("report_noisy_max", epsilon)`` = ``epsilon**2/2``
        without ``return_value``).

    Returns
    -------
    int, or (int, float) when ``return_value``

    Privacy
    -------
    The selection is epsilon-DP (Claim 3.9 for monotone counting queries with scale
    ``Delta/epsilon``; scale ``2 Delta/epsilon`` for general scores).  With
    ``return_value`` the value is a Laplace mechanism on one score of sensitivity Delta,
    ``value_epsilon``-DP, so the pair is ``(epsilon + value_epsilon)``-DP (Thm 3.14), and that
    total is what the budget is charged.
    Secure mode works on the grid-rounded scores (as :func:`exponential_mechanism`) with
    exact integer noise: discrete Laplace (two-sided geometric) or geometric noise of rate
    ``gamma = epsilon/W`` per grid step, ties broken uniformly at random.  Claim 3.9's proof
    carries over: with the other noises fixed, candidate i wins iff its noise clears a
    threshold, which moves between neighbours by an *integer* number of grid steps at most
    ``W``, and the discrete noises' tails shrink by at most ``exp(-gamma n)`` over n steps
    (csrc/selection.c, ``dpf_noisy_max_secure``), so the guarantee is exactly epsilon-DP.
    For exponential noise the law on the grid is exactly that of continuous exponential
    noise (memorylessness).  The
    released value goes through :func:`dpfast.mechanisms.laplace_mechanism` (secure) or
    float Laplace noise (fast).

    Accuracy
    --------
    With probability >= 1 - beta every noise is below ``b ln(m/beta)`` in absolute value
    (Thm 3.8's union bound), so the chosen score is within ``2 b ln(m/beta)`` of the best,
    ``b`` the noise scale; see :func:`dpfast.accuracy.report_noisy_max_error`.

    References
    ----------
    Dwork & Roth 2014, Claim 3.9 and Sec. 3.5.3.  Ding, Kifer, Saghaian, Steinke, Wang,
    Xiao, Zhang, "The Permute-and-Flip Mechanism is Identical to Report-Noisy-Max with
    Exponential Noise", 2021.
    """
    label = _label(label, "report_noisy_max")
    if isinstance(noise, str) and noise == "gaussian":
        raise PrivacyParameterError(
            "noise must be 'laplace' or 'exponential'; report noisy max with Gaussian noise is "
            "not epsilon-DP (Dwork & Roth, Sec. 3.5.3); got 'gaussian'"
        )
    noise = _v.choice("noise", noise, ("laplace", "exponential"))
    return_value = _flag("return_value", return_value)
    v_eps = (
        _v.epsilon(value_epsilon, "value_epsilon") if value_epsilon is not None else None
    )
    arr, eps, sens, mono, mode, bg = _common(
        scores, epsilon, sensitivity, monotonic, rng, mode
    )
    value_eps = v_eps if v_eps is not None else eps
    kind = _core.SEL_LAPLACE if noise == "laplace" else _core.SEL_EXPONENTIAL
    # plan everything first: nothing is charged for parameters that fail
    grid = _noise_grid(eps, sens, mono, arr) if mode == "secure" else None
    gamma = _fast_gamma(eps, sens, mono) if mode == "fast" else 0.0
    if return_value:
        _plan_value_release(value_eps, sens, arr.dtype == np.int64, mode)
    charged = _v.budget(budget)
    if charged is not None and return_value:
        # a selection and a Laplace release: (eps + value_eps)-DP together
        charge(charged, Cost(_v.charged(eps) + _v.charged(value_eps), 0.0), label)
    elif charged is not None:
        charge(
            charged,
            _selection_cost(
                "report_noisy_max"
                if noise == "laplace"
                else "report_noisy_max_exponential",
                eps,
            ),
            label,
        )
    if grid is not None:
        idx = int(_core.noisy_max_secure(arr, *grid, kind, bg))
    else:
        idx = int(_core.noisy_max_fast(arr, gamma, kind, bg))
    if not return_value:
        return idx
    score = int(arr[idx]) if arr.dtype == np.int64 else float(arr[idx])
    value = _release_value(score, value_eps, sens, bg, mode)
    return idx, value


def _plan_value_release(
    epsilon: float, sensitivity: float, integer: bool, mode: str
) -> None:
    """Raise now (before any charge) if the value release below would refuse its scale."""
    if mode == "fast":
        if not sensitivity / epsilon < math.inf:
            raise PrivacyParameterError(
                f"value_epsilon {epsilon!r} is too small for "
                f"sensitivity {sensitivity!r}: infinite noise scale"
            )
    else:
        _draw.laplace_plan(epsilon, sensitivity, integer, 1, mode)


def _release_value(
    value: float, epsilon: float, sensitivity: float, rng: BitGenerator, mode: str
) -> float:
    """A fresh Laplace release of one score (sensitivity Delta), epsilon-DP (Thm 3.6):
    the secure float (or exact integer) Laplace draw of dpfast._draw, or float noise;
    charged with the selection."""
    return cast(float, _draw.laplace_release(value, epsilon, sensitivity, rng, mode))


def permute_and_flip(
    scores: npt.ArrayLike,
    *,
    epsilon: PrivacyParam,
    sensitivity: Real = 1.0,
    monotonic: bool = False,
    rng: RngLike = None,
    mode: str = "secure",
    budget: SupportsSpend | None = None,
    label: str | None = None,
) -> int:
    """Permute-and-flip (McKenna & Sheldon 2020): visit the candidates in a uniformly random
    order and stop at candidate ``r`` with probability
    ``exp(epsilon (u_r - max u) / (2 Delta))`` (``/ Delta`` when monotonic).

    It is implemented as what it is identical to: report noisy max with one-sided
    exponential noise of scale ``2 Delta/epsilon`` (Ding et al. 2021), the "Report One-Sided
    Noisy Arg-Max" of Dwork & Roth before Thm 3.13.  Its law is *not* the exponential
    mechanism's: Thm 3.13 claims it is, which is false (an erratum of the book): with two candidates of
    scores 0 and c, permute-and-flip picks the worse with probability
    ``exp(-epsilon c/(2 Delta))/2``, the exponential mechanism with
    ``1/(1 + exp(epsilon c/(2 Delta)))``.

    Parameters
    ----------
    scores, epsilon, sensitivity, monotonic, rng, mode, budget, label
        As in :func:`exponential_mechanism`, except that a zCDP budget is charged
        ``selection_rho("permute_and_flip", epsilon)`` = ``epsilon**2/2``.

    Returns
    -------
    int

    Privacy
    -------
    epsilon-DP (McKenna & Sheldon 2020), hence epsilon^2/2-zCDP; it is not
    epsilon-bounded range on non-monotone scores, so the exponential mechanism's
    epsilon^2/8 does not apply (:func:`selection_rho`).  Secure mode: exact geometric noise on the
    grid-rounded scores with uniform tie-breaking, which is exactly exponential noise on
    those scores (memorylessness); rate ``gamma = epsilon/W`` per grid step as in
    :func:`exponential_mechanism`.  Running time O(m), not constant time per candidate.

    Accuracy
    --------
    Never worse than the exponential mechanism in expected score (McKenna & Sheldon
    2020); the tail bound of Cor. 3.12 holds for it too (a union bound over the candidates
    whose noise would have to exceed the gap): see
    :func:`dpfast.accuracy.exponential_mechanism_error`.

    References
    ----------
    McKenna & Sheldon, "Permute-and-Flip: A new mechanism for differentially private
    selection", NeurIPS 2020.  Ding et al., "The Permute-and-Flip Mechanism is Identical to
    Report-Noisy-Max with Exponential Noise", 2021.
    """
    label = _label(label, "permute_and_flip")
    arr, epsilon, sensitivity, monotonic, mode, rng = _common(
        scores, epsilon, sensitivity, monotonic, rng, mode
    )
    grid = _noise_grid(epsilon, sensitivity, monotonic, arr) if mode == "secure" else None
    charged = _v.budget(budget)
    if charged is not None:
        charge(charged, _selection_cost("permute_and_flip", epsilon), label)
    if grid is not None:
        return int(_core.noisy_max_secure(arr, *grid, _core.SEL_EXPONENTIAL, rng))
    return int(
        _core.noisy_max_fast(
            arr, _fast_gamma(epsilon, sensitivity, monotonic), _core.SEL_EXPONENTIAL, rng
        )
    )


def top_k(
    scores: npt.ArrayLike,
    k: int,
    *,
    epsilon: PrivacyParam,
    sensitivity: Real = 1.0,
    monotonic: bool = False,
    rng: RngLike = None,
    mode: str = "secure",
    budget: SupportsSpend | None = None,
    label: str | None = None,
) -> I64Array:
    """The indices of k distinct candidates chosen by k rounds of the exponential mechanism
    ("peeling"), each with ``epsilon / k``, best first.

    Parameters
    ----------
    scores : array_like of real, shape (m,)
    k : int
        1 <= k <= m.
    epsilon : float
        Total privacy parameter; each round uses ``epsilon / k``.
    sensitivity, monotonic, rng, mode, budget, label
        As in :func:`exponential_mechanism`.

    Returns
    -------
    numpy.ndarray of int64, shape (k,)
        In selection order.

    Privacy
    -------
    epsilon-DP: each round is an ``epsilon/k``-DP exponential mechanism over the candidates
    not chosen yet (a range that depends only on earlier outputs), and k adaptive rounds
    compose to epsilon (Thm 3.16).  Durfee & Rogers (2019) give tighter (epsilon, delta)
    accounting for the same mechanism; it is not used here.  Secure mode: k exact rounds
    (O(k m) work).  Fast mode: one-shot Gumbel (add Gumbel noise of scale
    ``2 k Delta/epsilon`` once, report the k largest), which has exactly the law of k
    peeling rounds (Durfee & Rogers 2019).  The secure rounds check for Ctrl-C between
    slices of rounds; an interrupted call returns nothing (its budget was charged first).

    Accuracy
    --------
    Each round obeys Cor. 3.12 with ``epsilon/k`` over the remaining candidates.

    References
    ----------
    Durfee & Rogers, "Practical Differentially Private Top-k Selection with
    Pay-what-you-get Composition", NeurIPS 2019.  Dwork & Roth 2014, Thm 3.10, 3.16.
    """
    arr, epsilon, sensitivity, monotonic, mode, rng = _common(
        scores, epsilon, sensitivity, monotonic, rng, mode
    )
    k = _v.integer("k", k, minimum=1, maximum=arr.size)
    label = _label(label, "top_k")
    if mode == "secure":  # plan first: nothing is charged for parameters that fail
        inv_grid, g, s = _grid(
            epsilon, sensitivity, monotonic, arr.dtype == np.int64, rounds=k
        )
        charged = _v.budget(budget)
        if charged is not None:
            charge(charged, Cost(epsilon, 0.0), label)
        return _core.topk_secure(arr, inv_grid, g, s, k, rng)
    gamma = _fast_gamma(epsilon, sensitivity, monotonic, rounds=k)
    charged = _v.budget(budget)
    if charged is not None:
        charge(charged, Cost(epsilon, 0.0), label)
    return _core.topk_fast(arr, gamma, k, rng)


def exponential_mechanism_draws(
    scores: npt.ArrayLike,
    count: int,
    *,
    epsilon: PrivacyParam,
    sensitivity: Real = 1.0,
    monotonic: bool = False,
    rng: RngLike = None,
    mode: str = "secure",
) -> npt.NDArray[np.int64]:
    """``count`` independent draws of :func:`exponential_mechanism` on the same scores,
    validated and planned once (the same kernels and grid as ``count`` separate calls).

    For the package's mechanisms that sample many times from one law (Boosting for
    Queries draws k queries from D_t); not exported, and it takes no ``budget``: the
    caller has charged the whole composition before calling.

    Returns
    -------
    ndarray of int64, shape (count,)

    Privacy
    -------
    Each draw is epsilon-DP (see :func:`exponential_mechanism`); the ``count`` draws
    together are ``count * epsilon``-DP by basic composition (Dwork & Roth Thm 3.16).
    """
    arr, eps, sens, mono, mode, bg = _common(
        scores, epsilon, sensitivity, monotonic, rng, mode
    )
    k = _v.integer("count", count, minimum=0, maximum=2**40)
    out = np.empty(k, dtype=np.int64)
    if mode == "secure":
        inv_grid, g, s = _grid(eps, sens, mono, arr.dtype == np.int64)
        for i in range(k):
            out[i] = _core.em_secure(arr, inv_grid, g, s, bg)
        return out
    gamma = _fast_gamma(eps, sens, mono)
    for i in range(k):
        out[i] = _core.noisy_max_fast(arr, gamma, _core.SEL_GUMBEL, bg)
    return out
