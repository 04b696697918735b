"""Private submodular and k-submodular maximization under matroid constraints (Rafiey & Yoshida 2020).

Modules: ``data`` (set-function oracles, instances), ``matroids``, ``multilinear`` (the multilinear
extension and gradients), ``models`` (Pyomo builders), ``algorithms`` (non-private greedy, continuous
greedy, rounding), ``mechanism`` (private Algorithms 1-4, Mitrovic's private greedy, exact output
distributions), ``accounting`` (the privacy accountant), ``compare`` and ``bench``.
"""
