"""The notebooks run under nbmake (``pytest notebooks/``); all but the lightest are in the slow tier.

``pgsr.ipynb`` and ``metricdp.ipynb`` take about a minute each, ``topdown.ipynb`` and
``submodular.ipynb`` about 12 s; ``pytest -m slow`` (or ``pytest notebooks/ -m slow``) runs them.
In the default tier, ``tests/test_notebooks.py`` checks that every notebook's imports resolve to
the families' exports, and ``tests/test_docs.py`` that every notebook carries its saved outputs.
"""

from pathlib import Path

import pytest

#: Notebooks run only with ``-m slow``.
SLOW_NOTEBOOKS = {"pgsr.ipynb", "metricdp.ipynb", "topdown.ipynb", "submodular.ipynb"}


def pytest_collection_modifyitems(items):
    for item in items:
        if Path(str(item.fspath)).name in SLOW_NOTEBOOKS and str(item.fspath).endswith(".ipynb"):
            item.add_marker(pytest.mark.slow)
