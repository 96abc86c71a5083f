"""Forward dynamics of a spacecraft with flexible solar arrays: what the modes cost.

    python benchmarks/flexible.py [--n 4000] [--rounds 5] [--modes 1 5 20] [--json F]

Models (all built from examples/models/flexible_spacecraft.yaml: a FULL6DOF bus, two arrays on PIN drives):
* ``rigid``: the arrays' modes removed, so each array is the rigid body with its nodes as point masses (what
  the loader makes of ``modes: []``): nU = 8;
* ``example``: the example itself, 6 nodes and 4 modes per array: nU = 16;
* ``<k> modes``: each array's panel replaced by 12 nodes (3 columns x 4 rows, 2 kg each) carrying k modes per
  array, shapes drawn at random and made mass-orthogonal over the nodes (QR), frequencies 0.3 (j + 1) Hz.

Columns (µs per state, median of ``--rounds``): ``C batch``: one ``mb.forward_dynamics(Q, U, T, out=)`` call on
``--n`` states divided by n (the lane form, 8 states per C call); ``Python call``: one-state
``mb.forward_dynamics(q, u, T)``; the C source lines of the one-state FD function (straight-line), the build time
of the model from a warm hinge cache (generate + compile, seconds), and ``vs rigid`` = C batch / the rigid model's.
The table goes to benchmarks/flexible_latest.md.
"""
from __future__ import annotations

import argparse
import copy
import json
import os
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import yaml

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
EXAMPLE = ROOT / "examples" / "models" / "flexible_spacecraft.yaml"


def synthetic_flex(side: str, k: int, seed: int) -> dict:
    """12 nodes on a 1.2 m x 3.6 m panel and k mass-orthogonal random modes (k <= 36)."""
    rng = np.random.default_rng(seed)
    nodes = [{"name": f"{side}_n{i}{j}", "pos": [x, y, 0.0], "mass": 2.0}
             for i, y in enumerate((1.0, 1.8, 2.6, 3.4)) for j, x in enumerate((-0.6, 0.0, 0.6))]
    A = rng.normal(size=(3 * len(nodes), k))
    Qm, _ = np.linalg.qr(A)                   # orthonormal columns; equal masses: mass-orthogonal shapes
    modes = []
    for j in range(k):
        shape = Qm[:, j].reshape(len(nodes), 3)
        modes.append({"frequency": 0.3 * (j + 1), "damping": 0.005,
                      "shape": {nd["name"]: [float(x) for x in shape[i]] for i, nd in enumerate(nodes)}})
    return {"nodes": nodes, "modes": modes}


def variants(modes_list) -> dict:
    base = yaml.safe_load(EXAMPLE.read_text())
    out = {}
    rigid = copy.deepcopy(base)
    for b in rigid["bodies"]:
        if "flex" in b:
            b["flex"]["modes"] = []
    out["rigid"] = rigid
    out["example"] = base
    for k in modes_list:
        d = copy.deepcopy(base)
        for s, b in enumerate(b for b in d["bodies"] if "flex" in b):
            b["flex"] = synthetic_flex(b["name"], k, seed=k * 10 + s)
        out[f"{k} modes"] = d
    for name, d in out.items():
        d["name"] = "flexbench_" + re.sub(r"\W", "_", name)
    return out


def bench(d: dict, n: int, rounds: int) -> dict:
    from symgen.model import model_from_dict
    from symgen.pipeline.package import build_model

    t = time.perf_counter()
    model = model_from_dict(d, f"<{d['name']}>")
    mb = build_model(model)
    build = time.perf_counter() - t
    rng = np.random.default_rng(0)
    Q = mb.sanitize(rng.uniform(-1, 1, (n, mb.nq)))
    Q[:, 7:] *= 0.05                                # drive angles and modal coordinates: small
    U, T = 0.1 * rng.normal(size=(n, mb.nu)), rng.normal(size=(n, mb.nu))
    out = np.empty((n, mb.nu))
    mb.forward_dynamics(Q, U, T, out=out)
    batch, one = [], []
    q, u, tau = Q[0].copy(), U[0].copy(), T[0].copy()
    for _ in range(rounds):
        t = time.perf_counter()
        mb.forward_dynamics(Q, U, T, out=out)
        batch.append((time.perf_counter() - t) / n)
        t = time.perf_counter()
        for _ in range(2000):
            mb.forward_dynamics(q, u, tau)
        one.append((time.perf_counter() - t) / 2000)
    return {"nU": mb.nu, "modes": sum(len(b.get("flex", {}).get("modes", [])) for b in d["bodies"]),
            "c_batch_us": 1e6 * statistics.median(batch), "python_call_us": 1e6 * statistics.median(one),
            "build_s": build, "fd_lines": fd_lines(model)}


def fd_lines(model) -> int | None:
    """Lines of the one-state forward dynamics function in the model's C source (the build's cached sources)."""
    from symgen.pipeline.sources import cached_model_sources

    files, manifest = cached_model_sources(model)
    m = re.search(r"\nint sg_\w+_forward_dynamics\(const double \*q[^;{]*\{(.*?)\n\}", files[f"{manifest['name']}.c"], re.S)
    return m.group(1).count("\n") if m else None


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=4000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--modes", type=int, nargs="*", default=[1, 5, 20])
    ap.add_argument("--json", type=Path)
    ap.add_argument("--out", type=Path, default=BENCH / "flexible_latest.md")
    args = ap.parse_args()
    os.environ.setdefault("SYMGEN_CACHE_DIR", tempfile.mkdtemp(prefix="symgen-flexbench-"))
    from symgen.hinges import derive

    derive.derive_all()                             # the hinge kernels once, so that the build column is the model's
    res = {}
    for name, d in variants(args.modes).items():
        res[name] = bench(d, args.n, args.rounds)
        print(f"{name:>10}: nU {res[name]['nU']:3d}  C batch {res[name]['c_batch_us']:.3f} µs/state  "
              f"Python call {res[name]['python_call_us']:.2f} µs  build {res[name]['build_s']:.2f} s", flush=True)
    rigid = res["rigid"]["c_batch_us"]
    lines = ["| model | modes (total) | nU | FD lines | C batch µs/state | vs rigid | Python call µs | build s |",
             "|---|---|---|---|---|---|---|---|"]
    for name, r in res.items():
        lines.append(f"| {name} | {r['modes']} | {r['nU']} | {r['fd_lines']} | {r['c_batch_us']:.3f} | {r['c_batch_us'] / rigid:.2f}x | "
                     f"{r['python_call_us']:.2f} | {r['build_s']:.2f} |")
    table = "\n".join(lines)
    print(table)
    args.out.write_text("# Flexible spacecraft: forward dynamics per state (benchmarks/flexible.py)\n\n"
                        f"n = {args.n} states, median of {args.rounds} rounds; build from a warm hinge cache.\n\n"
                        + table + "\n")
    if args.json:
        args.json.write_text(json.dumps(res, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
