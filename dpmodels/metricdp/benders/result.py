"""What a Benders run returns (:func:`dpmodels.metricdp.benders.benders`)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

__all__ = ["BendersResult"]


@dataclass
class BendersResult:
    """Incumbent perturbation matrix, bounds, status and the per-iteration history.

    Attributes
    ----------
    z : numpy.ndarray or None
        The best exactly eps-mDP matrix found (its loss is ``upper_bound``).
    upper_bound, lower_bound : float
        The certified bounds on the LP's optimum.
    status : str
        Why the loop stopped.
    """

    z: np.ndarray | None
    lower_bound: float
    upper_bound: float
    status: str
    iterations: int
    history: pd.DataFrame
    first_feasible: dict[int, int]
    info: dict

    @property
    def gap(self) -> float:
        return self.upper_bound - self.lower_bound

    @property
    def relative_gap(self) -> float:
        return self.gap / max(abs(self.upper_bound), 1e-12)
