"""``dpmodels bench topdown --largest-state``: the largest state's shape end to end (issue 25).

The largest state has about 58 counties, 8,000 tracts, 25,000 block groups, 700,000 blocks and 39
million persons.  :func:`largest_state_runs` runs that shape, with a number of its counties, serially
end to end (generation, measurement, post-processing), each run in a fresh process so that its peak
resident memory is its own, and extrapolates time and memory linearly in the counties to the whole state.
"""

from __future__ import annotations

import logging
import time

import numpy as np

__all__ = [
    "LARGEST_STATE_FANOUT",
    "LARGEST_STATE_SCALE",
    "largest_state_counties",
    "largest_state_runs",
    "largest_line",
    "extrapolation_line",
]

log = logging.getLogger(__name__)


#: The largest state's shape (about 39 million persons): 58 counties, 138 tracts per county, 3 block
#: groups per tract, 29 blocks per block group (696,348 blocks), block populations scaled by
#: ``LARGEST_STATE_SCALE`` (the generator's mean block population is about 24.4 at scale 1).
LARGEST_STATE_FANOUT = (1, 58, 138, 3, 29)
LARGEST_STATE_SCALE = 2.4


def largest_state_counties(
    counties: int, races: int = 63, epsilon: float = 4.0, seed: int = 0, fanout: tuple = LARGEST_STATE_FANOUT
) -> dict:
    """One serial end-to-end run of the largest state's shape with ``counties`` of its 58 counties, in
    this process: generation, measurement and post-processing times, seconds per million
    persons, the constraint checks and the process's peak resident memory (``ru_maxrss``).

    Parameters
    ----------
    counties : int
        How many of the largest state's 58 counties (58 = the whole state).
    races : int, default 63
        Race categories of the schema (63: the full 2,016 cells).
    epsilon : float, default 4.0
        The total budget.
    seed : int, default 0
        The generator's and the noise's seed.
    fanout : tuple, default LARGEST_STATE_FANOUT
        The state's shape (its counties are replaced by ``counties``); smaller shapes are for tests.
    """
    import resource

    import dpmodels.instances as instances

    from .active_set import warm_up
    from .driver import topdown
    from .mechanism import measure

    warm_up()  # numba's kernels compiled (or loaded) before anything is timed
    fanout = (1, counties, *fanout[2:])
    tick = time.perf_counter()
    data = instances.generate("topdown/synthetic", fanout=fanout, scale=LARGEST_STATE_SCALE, races=races, seed=seed)
    generate_s = time.perf_counter() - tick
    meas = measure(data, epsilon, rng=seed)
    measure_s = time.perf_counter() - tick - generate_s
    result = topdown(meas, data.knowledge, data.schema, data.geography)
    topdown_s = time.perf_counter() - tick - generate_s - measure_s
    return {
        "counties": counties,
        "blocks": len(data.geography.leaves),
        "persons": data.population,
        "generate s": generate_s,
        "measure s": measure_s,
        "topdown s": topdown_s,
        "s per million persons": topdown_s * 1e6 / max(data.population, 1),
        "level seconds": result.level_seconds,
        "violations": int(sum(result.checks.values())),
        "checks": result.checks,
        "peak memory GB": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20,  # KB on Linux
    }


def largest_state_runs(
    counties, races: int = 63, epsilon: float = 4.0, fanout: tuple = LARGEST_STATE_FANOUT
) -> tuple[list[dict], dict]:
    """:func:`largest_state_counties` for each number of counties, each in a fresh process (so that its peak
    memory is its own), and the whole state's time and peak memory extrapolated from them.

    Returns
    -------
    tuple
        The rows, and the extrapolation: a least-squares line in the number of counties through the runs'
        end-to-end seconds and peak memory, read at the state's 58 counties (with one run: its time scaled
        by the counties; its memory is not extrapolated, since part of it does not grow with the counties).
    """
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    rows = []
    for count in counties:
        with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
            row = pool.submit(largest_state_counties, count, races, epsilon, 0, fanout).result()
        row["end to end s"] = row["generate s"] + row["measure s"] + row["topdown s"]
        rows.append(row)
        log.info("%s", largest_line(row))
    return rows, _extrapolate(rows, fanout[1])


def _extrapolate(rows: list[dict], counties: int) -> dict:
    """The whole state's end-to-end hours and peak GB from the runs (see :func:`largest_state_runs`)."""
    x = np.array([r["counties"] for r in rows], dtype=np.float64)
    out = {"counties": counties, "from runs with counties": [int(c) for c in x]}
    for key, name, unit in (("end to end s", "end to end h", 3600.0), ("peak memory GB", "peak memory GB", 1.0)):
        y = np.array([r[key] for r in rows], dtype=np.float64)
        if len(set(x)) >= 2:
            slope, intercept = np.polyfit(x, y, 1)
            out[name] = float(intercept + slope * counties) / unit
        elif key == "end to end s":
            out[name] = float(y.mean() * counties / x.mean()) / unit
        else:
            out[name] = None
    return out


def largest_line(row: dict) -> str:
    """One run as printed."""
    return (
        f"  largest-state shape, {row['counties']} of 58 counties: {row['blocks']:,} blocks, {row['persons']:,} "
        f"persons  generate {row['generate s']:.1f}s  measure {row['measure s']:.1f}s  topdown {row['topdown s']:.1f}s "
        f"({row['s per million persons']:.1f} s per million persons)  peak memory {row['peak memory GB']:.2f} GB  "
        f"violations: {row['violations']}"
    )


def extrapolation_line(extra: dict) -> str:
    """The whole state's extrapolation as printed."""
    memory = extra["peak memory GB"]
    return (
        f"  whole state ({extra['counties']} counties), linear in the counties "
        f"from {extra['from runs with counties']}: "
        f"{extra['end to end h']:.1f} h end to end, peak memory "
        + ("not extrapolated (one size)" if memory is None else f"{memory:.1f} GB")
    )
