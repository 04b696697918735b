"""MkDocs hooks: the pages every family gets without an edit, the notebooks and the measurements.

For every name of :func:`dpmodels.core.families.family_names` (the one list of families) the site
gets ``reference/<name>.md`` (``::: dpmodels.<name>``, the family's exports) and, unless
``docs/families/<name>.md`` is written by hand, a guide generated from the family's package
docstring; both go into the nav.  Every ``notebooks/*.ipynb`` of the checkout becomes a page of
the "Notebooks" section (rendered by mkdocs-jupyter with its saved outputs).  A line
``<!-- measurements: FILE.json -->`` in a page is replaced by the tables of
``docs/measurements/FILE.json``, the file a bench command wrote (see :mod:`measurement_tables`).
"""

from __future__ import annotations

import ast
import importlib
import re
import sys
from pathlib import Path

from mkdocs.plugins import event_priority
from mkdocs.structure.files import File, Files

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
sys.path.insert(0, str(DOCS))  # measurement_tables, beside this file

from measurement_tables import render_measurements  # noqa: E402

FAMILIES_SECTION = "Families"
NOTEBOOKS_SECTION = "Notebooks"
REFERENCE_SECTION = "API reference"
#: Reference pages beside the families' (file name -> package).
CORE_PACKAGES = {
    "dpmodels": "dpmodels",
    "core": "dpmodels.core",
    "instances": "dpmodels.instances",
    "solvers": "dpmodels.solvers.base",
}
_MARKER = re.compile(r"^<!-- measurements: ([\w.-]+\.json) -->$", re.M)
_ROLE = re.compile(r":(?:mod|func|class|meth|attr|data|obj):`~?\.?([^`]+)`")


def family_names() -> tuple[str, ...]:
    """The families found by convention (imported here so a test can replace it)."""
    from dpmodels.core.families import family_names as found

    return found()


def notebooks(root: Path = ROOT) -> list[Path]:
    """The notebooks of the gallery, sorted by name.

    Parameters
    ----------
    root : Path
        The checkout; its ``notebooks/*.ipynb`` are the gallery.
    """
    return sorted((root / "notebooks").glob("*.ipynb"))


def nav_additions(names, notebook_paths) -> dict[str, list]:
    """The nav entries the hooks append, by section title.

    Parameters
    ----------
    names : iterable of str
        The families' package names.
    notebook_paths : iterable of Path
        The gallery's notebooks.
    """
    return {
        FAMILIES_SECTION: [f"families/{name}.md" for name in names],
        NOTEBOOKS_SECTION: [{path.stem: f"notebooks/{path.name}"} for path in notebook_paths],
        REFERENCE_SECTION: [{package: f"reference/{page}.md"} for page, package in reference_pages(names).items()],
    }


def reference_pages(names) -> dict[str, str]:
    """Reference page name -> package: the core packages', then one per family.

    Parameters
    ----------
    names : iterable of str
        The families' package names.
    """
    return {**CORE_PACKAGES, **{name: f"dpmodels.{name}" for name in names}}


def extend_nav(nav: list, additions: dict[str, list]) -> list:
    """Append ``additions`` to the top-level nav sections of the same titles.

    Parameters
    ----------
    nav : list
        MkDocs' ``nav`` setting (a list of one-key dicts and strings).
    additions : dict
        Section title -> entries, as :func:`nav_additions` returns.

    Raises
    ------
    KeyError
        A section of ``additions`` is not in the nav (mkdocs.yml must declare it).
    """
    sections = {title: entries for item in nav if isinstance(item, dict) for title, entries in item.items()}
    for title, entries in additions.items():
        if title not in sections or not isinstance(sections[title], list):
            raise KeyError(f"mkdocs.yml nav: no section {title!r} for the generated pages")
        sections[title].extend(entry for entry in entries if entry not in sections[title])
    return nav


def griffe_path(dotted: str) -> str:
    """The path mkdocstrings finds an object at: ``dpmodels.solvers`` and ``dpmodels.instances``
    live in the checkout's top-level ``solvers/`` and ``instances/`` (mapped into ``dpmodels`` at
    install), which the static collector reads as the packages ``solvers`` and ``instances``.

    Parameters
    ----------
    dotted : str
        An installed dotted path, e.g. ``dpmodels.solvers.base.Option``.
    """
    for package in ("solvers", "instances"):
        if dotted == f"dpmodels.{package}" or dotted.startswith(f"dpmodels.{package}."):
            return dotted[len("dpmodels.") :]
    return dotted


def export_targets(package: str) -> list[tuple[str, str | None, str]]:
    """``(exported name, where mkdocstrings collects it, value or alias)`` for each name of ``__all__``.

    Packages export lazily (PEP 562) or by re-import, which a static reader cannot follow, so the
    package is imported and each class's or function's defining module read from the object
    (``__module__``; an export under another name is collected under its own and noted as an alias).
    A constant knows no module: its collection path is ``None`` and its value is shown instead.

    Parameters
    ----------
    package : str
        A dotted package name, e.g. ``dpmodels.pgsr``.
    """
    module = importlib.import_module(package)
    exports = []
    for name in getattr(module, "__all__", ()):
        if name.startswith("__"):
            continue
        obj = getattr(module, name)
        home = getattr(obj, "__module__", None) if callable(obj) else None
        original = getattr(obj, "__name__", None)
        if isinstance(home, str) and home.startswith("dpmodels") and isinstance(original, str):
            alias = "" if original == name else original  # e.g. PrivacyAccountant = PrivacyLedger
            exports.append((name, griffe_path(f"{home}.{original}"), alias))
        elif callable(obj):
            exports.append((name, griffe_path(f"{package}.{name}"), ""))
        else:
            exports.append((name, None, constant_value(obj)))
    return exports


def constant_value(obj, limit: int = 100) -> str:
    """A constant as the reference shows it: a mapping by its keys, anything else by its ``repr``
    without memory addresses, at most ``limit`` characters.

    Parameters
    ----------
    obj : object
        The exported constant.
    limit : int
        The longest text shown.
    """
    if isinstance(obj, dict):
        text = f"{type(obj).__name__} of {len(obj)}: " + ", ".join(map(repr, obj))
    else:
        text = re.sub(r" at 0x[0-9a-f]+", "", repr(obj))
    return text if len(text) <= limit else text[: limit - 3] + "..."


def reference_page(package: str, exports: list[tuple], elsewhere: dict[str, str] | None = None) -> str:
    """The API reference page of ``package``: its docstring, its constants, each export's documentation.

    Parameters
    ----------
    package : str
        A dotted package name, e.g. ``dpmodels.pgsr``.
    exports : list of (str, str or None, str)
        Its exports, as :func:`export_targets` returns.
    elsewhere : dict, optional
        Collection path -> the reference page (file name) that already documents it: such an
        export (``dpmodels.solve`` is ``dpmodels.core.solve``) is linked there, not repeated.
    """
    elsewhere = elsewhere or {}
    lines = [f"# {package}", "", f"::: {griffe_path(package)}", "    options:", "      members: false"]
    lines += ["      show_root_heading: false", ""]
    if exports:
        lines += ["Exported names: " + ", ".join(f"`{name}`" for name, *_ in exports) + ".", ""]
    constants = [(name, value) for name, target, value in exports if target is None]
    if constants:
        lines += ["## Constants", "", "| name | value |", "| --- | --- |"]
        lines += [f"| `{name}` | `{value.replace('|', '¦')}` |" for name, value in constants] + [""]
    for name, target, alias in exports:
        if target is not None and alias:
            lines += [f"`{name}` is another name for `{alias}`.", ""]
        if target in elsewhere:
            page = elsewhere[target]
            lines += [f"`{name}` is documented on [{page}]({page}.md#{target}).", ""]
        elif target is not None:
            lines += [f"::: {target}", "    options:", "      show_root_full_path: false", ""]
    return "\n".join(lines)


def family_docstring(name: str, package_dir: Path) -> str:
    """The docstring of ``dpmodels/<name>/__init__.py``, read without importing the family.

    Parameters
    ----------
    name : str
        The family's package name.
    package_dir : Path
        The ``dpmodels`` package folder.
    """
    source = (package_dir / name / "__init__.py").read_text(encoding="utf-8")
    return ast.get_docstring(ast.parse(source)) or ""


def guide_page(name: str, docstring: str) -> str:
    """A family's guide generated from its package docstring (Sphinx roles shown as code).

    Parameters
    ----------
    name : str
        The family's package name.
    docstring : str
        Its package docstring.
    """
    text = _ROLE.sub(r"`\1`", docstring).strip() or f"The family `dpmodels.{name}`."
    return (
        f"# {name}\n\n{text}\n\n"
        f"The family's API: [dpmodels.{name}](../reference/{name}.md). This page is generated from the "
        f"package docstring; write `docs/families/{name}.md` to replace it.\n"
    )


def on_config(config):
    """Append every family's guide and reference page and every notebook to the nav."""
    extend_nav(config["nav"], nav_additions(family_names(), notebooks()))
    config["watch"].extend(str(ROOT / folder) for folder in ("notebooks", "dpmodels"))
    return config


@event_priority(100)  # before mkdocs-jupyter's on_files, which wraps the notebooks
def on_files(files: Files, config) -> Files:
    """Add the generated pages and the notebooks to the site's files."""
    from dpmodels.core.families import PACKAGE_DIR

    documented: dict[str, str] = {}  # each object on the first page that exports it (a page per object)
    for page, package in reference_pages(family_names()).items():
        targets = export_targets(package)
        content = reference_page(package, targets, documented)
        documented.update({target: page for _, target, _ in targets if target and target not in documented})
        files.append(File.generated(config, f"reference/{page}.md", content=content))
    for name in family_names():
        if files.get_file_from_path(f"families/{name}.md") is None:
            page = guide_page(name, family_docstring(name, PACKAGE_DIR))
            files.append(File.generated(config, f"families/{name}.md", content=page))
    for path in notebooks():
        uri = path.relative_to(ROOT).as_posix()  # notebooks/<name>.ipynb, read where it lies
        files.append(File(uri, str(ROOT), config["site_dir"], config["use_directory_urls"]))
    return files


def on_page_markdown(markdown: str, page, config, files) -> str:
    """Replace each ``<!-- measurements: FILE.json -->`` line by the tables of that file."""
    return _MARKER.sub(lambda m: render_measurements(DOCS / "measurements" / m.group(1)), markdown)
