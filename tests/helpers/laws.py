"""Seeded ChaCha20 generators and chi-square tests of integer draws against exact laws (the samplers' tests)."""

from __future__ import annotations

import numpy as np
import randomgen
from scipy import stats


def chacha(key: int) -> np.random.Generator:
    """A ChaCha20 generator (20 rounds) keyed with ``key``: the secure generator's cipher, seeded."""
    return np.random.Generator(randomgen.ChaCha(key=key, counter=0, rounds=20))


def chisquare_pvalue(draws: np.ndarray, support: np.ndarray, pmf: np.ndarray) -> float:
    """Chi-square of integer draws against an exact pmf on ``support``; the rest pooled as one cell."""
    observed = np.array([(draws == v).sum() for v in support] + [(~np.isin(draws, support)).sum()])
    expected = np.append(pmf, max(0.0, 1 - pmf.sum())) * draws.size
    keep = expected > 5
    observed, expected = observed[keep], expected[keep]
    return stats.chisquare(observed, expected * observed.sum() / expected.sum()).pvalue
