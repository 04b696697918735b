"""Part (b) of ``dpmodels bench pgsr``: the full census-like shape, old and new exact solvers side by side.

Every (epsilon, variant) runs in its own child process, so each peak memory is its own: the
instance is generated and measured there (end to end), then one solver runs.  The variants are
the exact mechanisms of Table 7 with the paper's table DPs (cost grows with the domain width,
i.e. with 1/eps^2) beside the solvers whose cost does not:

* ``M_H^dp``: the table DP on the paper's truncated domains, the certified window solver on
  the same domains (the objectives must be equal) and on the full domain ``[0, G]`` (exact
  Model 1: never above the truncated optimum);
* ``M_c^dp`` (Algorithm 2): the same three for its DP stage;
* ``M_c^ch`` (Model 3): the chain table DP on truncated domains and PAVA on the full domain.

Under ``noise="discrete-gaussian"`` the measurement is the exact discrete Gaussian at a zCDP
``rho`` (``rho / L`` per level) and every run states its ``rho`` where it states ``epsilon``
under the paper's discrete Laplace; the agreement checks are the same.
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import time
from collections.abc import Callable

import numpy as np

__all__ = ["CENSUS_VARIANTS", "census_run", "census_in_child", "census_table", "check_agreement", "run_budget"]


def _hierarchical(method: str, domains: str) -> Callable:
    def run(noisy):
        from ..algorithms.hierarchical import solve_hierarchical
        from ..algorithms.window import solve_exact

        solver = solve_exact if method == "windows" else solve_hierarchical
        return solver(noisy, domains, on_infeasible="widen")

    return run


def _cumulative(method: str, domains: str) -> Callable:
    def run(noisy):
        from ..algorithms.cumulative import solve_cumulative_dp

        return solve_cumulative_dp(noisy, domains, method=method)

    return run


class TablesTooLarge(RuntimeError):
    """The paper's table DP would exceed its table budget; the run is skipped, not attempted."""


def _chain(method: str, domains: str) -> Callable:
    def run(noisy):
        from ..algorithms.chain import TABLE_BUDGET, solve_chain

        sol = solve_chain(noisy, domains, on_infeasible="widen", method="auto" if method == "dp" else method)
        if method == "dp" and sol.info["method"] != "dp":
            raise TablesTooLarge(
                f"skipped: the chain tables would hold {sol.info['table_entries']:,} entries "
                f"(> budget {TABLE_BUDGET:,}); PAVA solves this model"
            )
        return sol

    return run


#: name -> (mechanism, measurement kind, solver variant, domains, solve(noisy))
CENSUS_VARIANTS: dict[str, tuple[str, str, str, str, Callable]] = {
    "M_H^dp/tables/truncated": ("M_H^dp", "counts", "tables", "truncated", _hierarchical("tables", "truncated")),
    "M_H^dp/windows/truncated": ("M_H^dp", "counts", "windows", "truncated", _hierarchical("windows", "truncated")),
    "M_H^dp/windows/full": ("M_H^dp", "counts", "windows", "full", _hierarchical("windows", "full")),
    "M_c^dp/tables/truncated": ("M_c^dp", "cumulative", "tables", "truncated", _cumulative("tables", "truncated")),
    "M_c^dp/windows/truncated": ("M_c^dp", "cumulative", "windows", "truncated", _cumulative("windows", "truncated")),
    "M_c^dp/windows/full": ("M_c^dp", "cumulative", "windows", "full", _cumulative("windows", "full")),
    "M_c^ch/tables/truncated": ("M_c^ch", "chain", "tables", "truncated", _chain("dp", "truncated")),
    "M_c^ch/pava/full": ("M_c^ch", "chain", "pava", "full", _chain("pava", "full")),
}


def census_run(
    variant: str, epsilon: float | None, scale: float = 1.0, seed: int = 0, noise: str = "discrete-laplace", rho=None
) -> dict:
    """Generate, measure and solve the census-like shape with one variant (in this process).

    Parameters
    ----------
    variant : str
        A name of :data:`CENSUS_VARIANTS`.
    epsilon : float or None
        The measurement's budget under the discrete Laplace (None with the discrete Gaussian).
    scale : float
        The census-like scale.
    seed : int
        The instance's and the noise's seed (a benchmark, not a release).
    noise : str
        ``"discrete-laplace"`` or ``"discrete-gaussian"`` (:func:`~dpmodels.pgsr.mechanism.measure`).
    rho : float, optional
        The zCDP budget under the discrete Gaussian.
    """
    from dpmodels.instances.pgsr import census_like

    from ..mechanism import measure
    from ..warmup import warm_up

    mechanism, kind, method, domains, solve = CENSUS_VARIANTS[variant]
    out: dict = {"variant": variant, "mechanism": mechanism, "method": method, "domains": domains}
    if noise == "discrete-gaussian":
        out.update(noise=noise, rho=rho, scale=scale)
    else:
        out.update(epsilon=epsilon, scale=scale)
    tick = time.perf_counter()
    warm_up()  # every PGSR kernel, so the timed solve is not a compile
    out["jit warm-up s"] = time.perf_counter() - tick
    data = census_like(seed=seed, scale=scale)
    out.update(regions=data.hierarchy.n_regions, N=data.N, G=data.G)
    noisy, _ = measure(data, epsilon, kind, rng=seed, noise=noise, rho=rho)
    tick = time.perf_counter()
    sol = solve(noisy)
    out["seconds"] = time.perf_counter() - tick
    out["peak RSS GB"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6
    out["objective"] = float(sol.objective)
    h = data.hierarchy
    counts = sol.counts
    out["consistent"] = bool(
        not h.consistency_residual(counts).any() and (counts >= 0).all() and counts[0].sum() == data.G
    )
    out["L1 per level"] = [float(np.abs(counts - data.counts)[h.level_slice(lvl)].sum()) for lvl in (1, 2, 3)]
    info = sol.info
    for key in ("table_entries", "windows", "certificate gain", "domain_widenings", "method"):
        if key in info:
            out[f"info {key}"] = info[key]
    out["delta"] = info.get("delta")
    return out


def census_in_child(variant: str, budget: float, scale: float, noise: str = "discrete-laplace") -> dict:
    """:func:`census_run` in a child process (its own peak memory); ``budget`` is an epsilon, or the rho
    of ``noise="discrete-gaussian"``."""
    gaussian = noise == "discrete-gaussian"
    budgets = f"None, {scale!r}, noise={noise!r}, rho={budget!r}" if gaussian else f"{budget!r}, {scale!r}"
    code = (
        "import json; from dpmodels.pgsr.bench.census import census_run; "
        f"print(json.dumps(census_run({variant!r}, {budgets}), default=str))"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        unit = "rho" if gaussian else "epsilon"
        return {"variant": variant, unit: budget, "scale": scale, "error": proc.stderr.strip()[-600:]}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def run_budget(run: dict) -> tuple[str, float]:
    """A run's budget: ``("rho", value)`` for a discrete Gaussian run, else ``("epsilon", value)``."""
    return ("rho", run["rho"]) if "rho" in run else ("epsilon", run["epsilon"])


def census_table(runs: list[dict]) -> str:
    """One line per run: seconds, peak memory, objective, L1 per level, table entries."""
    unit = run_budget(runs[0])[0] if runs else "epsilon"
    lines = [f"{unit:>7}  {'variant':26s} {'seconds':>8} {'peak GB':>8} {'objective':>16} {'tables':>13}  L1 lev1/2/3"]
    for r in runs:
        budget = run_budget(r)[1]
        if "error" in r:
            last = r["error"].splitlines()[-1] if r["error"] else "no output"
            shown = last.split(": ", 1)[1] if "TablesTooLarge" in last else f"FAILED: {last}"
            lines.append(f"{budget:7g}  {r['variant']:26s} {shown}")
            continue
        l1 = "/".join(f"{v:,.0f}" for v in r["L1 per level"])
        lines.append(
            f"{budget:7g}  {r['variant']:26s} {r['seconds']:8.2f} {r['peak RSS GB']:8.2f} "
            f"{r['objective']:16,.0f} {r.get('info table_entries', 0):13,}  {l1}"
        )
    return "\n".join(lines)


def check_agreement(runs: list[dict]) -> list[str]:
    """What must hold between variants of one mechanism at one epsilon: equal objectives on equal
    domains, the full optimum never above the truncated one (exact variants), consistency."""
    verdicts = []
    by_key = {(run_budget(r)[1], r["variant"]): r for r in runs if "error" not in r}
    word = {"epsilon": "eps", "rho": "rho"}[run_budget(runs[0])[0]] if runs else "eps"
    for (eps, variant), r in by_key.items():
        if not r["consistent"]:
            verdicts.append(f"{word} {eps:g} {variant}: NOT consistent")
    for eps in sorted({e for e, _ in by_key}):
        for mech in ("M_H^dp", "M_c^dp"):
            tables, windows = (
                by_key.get((eps, f"{mech}/tables/truncated")),
                by_key.get((eps, f"{mech}/windows/truncated")),
            )
            if tables and windows:
                same = abs(tables["objective"] - windows["objective"]) <= 1e-6 * max(1.0, abs(tables["objective"]))
                verdicts.append(f"{word} {eps:g} {mech}: tables and windows agree on truncated domains: {same}")
        full, trunc = by_key.get((eps, "M_H^dp/windows/full")), by_key.get((eps, "M_H^dp/windows/truncated"))
        if full and trunc:
            ok = full["objective"] <= trunc["objective"]
            verdicts.append(f"{word} {eps:g} M_H^dp: full optimum <= truncated: {ok}")
        chain_full, chain_trunc = by_key.get((eps, "M_c^ch/pava/full")), by_key.get((eps, "M_c^ch/tables/truncated"))
        if chain_full and chain_trunc:
            ok = chain_full["objective"] <= chain_trunc["objective"]
            verdicts.append(f"{word} {eps:g} M_c^ch: full optimum <= truncated: {ok}")
    return verdicts
