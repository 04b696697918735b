"""``dpmodels bench submodular``: continuous greedy vs greedy as |E| grows, and memory (issue 5 bars).

For each ground-set size (default 100 -> 10,000 elements) a sparse coverage instance is drawn
(``users = 2|E|``, ~3 elements per user, uniform matroid of rank ``r``), and the run measures, in
one process:

- the matroid greedy: oracle calls (``r`` rounds over the feasible elements) and seconds;
- continuous greedy with the closed-form gradient (``T = r`` gradients, no oracle calls, swap rounding);
- continuous greedy with the sampled gradient (``m`` common sets, ``T m (|E|+1)`` oracle calls), up to
  ``--sampled-max`` elements, since that is the paper's honest cost model (Remark 3.1);
- the traced peak memory of building the instance and of each run (a second, traced run), beside the incidence size
  (``nnz``) and what a dense ``|E| x |V|`` matrix would take: the peak per non-zero stays flat, i.e.
  memory is linear in the input, not quadratic;
- with ``--epsilon EPS``: private Algorithm 1 (``cover="bases"``, ``T = r``) and Mitrovic's private greedy at each
  input epsilon, drawing from the secure generator with the exact samplers (the cost of exactness; no memory trace);
- one greedy extension step on a graphic matroid (``--graphic V E``: a random graph, ``S`` a forest of half its
  rank): ``Lambda(S)`` by one connected-components labelling vs one union-find independence test per edge.

Numbers are printed as measured in one run; nothing here is a timed assertion.
"""

from __future__ import annotations

import time
import tracemalloc

import numpy as np
import pandas as pd

from .algorithms import continuous_greedy, greedy
from .compare import VALUE
from .mechanism.continuous import private_continuous_greedy
from .mechanism.greedy import mitrovic_private_greedy

__all__ = ["bench_rows", "graphic_extension_rows", "run_bench"]


def _measure(run, trace: bool = True):
    """``(result, seconds, traced peak bytes)``; timing runs untraced (tracing slows Python code),
    then, with ``trace``, a second traced run measures the peak memory."""
    tick = time.perf_counter()
    out = run()
    seconds = time.perf_counter() - tick
    if not trace:
        return out, seconds, 0
    tracemalloc.start()
    run()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return out, seconds, peak


def bench_rows(n: int, rank: int, samples: int, sampled_max: int, seed: int = 0, private=()) -> list[dict]:
    """Greedy and continuous greedy (and the private runs at the epsilons ``private``) on one sparse
    coverage instance with ``n`` elements."""
    import dpmodels.instances as instances

    inst, build_s, build_peak = _measure(
        lambda: instances.generate("submodular/coverage", seed=seed, n=n, users=2 * n, degree=3.0, rank=rank)
    )
    F, M = inst.function, inst.matroid
    nnz = F.incidence.nnz
    common = {
        "|E|": n,
        "users": F.n_users,
        "nnz": nnz,
        "dense MB": n * F.n_users * 8 / 1e6,
        "build peak MB": build_peak / 1e6,
        "build bytes / nnz": build_peak / nnz,
    }
    rows = []
    runs = [
        ("greedy", lambda: greedy(F, M)),
        ("continuous greedy (closed form)", lambda: continuous_greedy(F, M, T=rank, seed=seed)),
    ]
    if n <= sampled_max:
        runs.append(
            (
                f"continuous greedy (sampled m={samples})",
                lambda: continuous_greedy(F, M, T=rank, gradient_mode="sampled", samples=samples, seed=seed),
            )
        )
    for eps in private:
        runs.append((f"private CG (Alg. 1, eps={eps:g})", lambda eps=eps: private_continuous_greedy(F, M, eps, T=rank)))
        runs.append((f"Mitrovic private greedy (eps={eps:g})", lambda eps=eps: mitrovic_private_greedy(F, M, eps)))
    for name, run in runs:
        res, seconds, peak = _measure(run, trace="sampled" not in name and "private" not in name)
        value = res.value if "greedy" in name and "continuous" not in name else res.rounded_value
        rows.append(
            {
                **common,
                "method": name,
                VALUE: value,
                "oracle calls": res.calls,
                "seconds": seconds,
                "run peak MB": peak / 1e6 if peak else float("nan"),
            }
        )
    return rows


def graphic_extension_rows(vertices: int, edges: int, seed: int = 0) -> list[dict]:
    """Seconds of one greedy extension step ``Lambda(S)`` on a random graph with ``vertices`` and
    ``edges``, ``S`` a random forest of half the rank: by one components labelling
    (:meth:`GraphicMatroid.extensions`) and by one independence test per edge (the generic
    :meth:`Matroid.extensions`), with the same answer checked."""
    from .matroids import GraphicMatroid, Matroid

    rng = np.random.default_rng(seed)
    u = rng.integers(0, vertices, 2 * edges)
    v = rng.integers(0, vertices, 2 * edges)
    keep = u != v
    M = GraphicMatroid(vertices, np.c_[u[keep], v[keep]][:edges])
    S = np.zeros(M.n, bool)
    for e in rng.permutation(M.n):  # a random forest: Kruskal on a random order, stopped at half the rank
        if int(S.sum()) >= M.r // 2:
            break
        if e in M.extensions(S):
            S[e] = True
    rows, answers = [], []
    for method, run in (("one components labelling", M.extensions), ("independence test per edge", Matroid.extensions)):
        tick = time.perf_counter()
        answers.append(run(S) if method.startswith("one") else run(M, S))
        rows.append(
            {
                "|V|": vertices,
                "|E|": M.n,
                "|S|": int(S.sum()),
                "method": method,
                "seconds": time.perf_counter() - tick,
                "|Lambda(S)|": len(answers[-1]),
            }
        )
    assert answers[0] == answers[1], "the two extension oracles disagree"
    rows[1]["x labelling"] = rows[1]["seconds"] / rows[0]["seconds"]
    return rows


def run_bench(sizes, rank: int = 10, samples: int = 4, sampled_max: int = 1000, private=(), graphic=(1000, 5000)):
    """Time greedy and continuous greedy at each ``|E|`` (and the private runs at ``private``
    epsilons), and one greedy extension step on a graphic matroid.

    Returns
    -------
    dpmodels.core.runner.Result
        One row per (|E|, method), the tables to print, and ``{"sizes", "graphic extension"}``.
    """
    from dpmodels.core.runner import Result

    rows = []
    for n in sizes:
        rows += bench_rows(int(n), rank, samples, sampled_max, private=tuple(private))
    table = pd.DataFrame(rows)
    with pd.option_context("display.width", 200, "display.max_columns", 20):
        shown = [table.to_string(index=False, float_format=lambda v: f"{v:.4g}")]
    greedy_rows = table[table.method == "greedy"].set_index("|E|")
    cg_rows = table[table.method == "continuous greedy (closed form)"].set_index("|E|")
    ratio = (cg_rows.seconds / greedy_rows.seconds).rename("CG/greedy seconds")
    value = (cg_rows[VALUE] / greedy_rows[VALUE]).rename("CG/greedy true value (diagnostic)")
    shown.append("\n" + pd.concat([ratio, value], axis=1).to_string(float_format=lambda v: f"{v:.3g}"))
    extension = graphic_extension_rows(*graphic) if graphic else []
    if extension:
        shown.append("\none greedy extension step on a graphic matroid:")
        shown.append(pd.DataFrame(extension).to_string(index=False, float_format=lambda v: f"{v:.4g}"))
    return Result(table, shown, document={"sizes": rows, "graphic extension": extension})
