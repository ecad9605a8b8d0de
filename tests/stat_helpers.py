"""Statistical helpers shared by the sampler tests."""

import numpy as np

# Statistical tests use fixed seeds and a tiny significance level, so a correct sampler
# fails with probability <= ALPHA per test, and a wrong one fails for sure at these n.
ALPHA = 1e-6


def chi2_pvalue(counts, probs):
    """Pearson chi-square p-value of observed counts against exact cell probabilities.

    Cells with expected count < 5 are pooled into their neighbour so the chi-square
    approximation holds."""
    from scipy import stats

    counts = np.asarray(counts, dtype=float)
    probs = np.asarray(probs, dtype=float)
    n = counts.sum()
    exp = probs * n
    obs_p, exp_p = [], []
    acc_o = acc_e = 0.0
    for o, e in zip(counts, exp):
        acc_o += o
        acc_e += e
        if acc_e >= 5:
            obs_p.append(acc_o)
            exp_p.append(acc_e)
            acc_o = acc_e = 0.0
    if acc_e > 0:
        obs_p[-1] += acc_o
        exp_p[-1] += acc_e
    obs_p, exp_p = np.array(obs_p), np.array(exp_p)
    stat = ((obs_p - exp_p) ** 2 / exp_p).sum()
    return stats.chi2.sf(stat, len(obs_p) - 1)
