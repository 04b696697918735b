"""Private submodular and k-submodular maximization under matroid constraints (Rafiey & Yoshida 2020).

Modules: ``data`` (set-function oracles, instances), ``matroids``, ``multilinear`` (the multilinear
extension and gradients), ``models`` (Pyomo builders), ``algorithms`` (non-private greedy, continuous
greedy, rounding), ``mechanism`` (private Algorithms 1-4, Mitrovic's private greedy, exact output
distributions), ``exponential`` (the exponential mechanism: exact draws from the core sampler),
``exact_bases`` with ``exact_coins``, ``exact_graphic`` and ``exact_laminar`` (the exact exponential
mechanism over the bases of a matroid), ``streams`` (secure or seeded random streams),
``accounting`` (the privacy accountant), ``release`` (runs through a privacy session), ``results``,
``compare`` and ``bench``.
"""
