"""Private submodular and k-submodular maximization under matroid constraints (Rafiey & Yoshida 2020).

Modules: ``data`` (sets as masks, the oracle interfaces, instances), ``set_functions`` and
``k_submodular_functions`` (the objectives), ``function_checks`` (monotonicity, (k-)submodularity
and sensitivity checks), ``matroids`` (the interface; uniform, partition and explicit matroids) with
``laminar_matroid`` and ``graphic_matroid``, ``multilinear`` (the multilinear extension and
gradients), ``models`` (Pyomo builders), ``algorithms`` (non-private greedy, continuous greedy,
rounding), ``mechanism`` (the ledger, streams and overflow refusal every private run starts from),
``continuous_mechanisms`` (private Algorithms 1 and 2, and the rounding of their output),
``greedy_mechanisms`` (Mitrovic's private greedy, Algorithms 3 and 4), ``privacy_audit`` (exact
output distributions and the privacy loss), ``exponential`` (the exponential mechanism: exact draws
from the core sampler), ``exact_bases`` with ``exact_coins``, ``exact_graphic`` and
``exact_laminar`` (the exact exponential mechanism over the bases of a matroid), ``streams`` (secure
or seeded random streams), ``accounting`` (the privacy accountant), ``release`` (runs through a
privacy session), ``results``, ``compare`` and ``bench``.
"""
