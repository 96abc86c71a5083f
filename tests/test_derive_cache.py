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
