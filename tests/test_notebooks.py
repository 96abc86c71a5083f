"""The example notebooks (examples/notebooks/*.ipynb) run clean, and are committed without outputs.

Each notebook is executed from a fresh kernel with nbclient, cell by cell, in its own directory (so it finds
the example models as ``../models/``).  The kernel inherits this process's environment: ``SYMGEN_CACHE_DIR``
(the session cache of tests/conftest.py, so models other tests built are cache hits) and ``MPLBACKEND=Agg``
(plots render off screen).  A cell that raises fails the test with the cell's source and the error; the
notebooks' own ``assert`` cells are the checks (each against an independent oracle, see the notebooks).
"""
from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")
pytest.importorskip("matplotlib")

from conftest import TIMINGS  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
NB_DIR = ROOT / "examples" / "notebooks"
NOTEBOOKS = sorted(NB_DIR.glob("*.ipynb"))
IDS = [p.stem for p in NOTEBOOKS]
#: per cell; a cold cache builds the spacecraft (about 10 s on this machine) inside one cell
CELL_TIMEOUT = 600
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


def _files(*dirs):
    """Files under the given directories (the notebooks must not write into the repository)."""
    return {p for d in dirs for p in d.rglob("*") if p.is_file() and "__pycache__" not in p.parts
            and ".ipynb_checkpoints" not in p.parts}


def _cell_error(cell) -> str:
    for out in cell.get("outputs", []):
        if out.get("output_type") == "error":
            return _ANSI.sub("", "\n".join(out.get("traceback", [])) or f"{out['ename']}: {out['evalue']}")
    return ""


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


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_notebook_runs(path, monkeypatch):
    """Execute every code cell from a clean kernel; fail with the failing cell's source and error."""
    monkeypatch.setenv("MPLBACKEND", "Agg")
    nb = nbformat.read(path, as_version=4)
    watched = (NB_DIR, ROOT / "examples" / "models")
    before = _files(*watched)
    client = nbclient.NotebookClient(nb, timeout=CELL_TIMEOUT, kernel_name="python3",
                                     resources={"metadata": {"path": str(NB_DIR)}})
    t0 = time.perf_counter()
    failed = None
    with client.setup_kernel():
        for i, cell in enumerate(nb.cells):
            if cell.cell_type != "code":
                continue
            try:
                client.execute_cell(cell, i)
            except nbclient.exceptions.CellExecutionError as e:
                failed = (i, cell, e)
                break
    if failed:                                  # outside the except block: no chained nbclient traceback
        i, cell, e = failed
        pytest.fail(f"{path.name}: cell {i} raised {e.ename}: {e.evalue}\n"
                    f"----- cell {i} source -----\n{cell.source}\n"
                    f"----- error -----\n{_cell_error(cell) or _ANSI.sub('', str(e))}", pytrace=False)
    TIMINGS[f"notebook {path.name} (nbclient, new kernel)"] = time.perf_counter() - t0
    created = sorted(str(p.relative_to(ROOT)) for p in _files(*watched) - before)
    assert not created, f"{path.name} wrote into the repository: {created}"
