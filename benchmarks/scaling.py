"""Build cost: chains of N bodies (PIN joints about alternating axes), and the benchmark robots.

    python benchmarks/scaling.py [--sizes 10 50 200] [--robots arm6 arm7 quadruped:floating humanoid:floating]
                                 [--json out.json]

Prints, per model, the generated C size (model translation unit plus included hinge kernels) and the cold
build time (``python -m symgen build`` in a new process with a fresh cache: load, derive, generate, compile
at -O3, import) and the warm one (the same command again: a cache hit).  ``--robots`` takes the names of
vs_pinocchio.py (``name[:floating]``); ``--sizes 0`` or ``--robots`` with no names skips a part.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
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


def _build_cost(model: Path, name: str, tmp: Path, extra=()) -> dict:
    env = dict(os.environ, SYMGEN_CACHE_DIR=str(tmp / f"cache-{name}"))
    times = []
    for _ in range(2):
        t = time.perf_counter()
        subprocess.run([sys.executable, "-m", "symgen", "build", str(model), *extra, "--out", str(tmp / f"gen-{name}")],
                       env=env, check=True, capture_output=True)
        times.append(time.perf_counter() - t)
    texts = [f.read_text() for f in (tmp / f"gen-{name}").glob("*/*.[ch]")]
    return {"C_kB": sum(len(t) for t in texts) / 1024, "C_lines": sum(t.count("\n") for t in texts),
            "cold_s": times[0], "warm_s": times[1]}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", nargs="+", type=int, default=[10, 50, 200])
    ap.add_argument("--robots", nargs="*", default=None, help="benchmark robots (default: the four of vs_pinocchio)")
    ap.add_argument("--json", help="also write the results here")
    args = ap.parse_args(argv)
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from bench_common import DEFAULT_ROBOTS, parse_robot

    robots = DEFAULT_ROBOTS if args.robots is None else args.robots
    results = {"chains": {}, "robots": {}}
    print(f"{'model':>20} {'C kB':>8} {'C lines':>8} {'cold s':>8} {'warm s':>8}", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        for n in (n for n in args.sizes if n > 0):
            model = tmp / f"chain{n}.yaml"
            model.write_text(yaml.safe_dump(chain(n)))
            r = results["chains"][n] = _build_cost(model, f"chain{n}", tmp)
            print(f"{'chain' + str(n):>20} {r['C_kB']:8.1f} {r['C_lines']:8d} {r['cold_s']:8.2f} {r['warm_s']:8.2f}",
                  flush=True)
        for spec in robots:
            path, floating = parse_robot(spec)
            r = results["robots"][spec] = _build_cost(path, path.stem, tmp, ["--floating-base"] if floating else [])
            print(f"{spec:>20} {r['C_kB']:8.1f} {r['C_lines']:8d} {r['cold_s']:8.2f} {r['warm_s']:8.2f}", flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
