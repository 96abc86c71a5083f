"""Build and load cost against model size: chains of N bodies (PIN joints about alternating axes), and the
benchmark robots.

    python benchmarks/scaling.py [--sizes 10 50 200 1000] [--robots arm6 arm7 quadruped:floating humanoid:floating]
                                 [--json out.json] [--md out.md]

Prints, per model, the generated C size (model translation unit plus included hinge kernels), the cold
build time (``python -m symgen build`` in a new process with a fresh cache: load, derive, generate, compile
at -O3, import) and the warm one (the same command again: a cache hit, Python's start and imports
included), then, in one new process on the warm cache: ``pkg load`` the load of the installed package
(``symgen.runtime.load_built`` of ``generated/<model>/``: manifest, module, no sympy), ``build warm`` a
second ``symgen.build`` of the model file in that process (read the file, sources from the cache, module,
the singular-hinge check), and ``fd ns/body`` the batched forward dynamics of 1000 random states per body
per state (median of 7 rounds).  ``--robots`` takes the names of vs_pinocchio.py (``name[:floating]``);
``--sizes 0`` or ``--robots`` with no names skips a part.
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


_LOAD_SCRIPT = r"""
import json, statistics, sys, time
pkg, model, floating = sys.argv[1], sys.argv[2], sys.argv[3] == "1"
from symgen.runtime import load_built
t = time.perf_counter()
mb = load_built(pkg)
pkg_s = time.perf_counter() - t
import numpy as np
import symgen
symgen.build(model, floating_base=floating)                       # the imports and the first-use work
t = time.perf_counter()
symgen.build(model, floating_base=floating)
build_s = time.perf_counter() - t
rng = np.random.default_rng(0)
n = 1000
Q = mb.sanitize(rng.uniform(-2, 2, (n, mb.nq)))
U, T = rng.normal(size=(n, mb.nu)), rng.normal(size=(n, mb.nu))
out = np.empty((n, mb.nu))
mb.forward_dynamics(Q, U, T, out=out)
times = []
for _ in range(7):
    t = time.perf_counter()
    mb.forward_dynamics(Q, U, T, out=out)
    times.append(time.perf_counter() - t)
print(json.dumps({"pkg_load_s": pkg_s, "build_warm_s": build_s,
                  "fd_ns_per_body": statistics.median(times) / n / mb.nb * 1e9}))
"""


def _load_cost(model: Path, name: str, tmp: Path, floating: bool = False) -> dict:
    """Warm-cache load times and FD per body in a new process (see the module docstring)."""
    env = dict(os.environ, SYMGEN_CACHE_DIR=str(tmp / f"cache-{name}"))
    pkg = next(p for p in (tmp / f"gen-{name}").iterdir() if (p / "manifest.json").exists())
    res = subprocess.run([sys.executable, "-c", _LOAD_SCRIPT, str(pkg), str(model), "1" if floating else "0"],
                         env=env, check=True, capture_output=True, text=True)
    return json.loads(res.stdout.strip().splitlines()[-1])


def markdown(results: dict, cmd: str) -> str:
    """The results as a markdown table."""
    lines = [f"# scaling: build and load cost against model size", "", f"`{cmd}`", "",
             "| model | C kB | C lines | cold build s | warm CLI s | pkg load s | build warm s | fd ns/body/state |",
             "|---|---:|---:|---:|---:|---:|---:|---:|"]
    rows = [(f"chain{n}", r) for n, r in results["chains"].items()] + list(results["robots"].items())
    for name, r in rows:
        lines.append(f"| {name} | {r['C_kB']:.1f} | {r['C_lines']} | {r['cold_s']:.2f} | {r['warm_s']:.2f} | "
                     f"{r['pkg_load_s']:.3f} | {r['build_warm_s']:.3f} | {r['fd_ns_per_body']:.1f} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", nargs="+", type=int, default=[10, 50, 200, 1000])
    ap.add_argument("--robots", nargs="*", default=None, help="benchmark robots (default: the four of vs_pinocchio)")
    ap.add_argument("--json", help="also write the results here")
    ap.add_argument("--md", help="also write the results here as a markdown table")
    args = ap.parse_args(argv)
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from bench_common import DEFAULT_ROBOTS, parse_robot

    robots = DEFAULT_ROBOTS if args.robots is None else args.robots
    results = {"chains": {}, "robots": {}}
    head = f"{'model':>20} {'C kB':>8} {'C lines':>8} {'cold s':>8} {'warm s':>8} {'pkg load s':>10} " \
           f"{'build warm s':>12} {'fd ns/body':>10}"
    print(head, flush=True)

    def row(label, r):
        print(f"{label:>20} {r['C_kB']:8.1f} {r['C_lines']:8d} {r['cold_s']:8.2f} {r['warm_s']:8.2f} "
              f"{r['pkg_load_s']:10.3f} {r['build_warm_s']:12.3f} {r['fd_ns_per_body']:10.1f}", flush=True)

    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        for n in (n for n in args.sizes if n > 0):
            model = tmp / f"chain{n}.yaml"
            model.write_text(yaml.safe_dump(chain(n)))
            r = results["chains"][n] = _build_cost(model, f"chain{n}", tmp)
            r.update(_load_cost(model, f"chain{n}", tmp))
            row(f"chain{n}", r)
        for spec in robots:
            path, floating = parse_robot(spec)
            r = results["robots"][spec] = _build_cost(path, path.stem, tmp, ["--floating-base"] if floating else [])
            r.update(_load_cost(path, path.stem, tmp, floating))
            row(spec, r)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))
    if args.md:
        Path(args.md).write_text(markdown(results, "python benchmarks/scaling.py " + " ".join(argv or sys.argv[1:])))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
