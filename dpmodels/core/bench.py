"""``dpmodels bench noise``: the noise samplers side by side on the full census shape.

The census-like PGSR shape has 1 + 52 + 3,144 regions and N = 1,000 sizes: about 3.2
million noisy counts per release.  Measured in one run, each candidate repeated: numpy's
floating-point geometric difference (today's inexact baseline), OpenDP's exact discrete
Laplace (when installed), and this project's exact sampler over several bit generators
(ChaCha20 and AES-128-CTR keyed from OS entropy are cryptographically secure; PCG64 is
seeded, for reference).  The exact discrete Gaussian is timed beside them at ``sigma^2 =
scale^2`` and at the census-scale variance ``sigma^2 = 1e10`` (:data:`CENSUS_SIGMA2`, beyond int64:
the sampler's limb path), the latter beside OpenDP's ``make_gaussian`` on integers.  Ratios are to
the numpy baseline; never asserted in tests.

A second table times the exact exponential mechanism (:func:`dpmodels.core.selection.
exponential_mechanism`) on scores of different shapes: it is rejection sampling, so its running
time depends on the scores (a timing side channel that release manifests state); these are the
figures the README quotes.
"""

from __future__ import annotations

import math
import secrets
import statistics
import time
from fractions import Fraction

import numpy as np
import pandas as pd
import randomgen

from .gaussian import discrete_gaussian
from .randomness import secure_generator
from .samplers import discrete_laplace
from .selection import exponential_mechanism

__all__ = ["CENSUS_CELLS", "CENSUS_SIGMA2", "bench_noise", "bench_em_timing", "run_bench"]

#: Values per draw: the census shape, 1,000 cells in each of the 1 + 52 + 3,144 nation, state and county nodes.
CENSUS_CELLS = (1 + 52 + 3144) * 1000
#: The discrete Gaussian's census-scale variance parameter (its exact acceptance test leaves int64 there).
CENSUS_SIGMA2 = 10**10


def _numpy_geometric(scale: Fraction, n: int) -> None:
    rng = np.random.default_rng()
    p = -math.expm1(-1 / float(scale))
    rng.geometric(p, n) - rng.geometric(p, n)


def _opendp(scale: Fraction, n: int) -> None:
    import opendp.prelude as dp

    dp.enable_features("contrib")
    meas = dp.m.make_laplace(dp.vector_domain(dp.atom_domain(T=int)), dp.l1_distance(T=int), scale=float(scale))
    meas([0] * n)


def _opendp_gaussian(scale: Fraction, n: int) -> None:
    import opendp.prelude as dp

    dp.enable_features("contrib")
    sigma = math.sqrt(CENSUS_SIGMA2)  # 1e5 exactly: the variance parameter is scale^2
    meas = dp.m.make_gaussian(dp.vector_domain(dp.atom_domain(T=int)), dp.l2_distance(T=int), scale=sigma)
    meas([0] * n)


def _exact_on(bit_generator):
    def run(scale: Fraction, n: int) -> None:
        discrete_laplace(scale, n, np.random.Generator(bit_generator()))

    return run


def _candidates() -> list[tuple[str, str, object]]:
    rows = [("numpy geometric difference (float, PCG64)", "no / no", _numpy_geometric)]
    try:
        import opendp.prelude  # noqa: F401

        has_opendp = True
        rows.append(("OpenDP make_laplace (exact, OS randomness)", "yes / yes", _opendp))
    except ImportError:
        has_opendp = False
    rows += [
        ("dpmodels exact, ChaCha20 (default)", "yes / yes", lambda s, n: discrete_laplace(s, n, secure_generator())),
        (
            "dpmodels exact, AES-128-CTR",
            "yes / yes",
            _exact_on(lambda: randomgen.AESCounter(key=secrets.randbits(128))),
        ),
        ("dpmodels exact, PCG64 (seeded)", "yes / no", _exact_on(lambda: np.random.PCG64(0))),
        (
            "dpmodels exact discrete Gaussian, ChaCha20 (sigma^2 = scale^2)",
            "yes / yes",
            lambda s, n: discrete_gaussian(s * s, n, secure_generator()),
        ),
        (
            "dpmodels exact discrete Gaussian, ChaCha20 (sigma^2 = 1e10)",
            "yes / yes",
            lambda s, n: discrete_gaussian(CENSUS_SIGMA2, n, secure_generator()),
        ),
    ]
    if has_opendp:
        rows.append(
            ("OpenDP make_gaussian on ints (exact, OS randomness, sigma^2 = 1e10)", "yes / yes", _opendp_gaussian)
        )
    return rows


def bench_noise(cells: int = CENSUS_CELLS, scale=Fraction(6), repeats: int = 3, opendp_cells: int | None = None):
    """Seconds (min / median / max over ``repeats``) to draw ``cells`` values with each candidate.

    OpenDP is slow; ``opendp_cells`` times it on fewer values and scales linearly (said in the row).
    """
    scale = Fraction(scale)
    rows = []
    for name, exact_secure, run in _candidates():
        n = opendp_cells if (opendp_cells and name.startswith("OpenDP")) else cells
        times = []
        for _ in range(repeats):
            tick = time.perf_counter()
            run(scale, n)
            times.append((time.perf_counter() - tick) * cells / n)
        rows.append(
            {
                "sampler": name + ("" if n == cells else f" [timed on {n:,}, scaled]"),
                "exact / secure": exact_secure,
                "min s": min(times),
                "median s": statistics.median(times),
                "max s": max(times),
            }
        )
    frame = pd.DataFrame(rows)
    frame["x numpy"] = frame["median s"] / frame["median s"].iloc[0]
    return frame


#: Score shapes of the exponential mechanism's timing table: name -> scores for K candidates.
EM_SHAPES = {
    "all tied": lambda k: np.zeros(k),
    "one leader 50 ahead": lambda k: np.r_[50.0, np.zeros(k - 1)],
    "one leader 1,000 ahead": lambda k: np.r_[1000.0, np.zeros(k - 1)],
    "uniform in [0, 10)": lambda k: np.random.default_rng(0).uniform(0, 10, k),
}


def bench_em_timing(candidates: int = 2000, draws: int = 101, inv_temp=Fraction(1, 2)) -> pd.DataFrame:
    """Milliseconds per exact exponential-mechanism draw (min / median / max over ``draws``) by score
    shape (:data:`EM_SHAPES`), on the secure generator, with the ratio to all-tied scores.

    Parameters
    ----------
    candidates
        The number of candidates K.
    draws
        Draws timed per shape.
    inv_temp
        The inverse temperature ``eps / (2 Delta)``.
    """
    rng = secure_generator()
    rows = []
    for name, make in EM_SHAPES.items():
        scores = make(candidates)
        times = []
        for _ in range(draws):
            tick = time.perf_counter()
            exponential_mechanism(scores, inv_temp, rng)
            times.append(1000 * (time.perf_counter() - tick))
        rows.append({"scores": name, "min ms": min(times), "median ms": statistics.median(times), "max ms": max(times)})
    frame = pd.DataFrame(rows)
    frame["x tied"] = frame["median ms"] / frame["median ms"].iloc[0]
    return frame


def run_bench(
    cells: int, scale: float, runs: int, opendp_cells: int | None, em_candidates: int = 2000, em_draws: int = 101
):
    """The samplers on ``cells`` values (``runs`` times each) and the exact exponential mechanism's timing.

    Returns
    -------
    dpmodels.core.runner.Result
        One row per sampler, both tables to print, and ``{"noise", "exponential mechanism"}``.
    """
    from .runner import Result

    shown = [f"{cells:,} noisy values (census shape: 3,197 regions x N = 1,000), scale {scale}, {runs} runs each:"]
    frame = bench_noise(cells, Fraction(str(scale)), runs, opendp_cells)
    shown.append(frame.round(3).to_string(index=False))
    shown.append(
        f"\nexact exponential mechanism, {em_candidates:,} candidates, inverse temperature 1/2, {em_draws} draws each"
    )
    shown.append("(rejection sampling: the time depends on the scores, a side channel the manifests state):")
    timing = bench_em_timing(em_candidates, em_draws)
    shown.append(timing.round(3).to_string(index=False))
    doc = {"noise": frame.to_dict(orient="records"), "exponential mechanism": timing.to_dict(orient="records")}
    return Result(frame, shown, document=doc)
