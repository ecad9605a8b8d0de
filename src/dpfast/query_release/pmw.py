"""Online private multiplicative weights via NumericSparse (Dwork & Roth 2014,
Algorithm 6; Hardt & Rothblum 2010)."""

from __future__ import annotations

import math
import threading
from typing import Any

import numpy as np

from .. import _core, _insecure
from .. import _validation as _v
from .._active import NO_BUDGET
from .._active import label as _label
from .._errors import PrivacyParameterError
from .._privacy import Cost, charge
from ..accounting._numeric import bisect_least
from ..sparse import NumericSparse
from ._mw import MWState, mwem_exponent, one_way_prior, project_factor
from ._types import Budget, FloatArray, Rng
from .baselines import plan_noise
from .cost import PrivacyCost
from .domain import Histogram
from .workloads import CellQuery, LinearQuery

__all__ = ["OnlinePMW", "pmw_theory_alpha", "pmw_min_alpha", "numeric_sparse_alpha"]

_SQRT512 = math.sqrt(512.0)


def _alpha_args(
    epsilon: float, delta: float, n: float, n_queries: int, beta: float
) -> tuple[float, float, float, int, float]:
    """The public parameters of the accuracy formulas, validated."""
    return (
        _v.epsilon(epsilon),
        _v.delta(delta),
        _v.positive("n_public", n),
        _v.integer("n_queries", n_queries, minimum=1, maximum=2**62),
        _v.open_probability("beta", beta),
    )


def _no_alpha(what: str) -> PrivacyParameterError:
    return PrivacyParameterError(
        f"{what} is not a finite positive number for these parameters (epsilon * n_public "
        "too small, or the universe too large, for the theorem)"
    )


def _alpha_sv(
    c: float, epsilon: float, delta: float, n: float, n_queries: int, beta: float
) -> float:
    L = math.log(2.0 * n_queries) + math.log(4.0 * c / beta)
    scale = 1.0 / epsilon / n  # inf rather than ZeroDivisionError
    if delta == 0.0:
        a = 9.0 * c * L * scale
    else:
        a = L * math.sqrt(c * math.log(2.0 / delta)) * (_SQRT512 + 1.0) * scale
    if not 0.0 < a < math.inf:
        raise _no_alpha("alpha_SV")
    return a


def numeric_sparse_alpha(
    c: float, epsilon: float, delta: float, n: float, n_queries: int, beta: float
) -> float:
    """α_SV of NumericSparse (Dwork & Roth Thm 3.28) for k = 2|Q| one-sided queries of
    sensitivity 1/n, in normalised units: 9c(ln k + ln(4c/β))/(εn) if δ = 0, else
    (ln k + ln(4c/β)) sqrt(c ln(2/δ)) (sqrt(512) + 1)/(εn).  k = 2|Q| in both branches
    (erratum E1).  ``PrivacyParameterError`` when that is not a finite positive number."""
    c = _v.positive("c", c)
    return _alpha_sv(c, *_alpha_args(epsilon, delta, n, n_queries, beta))


def _cutoff(lx: float, a: float) -> float:
    """4 ln|X| / α² (inf when α² underflows, 0 when it overflows)."""
    sq = a * a
    return 4.0 * lx / sq if sq > 0.0 else math.inf


def pmw_theory_alpha(
    epsilon: float, delta: float, n: float, universe_size: int, n_queries: int, beta: float
) -> tuple[float, int]:
    """The smallest α of Thm 4.14/4.15 in normalised units, and c = ceil(4 ln|X|/α²).

    The fixed point α = α_SV(c(α)) (Dwork & Roth Thm 4.14/4.15, with the corrected constants: 36
    instead of 32, erratum E2; α instead of α² in the δ > 0 denominator, erratum E3):
    α³ = 36 ln|X| (ln 2|Q| + ln(16 ln|X|/(α²β)))/(εn) for δ = 0, and
    α² = (2+32√2) sqrt(ln|X| ln(2/δ)) (ln 2|Q| + ln(16 ln|X|/(α²β)))/(εn) for δ > 0.
    ``PrivacyParameterError`` when the iteration leaves the positive doubles."""
    epsilon, delta, n, n_queries, beta = _alpha_args(epsilon, delta, n, n_queries, beta)
    lx = math.log(_v.integer("universe_size", universe_size, minimum=2))
    scale = 1.0 / epsilon / n
    a = 0.5
    for _ in range(500):
        c = _cutoff(lx, a)
        L = (
            math.log(2.0 * n_queries) + math.log(4.0 * c / beta)
            if 0.0 < c < math.inf
            else c
        )
        if not 0.0 < L < math.inf:
            raise _no_alpha("the fixed point alpha")
        if delta == 0.0:
            a = (36.0 * lx * L * scale) ** (1.0 / 3.0)
        else:
            a = (
                (2.0 + 32.0 * math.sqrt(2.0))
                * math.sqrt(lx * math.log(2.0 / delta))
                * L
                * scale
            ) ** 0.5
        if not 0.0 < a < math.inf:
            raise _no_alpha("the fixed point alpha")
    c = _cutoff(lx, a)
    if not 0.0 < c < 2.0**62:
        raise _no_alpha("the cut-off c")
    return a, math.ceil(c)


def pmw_min_alpha(
    epsilon: float, delta: float, n: float, universe_size: int, n_queries: int, beta: float
) -> float:
    """The smallest α that :meth:`OnlinePMW.from_accuracy` accepts: the least α with
    α ≥ α_SV(c) for the integer cut-off c = ceil(4 ln|X|/α²) (a little above the
    continuous fixed point of :func:`pmw_theory_alpha`, because c is rounded up).
    ``PrivacyParameterError`` when the doubles hold none."""
    lo, _ = pmw_theory_alpha(epsilon, delta, n, universe_size, n_queries, beta)
    epsilon, delta, n, n_queries, beta = _alpha_args(epsilon, delta, n, n_queries, beta)
    lx = math.log(universe_size)

    def ok(a: float) -> bool:
        x = _cutoff(lx, a)
        if not x < 2.0**62:
            return False
        return a >= _alpha_sv(max(1, math.ceil(x)), epsilon, delta, n, n_queries, beta)

    lo *= 0.5
    hi = lo * 4.0
    while not ok(hi):
        hi *= 2.0
        if not hi < math.inf:
            raise _no_alpha("the smallest feasible alpha")
    # ok() is monotone: c(α) falls, so α_SV(c(α)) falls
    return bisect_least(ok, lo, hi)


class _Charge:
    """Hands NumericSparse's own charge to the caller's budget together with the warm
    start's, so that the whole cost is one spend made before anything is drawn."""

    __slots__ = ("budget", "extra", "label")

    def __init__(self, budget: Budget, extra: float, label: str) -> None:
        self.budget, self.extra, self.label = budget, extra, label

    def spend(
        self, epsilon: float, delta: float = 0.0, *, label: str | None = None
    ) -> None:
        charge(
            self.budget,
            Cost(_v.charged(epsilon) + _v.charged(self.extra), delta),
            self.label,
        )


class OnlinePMW:
    """Online private multiplicative weights: answer an adaptive stream of counting
    queries from a public MW hypothesis, and reach the data only through one
    NumericSparse stream that fires when the hypothesis is off.

    For each query f with hypothesis estimate e = n f(A) (Dwork & Roth Alg. 6, in counts):
    ask NumericSparse ``f(x) - e >= T``; only if that is ⊥ ask ``e - f(x) >= T``
    (erratum E7: never worse for the cut-off, same privacy theorem; ``ask_both=True``
    gives the book's form).  ⊥⊥: answer e (kind ``"hypothesis"``).  ⊤: answer the
    released noisy value, clipped to [0, n] (kind ``"measured"``), and update A.  After
    the c-th ⊤ NumericSparse halts and every later answer is e from the frozen A (kind
    ``"exhausted"``; the data is never read again).

    Parameters
    ----------
    histogram : Histogram
        The private data.  Only NumericSparse reads it.
    epsilon, delta : float
        NumericSparse's (ε, δ) (Dwork & Roth Alg. 3 splits and noise).
    n_public : float
        The public number of records (erratum E5).  On the secure path NumericSparse's
        value range is ``n_public + abs(threshold)``, which covers every per-query
        threshold (a count beyond it is clamped there).
    cutoff : int
        c, the number of updates (⊤ answers) before the halt.
    threshold : float, optional
        T in counts.  Exactly one of ``threshold`` and ``tau``.
    tau : float, optional
        T = τ σ₁ with σ₁ = 2c/ε₁ the threshold-noise scale (the prototype's tuning unit;
        τ ≈ 8-16 works on UCI Adult, docs/release.md).
    step : {"adaptive", "book", "project"}
        Update on a measured value a: ``"book"`` Alg. 5, A_i ← A_i exp(±η f_i) with
        η = α/2; ``"adaptive"`` MWEM's A_i ← A_i exp(f_i (a - e)/(2n));
        ``"project"`` the KL projection onto f(A) = a/n.  Privacy-neutral.
    alpha : float, optional
        The book step's α (normalised); default T/(2n) (Dwork & Roth have T = 2α).
    init : float, optional
        ε_init for a warm start from noisy one-way marginals (Lap(d/ε_init)), charged
        in addition to ε.
    replay : int
        After each update, re-apply the adaptive step to every past measurement this many
        times (post-processing).
    ask_both, clip : bool
    rng, mode : as for :class:`dpfast.sparse.NumericSparse`
    budget : charged :attr:`privacy_cost` once, before anything is drawn (None: the budget
        active at construction, ``with b.active():``, if any).
    label : str, optional; recorded with the charge (default ``"OnlinePMW(cutoff=c)"``).

    One object may be shared by threads: each :meth:`answer` (comparisons and update)
    holds the object's lock.

    Privacy
    -------
    (ε, δ)-DP (Dwork & Roth Thm 4.13): x is reached only through NumericSparse
    (Thm 3.27); the one-sided queries f(x) - e and e - f(x) have sensitivity 1 because e
    is computed from public outputs; everything else (steps, threshold, replay, order,
    clipping, the restart from uniform weights should an update leave none) is
    post-processing.  A warm start adds ε_init (basic composition).
    With δ = 0 the whole is also (ε + ε_init)²/2-zCDP.

    Accuracy
    --------
    Only :meth:`from_accuracy` carries a theorem (Thm 4.14/4.15: every answer within 3α
    with probability ≥ 1 - β); the practical form has none.  At n ≈ 5e4 the theorem's
    parameters make NumericSparse essentially never fire (docs/release.md).

    References
    ----------
    Dwork & Roth 2014, Alg. 3, 5, 6, Thm 4.10-4.15; Hardt & Rothblum, FOCS 2010;
    Gupta, Roth & Ullman, TCC 2012.
    """

    def __init__(
        self,
        histogram: Histogram,
        *,
        epsilon: float,
        n_public: float,
        cutoff: int,
        threshold: float | None = None,
        tau: float | None = None,
        delta: float = 0.0,
        step: str = "adaptive",
        alpha: float | None = None,
        init: float | None = None,
        replay: int = 0,
        ask_both: bool = False,
        clip: bool = True,
        rng: Rng = None,
        mode: str = "secure",
        budget: Budget = None,
        label: str | None = None,
    ) -> None:
        if not isinstance(histogram, Histogram):
            raise TypeError(
                f"histogram must be a Histogram; got {type(histogram).__name__}"
            )
        epsilon = _v.epsilon(epsilon)
        delta = _v.delta(delta)
        n = _v.positive("n_public", n_public)
        cutoff = _v.integer("cutoff", cutoff, minimum=1, maximum=2**40)
        self.step_rule = _v.choice("step", step, ("adaptive", "book", "project"))
        self.replay = _v.integer("replay", replay, minimum=0, maximum=10**4)
        for nm, flag in (("ask_both", ask_both), ("clip", clip)):
            if not isinstance(flag, bool):
                raise TypeError(f"{nm} must be a bool")
        if (threshold is None) == (tau is None):
            raise PrivacyParameterError("give exactly one of threshold and tau")
        if tau is not None:
            tau = _v.positive("tau", tau)
            eps1 = (
                8.0 * epsilon / 9.0
                if delta == 0.0
                else _SQRT512 / (_SQRT512 + 1.0) * epsilon
            )
            sigma1 = (
                2.0 * cutoff
                if delta == 0.0
                else math.sqrt(32.0 * cutoff * math.log(2.0 / delta))
            ) / eps1
            threshold = tau * sigma1
        threshold = _v.finite("threshold", threshold)
        alpha = threshold / (2.0 * n) if alpha is None else _v.positive("alpha", alpha)
        eps_init = None if init is None else _v.epsilon(init, "init")
        mode = _insecure.mode(mode)
        if eps_init:  # the warm start's Laplace plan, before NumericSparse charges
            dom = histogram.domain
            plan_noise(eps_init, None, float(dom.ndim), sum(dom.shape), mode)
        # Every per-query threshold, e + T or T - e with e in [0, n], lies within
        # n + |T|: on the secure path that public value range makes NumericSparse's grid
        # cover it, so no query is refused after the charge (a count beyond it is clamped
        # there: 1-Lipschitz, no sensitivity grows).
        vrange = None
        if mode == "secure":
            vrange = (n + abs(threshold)) * (1 + 2.0**-20)
            if not vrange < math.inf:
                raise PrivacyParameterError(
                    f"n_public + |threshold| must be finite; got n_public={n_public!r}, "
                    f"threshold={threshold!r}"
                )
        rng = _core.secure_rng(rng)
        budget = _v.budget(budget)  # resolved once: None -> the active budget
        label = _label(label, f"OnlinePMW(cutoff={cutoff})")
        self.histogram = histogram
        self.n_public = n
        self.threshold = threshold
        self.eta = alpha / 2.0
        self.ask_both = ask_both
        self.clip = clip
        self.init = eps_init
        self._rng = rng
        self._mode = mode
        charger = NO_BUDGET if budget is None else _Charge(budget, eps_init or 0.0, label)
        # NumericSparse validates (ε, δ, c), then charges (through _Charge, the whole cost
        # including the warm start's), then draws its first threshold noise.
        self._ns = NumericSparse(
            threshold,
            cutoff=cutoff,
            epsilon=epsilon,
            delta=delta,
            sensitivity=1.0,
            rng=rng,
            mode=mode,
            budget=charger,
            value_range=vrange,
        )
        prior = one_way_prior(histogram, eps_init, rng, mode) if eps_init else None
        self._state = MWState(histogram.domain, n, prior, cache=True)
        self._released: list[tuple[Any, float]] = []  # every measured (query, value)
        self._tables: dict[int, FloatArray] = {}  # the data's marginals, on first use
        #: 3αn, the accuracy bound of :meth:`from_accuracy` (None otherwise)
        self.guarantee: float | None = None
        self._lock = threading.Lock()  # one answer (probe + update) at a time
        self.data_reads = 0  # how many times the oracle read the data

    @classmethod
    def from_accuracy(
        cls,
        histogram: Histogram,
        *,
        alpha: float,
        beta: float,
        epsilon: float,
        n_public: float,
        n_queries: int,
        delta: float = 0.0,
        rng: Rng = None,
        mode: str = "secure",
        budget: Budget = None,
        label: str | None = None,
    ) -> OnlinePMW:
        """The theorem's parameters (Dwork & Roth Alg. 6, Thm 4.14/4.15): c =
        ceil(4 ln|X|/α²), T = (α + α_SV(c)) n (erratum E6: equals 2α n at the fixed point
        and keeps both conditions of Thm 4.10 for α above it), book step η = α/2, uniform
        start.  Every answer is within 3α n with probability ≥ 1 - β over at most
        ``n_queries`` queries.  Raises if α is below the fixed point (the message gives
        the smallest feasible α)."""
        if not isinstance(histogram, Histogram):
            raise TypeError(
                f"histogram must be a Histogram; got {type(histogram).__name__}"
            )
        alpha = _v.positive("alpha", alpha)
        epsilon, delta, n, nq, beta = _alpha_args(epsilon, delta, n_public, n_queries, beta)
        size = histogram.domain.size
        if size < 2:
            raise PrivacyParameterError("the universe needs at least 2 cells")
        x = _cutoff(math.log(size), alpha)
        if not x <= 2.0**40:
            _v._fail("alpha", "large enough that c = ceil(4 ln|X|/alpha^2) <= 2**40", alpha)
        c = max(1, math.ceil(x))
        a_sv = _alpha_sv(c, epsilon, delta, n, nq, beta)
        if alpha < a_sv:
            try:
                amin = f"the fixed point {pmw_min_alpha(epsilon, delta, n, size, nq, beta):.6g}"
            except PrivacyParameterError:
                amin = "a fixed point that these parameters do not have"
            raise PrivacyParameterError(
                f"alpha must be at least {amin} (Thm 4.14/4.15, with "
                f"c = ceil(4 ln|X|/alpha^2)); got {alpha!r}"
            )
        self = cls(
            histogram,
            epsilon=epsilon,
            delta=delta,
            n_public=n,
            cutoff=c,
            threshold=(alpha + a_sv) * n,
            step="book",
            alpha=alpha,
            rng=rng,
            mode=mode,
            budget=budget,
            label=label,
        )
        self.guarantee = 3.0 * alpha * n
        return self

    # ------------------------------------------------------------------ answering

    @property
    def privacy_cost(self) -> PrivacyCost:
        eps, dlt = self._ns.privacy_cost
        # the exact sum _Charge spends (a float sum rounded to nearest could report less:
        # 2.508 + 0.26 was 2.7679999999999993), carried as an Amount like every epsilon
        total_x = _v.charged(eps) + (_v.charged(self.init) if self.init else 0)
        total = _v.Amount(total_x)
        parts = (("numeric_sparse", eps),) + ((("init", self.init),) if self.init else ())
        rho = _v.float_up(total_x * total_x / 2) if dlt == 0.0 else None
        return PrivacyCost(total, dlt, rho, parts)

    @property
    def cutoff(self) -> int:
        return int(self._ns.cutoff)

    @property
    def updates_used(self) -> int:
        return int(self._ns.positives)

    @property
    def halted(self) -> bool:
        return bool(self._ns.halted)

    def _read(self, q: CellQuery | LinearQuery) -> float:
        """The data oracle: the query's exact count.  The only place the data is read
        (the marginal table of a cell query's attributes is computed once and kept)."""
        self.data_reads += 1
        if type(q) is not CellQuery and isinstance(q, LinearQuery):
            return q.evaluate(self.histogram.counts)
        table = self._tables.get(q.mask)
        if table is None:
            dom = self.histogram.domain
            table = np.empty(dom.size // q.n_cells)
            _core.rel_reduce(self.histogram.counts, self._state._shape, q.mask, table)
            self._tables[q.mask] = table
        return float(table[q.cell])

    def answer(self, query: CellQuery | LinearQuery) -> tuple[float, str]:
        """Answer one query (a :class:`CellQuery`, on the compiled path, or a
        :class:`LinearQuery` with weights in [0, 1]); returns ``(value, kind)`` with value
        in counts and kind in {"hypothesis", "measured", "exhausted"}."""
        dom = self.histogram.domain
        cell = type(query) is CellQuery
        if not (cell or isinstance(query, (CellQuery, LinearQuery))) or (
            query.domain is not dom and query.domain != dom
        ):
            raise TypeError(
                "query must be a CellQuery or LinearQuery over the histogram's domain"
            )
        cell = cell or isinstance(query, CellQuery)
        if (
            not cell
            and self.step_rule == "project"
            and isinstance(query, LinearQuery)
            and not query.binary
        ):
            raise TypeError(
                "step='project' needs a 0/1 query (the KL projection of a "
                "[0, 1]-valued query has no closed form)"
            )
        with self._lock:
            state = self._state
            if self._ns.halted:
                return state.estimate(query), "exhausted"
            # f'_{2i-1}(x) = f(x) - e >= T is asked as f(x) against the threshold e + T
            # (its released value f(x) + Lap is e + E_{2i-1}); only if it is ⊥ (E7),
            # f'_{2i}(x) = e - f(x) >= T as -f(x) against T - e (released -f(x) + Lap).
            est = state.estimate(query)
            if cell:
                value = _core.rel_pmw_probe(
                    self._ns, est, self._read(query), self.threshold, self.ask_both
                )
            else:
                value = self._probe(self._read(query), est)
            if value != value:
                return est, "hypothesis"
            if self.clip:
                value = min(max(value, 0.0), self.n_public)
            self._update(query, est, value)
            return value, "measured"

    def _probe(self, truth: float, est: float) -> float:
        """The two one-sided NumericSparse queries of rel_pmw_probe, from Python (for
        linear queries): the same order and the same E7 rule."""
        ns = self._ns
        value = ns.step(truth, threshold=est + self.threshold)
        if (value != value or self.ask_both) and not ns.halted:
            r2 = ns.step(-truth, threshold=self.threshold - est)
            if r2 == r2 and value != value:
                value = -r2
        return float(value)

    def _update(self, query: CellQuery | LinearQuery, est: float, value: float) -> None:
        self._step(query, est, value)
        self._state.restart_if_degenerate()

    def _step(self, query: CellQuery | LinearQuery, est: float, value: float) -> None:
        state = self._state
        n = self.n_public
        if self.step_rule == "book":
            # Alg. 5: r = f if a < e else 1 - f, x_i <- x_i exp(-eta r_i); after
            # renormalising that is x_i exp(+-eta f_i).
            state.step(query, self.eta if value > est else -self.eta)
        elif self.step_rule == "project":
            state.step(query, math.log(project_factor(est, value, n)))
        else:
            state.step(query, mwem_exponent(est, value, n))
        self._released.append((query, value))
        if not self.replay:
            return
        qs = [q for q, _ in self._released]
        if all(isinstance(q, CellQuery) for q in qs):
            state.fit_cells(
                np.array([q.mask for q in qs], dtype=np.uint32),
                np.stack([q.vals for q in qs]),
                np.array([v for _, v in self._released]),
                self.replay,
            )
            return
        for _ in range(self.replay):
            for q, v in self._released:
                state.step(q, mwem_exponent(state.estimate(q), v, n))

    def synthetic(self) -> Histogram:
        """The current hypothesis as a synthetic :class:`Histogram` (total n_public):
        public, free to export."""
        return Histogram(self.histogram.domain, self._state.counts())

    def __repr__(self) -> str:
        return (
            f"OnlinePMW(cutoff={self.cutoff}, updates_used={self.updates_used}, "
            f"halted={self.halted})"
        )
