"""The derivation cache: a warm cache does no symbolic work; keys follow the spec; bad files heal."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import symgen
from conftest import TIMINGS
from symgen.hinges import derive
from symgen.hinges import bind

ROOT = Path(__file__).resolve().parents[1]


def test_warm_cache_does_no_symbolic_work():
    """A new process with the session's (now warm) cache derives every hinge type with derive()
    disabled, and reports how long that took."""
    script = textwrap.dedent("""
        import time
        t0 = time.perf_counter()
        import symgen.hinges.derive as d
        def forbidden(spec):
            raise AssertionError("symbolic work on a warm cache: " + spec.key())
        d.derive = forbidden
        d.derive_all()
        for name in d.KERNELS:
            pass
        print(f"{time.perf_counter() - t0:.3f}", d.stats["disk_hits"], d.stats["derived"])
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT,
                         env=dict(os.environ), check=True)
    seconds, hits, derived_count = out.stdout.split()
    assert int(hits) == len(symgen.HINGE_TYPES) and int(derived_count) == 0
    TIMINGS["derive every hinge type, warm cache (new process incl. imports)"] = float(seconds)


def test_keys_follow_the_spec():
    k = derive.derivation_key
    assert k(bind("PIN")) == k(bind("PIN", axis=(0, 0, 1)))
    assert k(bind("PIN")) != k(bind("PIN", axis=(0, 1, 0)))
    assert k(bind("HELICAL", pitch=0.1)) != k(bind("HELICAL", pitch=0.2))
    assert k(bind("UJOINT")) != k(bind("HOOKE", ij_q=(0, 0, 0, 1)))  # same kinematics, other type


def test_corrupt_cache_file_is_rederived(tmp_path, monkeypatch):
    monkeypatch.setenv("SYMGEN_CACHE_DIR", str(tmp_path))
    derive.clear_memory_cache()
    spec = bind("UJOINT", axes=[(0, 1, 0), (1, 0, 0)])
    first = derive.derived(spec)
    path = tmp_path / "derive" / f"{derive.derivation_key(spec)}.pkl"
    assert path.exists()
    path.write_bytes(path.read_bytes()[:40])  # a half-written file from a killed process
    derive.clear_memory_cache()
    before = derive.stats["derived"]
    again = derive.derived(spec)
    assert derive.stats["derived"] == before + 1
    assert again["coord_map"] == first["coord_map"]
    derive.clear_memory_cache()
    hits = derive.stats["disk_hits"]
    derive.derived(spec)
    assert derive.stats["disk_hits"] == hits + 1  # the rewritten file is good again
    assert not list(path.parent.glob("*.tmp"))


def test_specs_derived_in_worker_processes_are_the_ones_derived_here(tmp_path, monkeypatch):
    """symgen.pipeline.sources._derive_in_parallel derives a model's uncached hinge specs in forked workers (one
    per core) into the cache: run in a fresh process (one thread: it forks), the files are byte for byte those this
    process writes for the same specs in a fresh cache; with another thread running (a notebook's kernel, or this
    test process's) nothing is forked."""
    import json
    import threading

    import pytest

    from symgen.model import load_model
    from symgen.pipeline import sources

    if (os.cpu_count() or 1) < 2:
        pytest.skip("one core: the specs are derived in this process")
    path = ROOT / "examples" / "models" / "quadruped.urdf"
    script = textwrap.dedent(f"""
        import threading
        from symgen.model import load_model
        from symgen.pipeline import sources
        assert threading.active_count() == 1
        sources._derive_in_parallel(load_model({str(path)!r}, floating_base=True))
    """)
    env = dict(os.environ, SYMGEN_CACHE_DIR=str(tmp_path / "parallel"), PYTHONPATH=str(ROOT))
    res = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    model = load_model(str(path), floating_base=True)
    specs = {derive.hinge(b.hinge_type, **b.hinge_kwargs()).spec.key(): b for b in model.bodies}
    assert len(specs) >= 2
    monkeypatch.setenv("SYMGEN_CACHE_DIR", str(tmp_path / "parallel"))
    paths = {k: sources._hinge_sources_path(derive.hinge(b.hinge_type, **b.hinge_kwargs())) for k, b in specs.items()}
    assert all(p.exists() for p in paths.values()), paths
    parallel = {k: json.loads(p.read_text()) for k, p in paths.items()}
    monkeypatch.setenv("SYMGEN_CACHE_DIR", str(tmp_path / "here"))
    derive.clear_memory_cache()
    for k, b in specs.items():
        files, manifest = sources.hinge_sources(derive.hinge(b.hinge_type, **b.hinge_kwargs()))
        assert parallel[k] == {"files": files, "manifest": manifest}, k
    monkeypatch.setenv("SYMGEN_CACHE_DIR", str(tmp_path / "threaded"))
    derive.clear_memory_cache()
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()
    try:
        sources._derive_in_parallel(model)
    finally:
        stop.set()
        other.join()
    assert not (tmp_path / "threaded" / "emit").exists()
    derive.clear_memory_cache()
