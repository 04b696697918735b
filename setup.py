"""Packages found, not listed: every package under ``dpmodels/`` (the core and each family),
and the top-level folders ``solvers/`` and ``instances/`` installed inside the ``dpmodels``
namespace (``dpmodels.solvers``, ``dpmodels.instances``), with their subpackages.  Everything
else about the project is in ``pyproject.toml``."""

from setuptools import find_namespace_packages, find_packages, setup

#: Top-level folders installed as subpackages of dpmodels.
MAPPED = {"dpmodels.solvers": "solvers", "dpmodels.instances": "instances"}


def packages() -> list[str]:
    found = find_packages(include=["dpmodels", "dpmodels.*"])
    for package, folder in MAPPED.items():  # data folders too (namespace packages): setuptools then ships their files
        subs = find_namespace_packages(folder, exclude=["*__pycache__*"])
        found += [package, *(f"{package}.{sub}" for sub in subs)]
    return found


setup(packages=packages(), package_dir=MAPPED)
