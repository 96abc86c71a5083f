"""Shared fixtures (one build cache per test run) and the test tiers.

``python -m pytest`` runs the whole suite (522-543 s on 2 cores on a clean clone at -O0, 2026-11-28 late,
after -O0 modules became one compiler run per file; 569-646 s before, 1229 s at -O3).  The fast tier,
``python -m pytest -m "not slow"``, takes about 107 s of CPU (58 s on 2 idle cores, 2026-11-28 night) and
still crosses every layer: every hinge type derived (``isolated_cache`` below), the hinge registry with types
registered in the test, their derivations and compiled C kernels, and a model of them (test_hinge_registry); the
bundled arm7 built end to end and run from a plain C program (test_model_build); forward and inverse dynamics,
poses and Jacobians against Pinocchio on arm7, fixed and floating (test_dynamics, test_model_pinocchio); the
loaders, the build cache, the warnings, the import layers and the CLI.  What it leaves out is marked ``slow`` here
(pytest_collection_modifyitems, from :data:`SLOW_FILES`, :data:`FAST_ONLY` and :data:`SLOW_TESTS`), not in the
files: the files that build many or large models (derivatives, closed chains, lanes, sweeps, notebooks, the
per-kind form, the comparisons with MuJoCo, real robots, every hinge's C kernels and LaTeX, the docs site).  A new
test file is in the fast tier until it is listed here.
"""
import fnmatch
import os
import time
from pathlib import Path

import pytest

#: the suite compiles its models without optimization (symgen.pipeline.compile.opt_flags, SYMGEN_OPT=0): the same
#: numbers bit for bit in a tenth of the compile time (a big model's long functions 10-20 times less), which is most
#: of the suite's time; tests/test_opt_levels.py checks the default level (-O3) against it, bit for bit.
#: ``SYMGEN_OPT=3 python -m pytest`` runs the suite on optimized modules.
os.environ.setdefault("SYMGEN_OPT", "0")

#: files whose every test is slow (they build many or large models)
SLOW_FILES = {
    "test_closed_chains.py", "test_closed_chains_pinocchio.py", "test_closed_chains_robust.py",
    "test_closed_examples.py", "test_compound_hinge.py", "test_c_kernels.py", "test_derivatives.py", "test_docs.py",
    "test_fast_paths.py", "test_flexible.py", "test_hinge_identities.py", "test_lane_widths.py", "test_lanes.py",
    "test_load_checks.py", "test_mjcf.py",
    "test_model_kinematics.py", "test_notebooks.py", "test_opt_levels.py", "test_parametric.py", "test_per_kind_form.py",
    "test_real_robots.py", "test_rollout.py", "test_shipped_c.py", "test_sweep.py", "test_sympy_printing.py",
}
#: files of which only the tests matching these patterns (fnmatch, on the name with its parameters) are fast:
#: one robot, arm7, against Pinocchio
FAST_ONLY = {
    "test_dynamics.py": ["test_dynamics_match_pinocchio[[]arm7-*"],
    "test_model_pinocchio.py": ["*[[]arm7-*"],
    "test_centroidal.py": ["*[[]arm7-*"],
    "test_ir_printers.py": ["*[[]arm7*"],
}
#: single slow tests of otherwise fast files ("file::name", fnmatch)
SLOW_TESTS = [
    "test_build_cache.py::test_build_hinges_cli_cold_and_warm",    # the kernels of every hinge type, cold
    "test_cli_and_docs.py::test_every_kernel_renders_as_latex*",   # sympy's LaTeX of every hinge's kernels
    "test_cli_and_docs.py::test_cli_bench[[]arm7*",                # (the double pendulum's bench stays)
    "test_model_build.py::test_default_q_and_default_transform",
    "test_warnings.py::test_icub_floating_*",                      # iCub, floating: a 38-body build
]


def _is_slow(item) -> bool:
    file, name = item.path.name, item.name
    if file in SLOW_FILES:
        return True
    if file in FAST_ONLY and not any(fnmatch.fnmatchcase(name, p) for p in FAST_ONLY[file]):
        return True
    return any(fnmatch.fnmatchcase(f"{file}::{name}", p) for p in SLOW_TESTS)


def pytest_collection_modifyitems(config, items):
    """Mark the slow tests (module docstring); ``-m "not slow"`` deselects them."""
    for item in items:
        if _is_slow(item):
            item.add_marker(pytest.mark.slow)


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
