"""Code blocks of Markdown pages (the README and docs/), and running them as a reader would."""

from __future__ import annotations

import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"

#: The one way to exempt a block from running: this comment on the line just above its fence.
SKIP = re.compile(r"<!-- docs-test: skip (?P<reason>\S.*?) -->")
_FENCE = re.compile(r"^```(?P<lang>[\w-]*)[^\n]*\n(?P<code>.*?)^```[ \t]*$", re.M | re.S)


@dataclass(frozen=True)
class Block:
    """One fenced code block: where it is, its language, its code and why it is skipped, if so."""

    page: str
    index: int
    lang: str
    code: str
    skip: str | None

    def __str__(self) -> str:
        return f"{self.page}#{self.index}"


def blocks(path: Path, lang: str | None = None) -> list[Block]:
    """The fenced blocks of the Markdown file ``path`` (only ``lang`` ones if given), in order."""
    text = path.read_text(encoding="utf-8")
    found = []
    for match in _FENCE.finditer(text):
        before = text[: match.start()].rstrip("\n").rsplit("\n", 1)[-1]
        skip = SKIP.fullmatch(before.strip())
        found.append(Block(_name(path), len(found), match["lang"], match["code"], skip["reason"] if skip else None))
    return [b for b in found if lang is None or b.lang == lang]


def _name(path: Path) -> str:
    return path.relative_to(ROOT).as_posix() if path.is_relative_to(ROOT) else str(path)


def doc_pages() -> list[Path]:
    """Every Markdown page under docs/ (subfolders included), sorted."""
    return sorted(DOCS.rglob("*.md"))


def python_code(path: Path, index: int = 0) -> str:
    """The code of the ``index``-th ```python block of ``path``."""
    return blocks(path, "python")[index].code


def run_script(code: str, folder: Path, name: str = "snippet.py", timeout: float = 600):
    """Save ``code`` in ``folder`` and run it there in a fresh Python process."""
    script = folder / name
    script.write_text(code, encoding="utf-8")
    return subprocess.run([sys.executable, script], cwd=folder, capture_output=True, text=True, timeout=timeout)


def exec_block(code: str, origin: str) -> dict:
    """Execute ``code`` in this process; its global names, for the assertions on what it made."""
    scope: dict = {"__name__": "__docs_block__"}
    exec(compile(code, origin, "exec"), scope)
    return scope
