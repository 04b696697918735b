"""docs/hooks.py and docs/measurement_tables.py: a new family folder appears in the docs with no edit,
each export is documented once where it is defined, and the measurement tables show the files' values."""

from __future__ import annotations

import copy
import importlib
import importlib.util
import json
import re

import pytest
import yaml
from doc_blocks import DOCS, ROOT

from dpmodels.core.families import family_names


@pytest.fixture(scope="module")
def hooks():
    spec = importlib.util.spec_from_file_location("docs_hooks", DOCS / "hooks.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def tables(hooks):
    import measurement_tables  # importable once the hooks module put docs/ on the path

    return measurement_tables


def _nav() -> list:
    return yaml.safe_load((ROOT / "mkdocs.yml").read_text())["nav"]


def _section(nav: list, title: str) -> list:
    return next(item[title] for item in nav if isinstance(item, dict) and title in item)


def test_every_family_found_gets_a_guide_and_a_reference_entry_in_the_nav(hooks):
    names = (*family_names(), "toy")
    nav = hooks.extend_nav(_nav(), hooks.nav_additions(names, []))
    guides, reference = _section(nav, "Families"), _section(nav, "API reference")
    assert [f"families/{name}.md" for name in names] == [g for g in guides if g.startswith("families/")]
    assert {"dpmodels.toy": "reference/toy.md"} in reference and {"dpmodels.core": "reference/core.md"} in reference
    again = hooks.extend_nav(copy.deepcopy(nav), hooks.nav_additions(names, []))
    assert again == nav  # appending twice (mkdocs serve reloads) adds nothing


def test_mkdocs_yml_lists_no_family_by_hand(hooks):
    nav = _nav()
    assert _section(nav, "Families") == [] and _section(nav, "API reference") == [] and _section(nav, "Notebooks") == []
    with pytest.raises(KeyError, match="Gallery"):
        hooks.extend_nav(nav, {"Gallery": ["x.md"]})


def test_a_family_without_a_guide_gets_one_from_its_package_docstring(hooks, tmp_path):
    (tmp_path / "toy").mkdir()
    (tmp_path / "toy" / "__init__.py").write_text('"""Toy problems.\n\nSee :func:`.models.build_toy`."""\n')
    page = hooks.guide_page("toy", hooks.family_docstring("toy", tmp_path))
    assert page.startswith("# toy\n") and "Toy problems." in page and "See `models.build_toy`." in page
    assert "(../reference/toy.md)" in page


def test_on_files_adds_the_pages_of_a_new_family_and_keeps_hand_written_guides(hooks, monkeypatch):
    from mkdocs.config import load_config
    from mkdocs.structure.files import get_files

    config = load_config(str(ROOT / "mkdocs.yml"))
    monkeypatch.setattr(config.plugins, "_current_plugin", "hooks", raising=False)  # set while MkDocs runs a hook
    monkeypatch.setattr(hooks, "family_names", lambda: ("pgsr", "toy"))
    monkeypatch.setattr(hooks, "family_docstring", lambda name, folder: f"The {name} family.")
    monkeypatch.setattr(hooks, "export_targets", lambda package: [("thing", f"{package}.things.thing", "")])
    files = hooks.on_files(get_files(config), config)
    toy_reference = files.get_file_from_path("reference/toy.md").content_string
    assert "::: dpmodels.toy\n" in toy_reference and "::: dpmodels.toy.things.thing\n" in toy_reference
    assert files.get_file_from_path("families/toy.md").content_string.startswith("# toy\n\nThe toy family.")
    assert files.get_file_from_path("families/pgsr.md").abs_src_path == str(DOCS / "families" / "pgsr.md")
    for notebook in (ROOT / "notebooks").glob("*.ipynb"):
        assert files.get_file_from_path(f"notebooks/{notebook.name}").abs_src_path == str(notebook)


PACKAGES = ["dpmodels", "dpmodels.core", "dpmodels.instances", *(f"dpmodels.{name}" for name in family_names())]


@pytest.mark.parametrize("package", PACKAGES)
def test_export_targets_name_where_each_export_is_defined(hooks, package):
    """Oracle: importing the target's module (the checkout's folders mapped back into dpmodels) gives
    the very object the package exports; a constant is shown by its value instead."""
    module = importlib.import_module(package)
    exports = {name: (target, value) for name, target, value in hooks.export_targets(package)}  # value: or alias
    assert set(exports) == {name for name in module.__all__ if not name.startswith("__")}
    for name, (target, value) in exports.items():
        obj = getattr(module, name)
        if target is None:
            assert not callable(obj) and value and " at 0x" not in value, name
            continue
        home, attr = target.rsplit(".", 1)
        home = home if home.startswith("dpmodels") else f"dpmodels.{home}"
        assert getattr(importlib.import_module(home), attr) is obj and attr == (value or name), name


def test_a_mapping_constant_is_shown_by_its_keys(hooks):
    shown = hooks.constant_value({"M_H": print, "M_c": len})
    assert shown == "dict of 2: 'M_H', 'M_c'"
    assert len(hooks.constant_value("x" * 500)) == 100


def test_an_export_of_two_packages_is_documented_once(hooks):
    exports = [
        ("solve", "dpmodels.core.facade.solve", ""),
        ("Hierarchy", "dpmodels.core.hierarchy.Hierarchy", ""),
        ("LIMIT", None, "10"),
    ]
    page = hooks.reference_page("dpmodels.core", exports, {"dpmodels.core.facade.solve": "dpmodels"})
    assert page.count(":::") == 2 and "::: dpmodels.core.hierarchy.Hierarchy\n" in page
    assert "[dpmodels](dpmodels.md#dpmodels.core.facade.solve)" in page and "| `LIMIT` | `10` |" in page


def test_measurement_tables_show_every_record_of_the_file(tables, tmp_path):
    data = {"sweep": [{"N": 5, "s": 0.01234, "ok": True}, {"N": 10, "s": 1234.56, "note": "a|b"}]}
    data["state"] = {"persons": 328356.0, "runs": [{"executor": "serial", "s": 45.5}]}
    path = tmp_path / "bench.json"
    path.write_text(json.dumps(data))
    text = tables.render_measurements(path)
    rows = [line for line in text.splitlines() if line.startswith("| ") and not line.startswith("| ---")]
    assert rows == [
        "| N | s | ok | note |",
        "| 5 | 0.0123 | true |  |",
        "| 10 | 1,234.6 |  | a\\|b |",
        "| quantity | value |",
        "| persons | 328,356 |",
        "| executor | s |",
        "| serial | 45.5 |",
    ]
    assert "### sweep" in text and "#### state: runs" in text
    path.write_text(json.dumps(data["sweep"]))  # a list of records alone: one part named by the file
    assert tables.render_measurements(path).startswith("### bench\n\n| N | s | ok | note |")
    path.write_text("[1, 2]")
    with pytest.raises(ValueError, match="object of parts"):
        tables.render_measurements(path)


@pytest.mark.parametrize("path", sorted((DOCS / "measurements").glob("*.json")), ids=lambda p: p.name)
def test_each_bench_file_renders_one_row_per_record(tables, path):
    data = json.loads(path.read_text())
    records = sum(len(v) for v in _record_lists(data))
    text = tables.render_measurements(path)
    header_rows = len(re.findall(r"^\| ---", text, re.M))
    data_rows = len(re.findall(r"^\| ", text, re.M)) - 2 * header_rows
    scalar_rows = sum(len(s) for s in _scalar_maps(data))
    assert data_rows == records + scalar_rows


def _record_lists(part):
    if isinstance(part, list) and part and all(isinstance(v, dict) for v in part):
        yield part
    elif isinstance(part, dict):
        for value in part.values():
            yield from _record_lists(value)


def _scalar_maps(part):
    if isinstance(part, dict):
        scalars = [k for k, v in part.items() if not isinstance(v, dict) and not next(_record_lists(v), None)]
        if scalars:
            yield scalars
        for value in part.values():
            if isinstance(value, dict):
                yield from _scalar_maps(value)
