"""The example notebooks (examples/notebooks/*.ipynb) are committed without outputs, each with an assert cell.

They are executed by the documentation build (tests/test_docs.py: ``python -m symgen docs`` runs every notebook
with myst-nb in a fresh kernel, in its own directory, so it finds the example models as ``../models/``, with this
session's ``SYMGEN_CACHE_DIR`` and ``MPLBACKEND=Agg``), once per test run: a cell that raises fails the docs build
with the cell's traceback, and that test also checks that no notebook wrote into the repository.  The notebooks'
own ``assert`` cells are the checks (each against an independent oracle, see the notebooks).
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")

ROOT = Path(__file__).resolve().parents[1]
NB_DIR = ROOT / "examples" / "notebooks"
NOTEBOOKS = sorted(NB_DIR.glob("*.ipynb"))
IDS = [p.stem for p in NOTEBOOKS]


def test_notebooks_found():
    assert {p.name for p in NOTEBOOKS} >= {"hinges.ipynb", "model.ipynb", "pinocchio_users.ipynb",
                                           "closed_chains.ipynb"}


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_notebook_committed_without_outputs(path):
    """Committed notebooks carry no outputs and no execution counts, and open with a markdown cell."""
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    assert nb.cells and nb.cells[0].cell_type == "markdown", f"{path.name}: the first cell must be markdown"
    dirty = [i for i, c in enumerate(nb.cells)
             if c.cell_type == "code" and (c.get("outputs") or c.get("execution_count") is not None)]
    assert not dirty, f"{path.name}: cells {dirty} have outputs or execution counts; strip them before committing"
    assert any(c.cell_type == "code" and re.search(r"^\s*assert\b", c.source, re.M) for c in nb.cells), \
        f"{path.name}: no assert cell"
