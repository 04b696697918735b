"""One small release per family: its input files and its command line, for the cross-family release tests.

``CASES[family](folder, name)`` writes the family's tiny inputs into ``folder`` (once) and returns
a :class:`ReleaseCase` whose ``argv`` is a complete ``dpmodels release <family>`` command but for
``--epsilon``.  A family with a release command and no case here fails
``tests/test_release_runner.py::test_every_release_command_has_a_case``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd


@dataclass(frozen=True)
class ReleaseCase:
    """A release command (without ``--epsilon``), its input files and its output files by option."""

    family: str
    argv: list[str]
    inputs: dict[str, Path]
    outputs: dict[str, Path]

    @property
    def ledger(self) -> Path:
        first = next(iter(self.outputs.values()))
        return first.with_name(first.stem + ".ledger.json")

    @property
    def manifest(self) -> Path:
        first = next(iter(self.outputs.values()))
        return first.with_name(first.stem + ".manifest.json")

    @property
    def written(self) -> list[Path]:
        """Every file a complete release writes."""
        return [*self.outputs.values(), self.ledger, self.manifest]


def _write_once(path: Path, write: Callable[[Path], None]) -> Path:
    if not path.exists():
        write(path)
    return path


def pgsr(folder: Path, name: str = "out", units: int = 200) -> ReleaseCase:
    """Two states and ``units`` households of sizes 1..4 (person records), N = 4 declared."""

    def records(path):
        rng = np.random.default_rng(0)
        rows = [
            (f"p{u}-{k}", f"h{u}", "AB"[rng.integers(2)] if k == 0 else None, 1)
            for u in range(units)
            for k in range(rng.integers(1, 5))
        ]
        frame = pd.DataFrame(rows, columns=["user", "unit", "region", "quantity"])
        frame["region"] = frame.groupby("unit")["region"].transform("first")
        frame.to_csv(path, index=False)

    h = _write_once(folder / "regions.csv", lambda p: p.write_text("region,parent\nUS,\nA,US\nB,US\n"))
    r = _write_once(folder / f"persons-{units}.csv", records)
    out = folder / f"{name}.csv"
    argv = ["release", "pgsr", "--hierarchy", str(h), "--records", str(r), "--N", "4", "--out", str(out)]
    return ReleaseCase("pgsr", argv, {"--hierarchy": h, "--records": r}, {"--out": out})


def topdown(folder: Path, name: str = "out", preset: str = "tiny") -> ReleaseCase:
    """A synthetic census (``tiny``: 2 states, 24 blocks; 7 races) and its declared block list."""
    from dpmodels.instances.topdown import records, synthetic_census

    census = synthetic_census(seed=1, preset=preset, races=7)
    persons = _write_once(folder / f"census-{preset}.csv", lambda p: records(census).to_csv(p, index=False))
    geo = census.geography
    blocks = _write_once(
        folder / f"blocks-{preset}.csv",
        lambda p: pd.DataFrame({"geocode": [geo.names[i] for i in geo.leaves]}).to_csv(p, index=False),
    )
    micro, hist = folder / f"{name}.csv", folder / f"{name}-histograms.csv"
    argv = ["release", "topdown", "--persons", str(persons), "--blocks", str(blocks), "--races", "7"]
    argv += ["--out-microdata", str(micro), "--out-histograms", str(hist), "--no-progress"]
    return ReleaseCase(
        "topdown",
        argv,
        {"--persons": persons, "--blocks": blocks},
        {"--out-microdata": micro, "--out-histograms": hist},
    )


def mdp(folder: Path, name: str = "out") -> ReleaseCase:
    """Five users on the cells of a 3 x 3 grid of 1 km cells."""
    records = _write_once(
        folder / "visits.csv", lambda p: p.write_text("user,record\nann,0\nben,4\ncat,8\ndan,4\neve,2\n")
    )
    out = folder / f"{name}.csv"
    argv = ["release", "mdp", "--records", str(records), "--set", "rows=3", "--set", "cols=3", "--set", "K=9"]
    return ReleaseCase("mdp", [*argv, "--out", str(out)], {"--records": records}, {"--out": out})


def submodular(folder: Path, name: str = "out") -> ReleaseCase:
    """Six public sites, twelve declared users covering one to three sites each, rank 2."""
    sites = ["north", "south", "east", "west", "centre", "harbour"]
    elements = _write_once(folder / "sites.csv", lambda p: pd.DataFrame({"element": sites}).to_csv(p, index=False))
    pairs = [(sites[(u * k) % 6], f"u{u}") for u in range(12) for k in range(1, 2 + u % 3)]
    coverage = _write_once(
        folder / "coverage.csv", lambda p: pd.DataFrame(pairs, columns=["element", "user"]).to_csv(p, index=False)
    )
    out = folder / f"{name}.csv"
    argv = ["release", "submodular", "--coverage", str(coverage), "--elements", str(elements), "--rank", "2"]
    argv += ["--users", "12", "--out", str(out)]
    return ReleaseCase("submodular", argv, {"--coverage": coverage, "--elements": elements}, {"--out": out})


def facility(folder: Path, name: str = "out") -> ReleaseCase:
    """200 points in the unit square with 0-3 clients each."""

    def points(path):
        rng = np.random.default_rng(0)
        xy = rng.random((200, 2)).round(4)
        pd.DataFrame({"x": xy[:, 0], "y": xy[:, 1], "count": rng.integers(0, 4, 200)}).to_csv(path, index=False)

    pts = _write_once(folder / "points.csv", points)
    out = folder / f"{name}.csv"
    argv = ["release", "facility", "--points", str(pts), "--f", "0.05", "--out", str(out)]
    return ReleaseCase("facility", argv, {"--points": pts}, {"--out": out})


CASES: dict[str, Callable[..., ReleaseCase]] = {
    "pgsr": pgsr,
    "topdown": topdown,
    "mdp": mdp,
    "submodular": submodular,
    "facility": facility,
}
