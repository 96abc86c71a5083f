"""symgen vs Pinocchio, side by side in one process (speed lives here, never in the tests).

    python benchmarks/vs_pinocchio.py [--robots arm6 arm7 quadruped:floating humanoid:floating ...]
                                      [--n 10000] [--rounds 7] [--json results.json]

A robot is a URDF path or a name in examples/models/; ``:floating`` gives it a floating base.

For every robot: the same URDF into symgen and Pinocchio, the same random states, a warm-up, then
``--rounds`` interleaved rounds; each number is the median over the rounds of the time per call (or per
state for batches).  Rows:

* ``fd``  forward dynamics   (symgen ATBI       vs ``pin.aba``)
* ``id``  inverse dynamics   (symgen Newton-Euler vs ``pin.rnea``)
* ``M``   mass matrix        (symgen CRBA       vs ``pin.crba``)
* ``fk``  poses of all bodies (symgen ``poses`` kernel vs ``framesForwardKinematics``)
* ``jac`` one frame Jacobian (the last link; ``pin.computeFrameJacobian``)

Columns: ``py1`` one call from Python per state, ``batch`` one symgen call for ``--n`` states (per state),
Pinocchio one call from Python; ratio = symgen / Pinocchio.  Not measured yet (issue 6): the plain-C harness
against Pinocchio's C++ API, and MuJoCo.
"""
from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))


def _robot_path(name: str) -> Path:
    p = Path(name)
    if p.suffix == ".urdf" and p.exists():
        return p
    cand = ROOT / "examples" / "models" / f"{name}.urdf"
    if cand.exists():
        return cand
    raise SystemExit(f"vs_pinocchio: no robot {name!r} (give a .urdf path or a name in examples/models/)")


def _per_call(fn, reps: int) -> float:
    t = time.perf_counter()
    fn(reps)
    return (time.perf_counter() - t) / reps


def bench_robot(path: Path, floating: bool, n: int, rounds: int, single: int) -> dict:
    import pinocchio as pin

    import symgen
    from pin_maps import to_pin_q, u_map

    t = time.perf_counter()
    mb = symgen.build(path, floating_base=floating)
    build_s = time.perf_counter() - t
    pm = pin.buildModelFromUrdf(str(path), pin.JointModelFreeFlyer()) if floating else pin.buildModelFromUrdf(str(path))
    pd = pm.createData()
    rng = np.random.default_rng(0)
    Q = mb.sanitize(rng.uniform(-2.0, 2.0, (n, mb.nq)))
    V = rng.normal(size=(n, pm.nv))
    TAU = rng.normal(size=(n, pm.nv))
    QP = np.array([to_pin_q(mb, pm, q) for q in Q])
    U = np.array([u_map(mb, pm, Q[i], floating) @ V[i] for i in range(n)])
    T = np.array([np.linalg.solve(u_map(mb, pm, Q[i], floating).T, TAU[i]) for i in range(n)])
    last = mb.body_names[-1]
    fid = pm.getFrameId(last)

    def loop(fn):
        def run(reps):
            for i in range(reps):
                fn(i % n)
        return run

    cases = {
        "fd": (lambda i: mb.forward_dynamics(Q[i], U[i], T[i]), lambda N: mb.forward_dynamics(Q[:N], U[:N], T[:N]),
               lambda i: pin.aba(pm, pd, QP[i], V[i], TAU[i])),
        "id": (lambda i: mb.inverse_dynamics(Q[i], U[i], T[i]), lambda N: mb.inverse_dynamics(Q[:N], U[:N], T[:N]),
               lambda i: pin.rnea(pm, pd, QP[i], V[i], TAU[i])),
        "M": (lambda i: mb.mass_matrix(Q[i]), lambda N: mb.mass_matrix(Q[:N]), lambda i: pin.crba(pm, pd, QP[i])),
        "fk": (lambda i: mb._poses(Q[i:i + 1]), lambda N: mb._poses(Q[:N]),
               lambda i: pin.framesForwardKinematics(pm, pd, QP[i])),
        "jac": (lambda i: mb.jacobian(Q[i], last), lambda N: mb.jacobian(Q[:N], last),
                lambda i: pin.computeFrameJacobian(pm, pd, QP[i], fid, pin.LOCAL)),
    }
    out = {"robot": path.stem, "floating": floating, "nq": mb.nq, "nu": mb.nu, "bodies": mb.nb,
           "build_s": build_s, "c_kB": _c_size_kb(path, floating), "rows": {}}
    for name, (py1, batch, pinf) in cases.items():
        samples = {"py1": [], "batch": [], "pin": []}
        py1(0), batch(8), pinf(0)  # warm-up
        for _ in range(rounds):  # interleaved rounds
            samples["py1"].append(_per_call(loop(py1), single))
            t = time.perf_counter()
            batch(n)
            samples["batch"].append((time.perf_counter() - t) / n)
            samples["pin"].append(_per_call(loop(pinf), single))
        med = {k: statistics.median(v) * 1e6 for k, v in samples.items()}
        med["ratio_py1"] = med["py1"] / med["pin"]
        med["ratio_batch"] = med["batch"] / med["pin"]
        out["rows"][name] = med
    return out


def _c_size_kb(path: Path, floating: bool) -> float:
    """Size of the model's generated C (its translation unit plus the hinge kernels it includes)."""
    from symgen.build import cached_model_sources
    from symgen.model import load_model

    files, _ = cached_model_sources(load_model(path, floating_base=floating))
    return sum(len(t) for f, t in files.items() if f.endswith((".c", ".h"))) / 1024


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--robots", nargs="+", default=["arm6", "arm7", "quadruped:floating", "humanoid:floating"],
                    help="URDF paths or names in examples/models/, with ':floating' for a floating base")
    ap.add_argument("--n", type=int, default=10000, help="states per batch (default 10000)")
    ap.add_argument("--single", type=int, default=10000, help="single calls per round (default 10000)")
    ap.add_argument("--rounds", type=int, default=7, help="interleaved rounds (median; default 7)")
    ap.add_argument("--json", help="also write the results here")
    args = ap.parse_args(argv)
    results = {"machine": f"{platform.machine()} {platform.processor() or ''}".strip(),
               "python": platform.python_version(), "robots": []}
    for r in args.robots:
        name, _, mode = r.partition(":")
        res = bench_robot(_robot_path(name), mode == "floating", args.n, args.rounds, args.single)
        results["robots"].append(res)
        print(f"\n{res['robot']} ({'floating' if res['floating'] else 'fixed'} base, nQ={res['nq']}, nU={res['nu']}, "
              f"{res['bodies']} bodies; build {res['build_s']:.2f} s; {res['c_kB']:.0f} kB of C)")
        print(f"{'':5} {'symgen py1':>11} {'symgen batch':>13} {'pin py1':>9} {'py1 ratio':>10} {'batch ratio':>12}   (us)")
        for name, m in res["rows"].items():
            print(f"{name:5} {m['py1']:11.2f} {m['batch']:13.2f} {m['pin']:9.2f} {m['ratio_py1']:10.2f} "
                  f"{m['ratio_batch']:12.2f}")
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
