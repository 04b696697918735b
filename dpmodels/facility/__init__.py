"""Differentially private uniform facility location (Esencayi, Gaboardi, Li, Wang, NeurIPS 2019).

* :mod:`.data` - the UFL instance ``(V, d, f, N)`` and λ-HST instances, validated on construction.
* :mod:`.hst` - HST toolkit (distances, LCA, subtree counts, minset, padding, rep, nearest-in-R).
* :mod:`.hst_optimum` - LB9 (Claim 9's lower bound) and the exact leaf-only tree DP.
* :mod:`.frt` - the FRT-λ embedding of a metric into an HST, with its measured stretch.
* :mod:`.mechanism` - Algorithm 1 (non-private), Algorithm 2 (ε-DP), the exact privacy-loss oracle
  and the labelled baseline reconstructions, on an HST.
* :mod:`.general_metric` - the general-metric pipeline: FRT-λ tree, Algorithm 2, publish (T, R).
* :mod:`.marks` - the exact draw of Algorithm 2's marks (no Laplace value formed, one raw word per node).
* :mod:`.release` - ``release(session, epsilon)`` and ``dpmodels release facility`` (points CSV -> (T, R)).
* :mod:`.models` - Pyomo builders: UFL MIP / LP relaxation, the tree model, the LB9 antichain LP.
* :mod:`.compare`, :mod:`.bench` - ``dpmodels compare facility`` and ``dpmodels bench facility``.

Plugins (``solvers/``): ``facility_tree_dp`` (exact tree DP) and ``facility_mechanism`` (Algorithm 2).
"""

from .data import HST, HSTInstance, UFLInstance
from .frt import frt_embedding
from .general_metric import dp_ufl_general
from .hst_optimum import lb9, tree_dp
from .mechanism import algorithm1, algorithm2, privacy_loss_exact
from .models import build_lb9_lp, build_tree_model, build_ufl_mip

__all__ = [
    "HST",
    "HSTInstance",
    "UFLInstance",
    "frt_embedding",
    "lb9",
    "tree_dp",
    "algorithm1",
    "algorithm2",
    "dp_ufl_general",
    "privacy_loss_exact",
    "build_ufl_mip",
    "build_tree_model",
    "build_lb9_lp",
]
