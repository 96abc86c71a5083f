"""Build cost against model size: chains of N bodies (PIN joints about alternating axes).

    python benchmarks/scaling.py [--sizes 10 50 200]

Prints, per N, the generated C size (model translation unit plus included hinge kernels) and the cold build
time (fresh cache: load, generate, compile at -O3, import) and the warm one.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import yaml


def chain(n: int) -> dict:
    axes = [[0, 0, 1], [0, 1, 0], [1, 0, 0]]
    bodies = []
    for i in range(n):
        bodies.append({"name": f"b{i}", "parent": "newtonian" if i == 0 else f"b{i - 1}", "mass": 1.0,
                       "com": [0, 0, 0.05], "inertia": [0.01, 0.01, 0.005, 0, 0, 0],
                       "hinge": {"type": "PIN", "axis": axes[i % 3]}, "onode": {"xyz": [0, 0, 0.1] if i else [0, 0, 0]}})
    return {"name": f"chain{n}", "bodies": bodies}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", nargs="+", type=int, default=[10, 50, 200])
    args = ap.parse_args(argv)
    print(f"{'bodies':>7} {'C kB':>8} {'C lines':>8} {'cold s':>8} {'warm s':>8}")
    with tempfile.TemporaryDirectory() as tmp:
        for n in args.sizes:
            model = Path(tmp) / f"chain{n}.yaml"
            model.write_text(yaml.safe_dump(chain(n)))
            env = dict(os.environ, SYMGEN_CACHE_DIR=str(Path(tmp) / f"cache{n}"))
            times = []
            for _ in range(2):
                t = time.perf_counter()
                subprocess.run([sys.executable, "-m", "symgen", "build", str(model), "--out", str(Path(tmp) / "gen")],
                               env=env, check=True, capture_output=True)
                times.append(time.perf_counter() - t)
            folder = Path(tmp) / "gen" / f"chain{n}"
            texts = [f.read_text() for f in folder.glob("*.[ch]")]
            kb = sum(len(t) for t in texts) / 1024
            lines = sum(t.count("\n") for t in texts)
            print(f"{n:7d} {kb:8.1f} {lines:8d} {times[0]:8.2f} {times[1]:8.2f}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
