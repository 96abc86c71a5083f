import os
import time
from pathlib import Path

import pytest

TIMINGS: dict = {}


def _run_dir(tmp_path_factory, name):
    """A directory of this test run: the session's own, or with pytest-xdist (pyproject's ``-n 2``: one worker
    per core) one directory that every worker of the run shares, so that each model is still generated and
    compiled once per run (the build cache's locks keep two workers from building one model twice)."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        d = tmp_path_factory.getbasetemp().parent / name
        d.mkdir(exist_ok=True)
        return d
    return tmp_path_factory.mktemp(name)


@pytest.fixture(scope="session", autouse=True)
def isolated_cache(tmp_path_factory):
    """Each test run derives into its own empty cache (so the cold timing is real)."""
    d = _run_dir(tmp_path_factory, "symgen-cache")
    old = os.environ.get("SYMGEN_CACHE_DIR")
    os.environ["SYMGEN_CACHE_DIR"] = str(d)
    from symgen.hinges import derive

    derive.clear_memory_cache()
    t0 = time.perf_counter()
    derive.derive_all()
    TIMINGS["derive every hinge type, cold cache"] = time.perf_counter() - t0
    yield d
    if old is None:
        os.environ.pop("SYMGEN_CACHE_DIR", None)
    else:
        os.environ["SYMGEN_CACHE_DIR"] = old


#: the random URDF robots (tests/model_factory.random_urdf(seed, 10)) that several files compare with Pinocchio
RANDOM_URDF_SEEDS = (11, 12)


@pytest.fixture(scope="session")
def urdf_robots(tmp_path_factory):
    """One directory per session with arm7.urdf (the bundled example) and rand11.urdf, rand12.urdf (random
    trees of revolute, continuous, prismatic and fixed joints), shared by test_model_pinocchio, test_dynamics
    and test_per_kind_form: a model is named after its file, so each robot (fixed or floating base, each form)
    is generated and compiled once per session, whichever files use it."""
    from model_factory import random_urdf

    d = _run_dir(tmp_path_factory, "urdf-robots")
    root = Path(__file__).resolve().parents[1]
    files = {"arm7.urdf": (root / "examples" / "models" / "arm7.urdf").read_text()}
    files.update({f"rand{seed}.urdf": random_urdf(seed, 10) for seed in RANDOM_URDF_SEEDS})
    for name, text in files.items():        # written aside, then renamed: a worker never reads half a file
        tmp = d / f".{name}.{os.getpid()}"
        tmp.write_text(text)
        os.replace(tmp, d / name)
    return d


def pytest_terminal_summary(terminalreporter):
    if TIMINGS:
        terminalreporter.section("symgen timings (printed, not asserted)")
        for k, v in TIMINGS.items():
            terminalreporter.write_line(f"{k}: {v:.2f} s")
