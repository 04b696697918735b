"""Re-execute the notebooks in place, so that the documentation's gallery shows their outputs.

Usage (from anywhere)::

    python docs/execute_notebooks.py                        # every notebooks/*.ipynb
    python docs/execute_notebooks.py notebooks/pgsr.ipynb   # some of them

Each notebook runs in a fresh kernel with its folder as the working directory, cells in order,
and is written back with its outputs only if every cell succeeded (a failing notebook is left as
it was and the script exits 1, naming it).
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"


def execute_notebook(path: Path, timeout: int = 600, kernel: str = "python3") -> float:
    """Execute the notebook ``path`` and write it back with its outputs.

    Parameters
    ----------
    path : Path
        The ``.ipynb`` file.
    timeout : int
        Seconds a cell may take.
    kernel : str
        The Jupyter kernel to run it in.

    Returns
    -------
    float
        The seconds it took.
    """
    import nbformat
    from nbclient import NotebookClient

    started = time.perf_counter()
    with warnings.catch_warnings():  # a cell without an id: normalize below gives it one
        warnings.simplefilter("ignore", nbformat.warnings.MissingIDFieldWarning)
        _, normalized = nbformat.validator.normalize(nbformat.read(path, as_version=4))
    notebook = nbformat.from_dict(normalized)
    folder = {"metadata": {"path": path.parent}}  # the notebook's folder is its working directory
    NotebookClient(notebook, timeout=timeout, kernel_name=kernel, resources=folder).execute()
    notebook.metadata.pop("widgets", None)
    nbformat.write(notebook, path)
    return time.perf_counter() - started


def _arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("notebooks", nargs="*", type=Path, help="notebooks to run (default: every notebooks/*.ipynb)")
    parser.add_argument("--timeout", type=int, default=600, help="seconds per cell (default: 600)")
    args = parser.parse_args(argv)
    for path in args.notebooks:
        if path.suffix != ".ipynb" or not path.is_file():
            parser.error(f"notebooks: {path} is not a .ipynb file")
    if args.timeout <= 0:
        parser.error("--timeout: must be positive")
    return args


def main(argv: list[str] | None = None) -> int:
    """Execute the notebooks named on the command line (default: all); 1 if one fails.

    Parameters
    ----------
    argv : list of str, optional
        The arguments (default: ``sys.argv[1:]``).
    """
    args = _arguments(argv)
    failed = []
    for path in args.notebooks or sorted(NOTEBOOKS.glob("*.ipynb")):
        try:
            seconds = execute_notebook(path.resolve(), args.timeout)
        except Exception as exc:  # report every notebook, then fail
            failed.append(path)
            print(f"{path}: FAILED, left unchanged: {type(exc).__name__}: {str(exc)[-2000:]}", file=sys.stderr)
        else:
            print(f"{path}: executed in {seconds:.1f} s")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
