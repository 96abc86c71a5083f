"""The speed cost of parametric builds: forward dynamics, inverse dynamics and the mass matrix per state (one
batched C call over the states), folded build against builds that keep one kind of quantity as runtime
inputs (symgen.build(..., parameters=[...])).

    python benchmarks/parametric.py [--robots arm7 quadruped:floating] [--n 10000] [--rounds 7]

Variants: ``gravity`` (always a runtime input: no cost expected), ``one mass`` (the mass of the middle body),
``all inertias`` (mass, CoM and inertia of every body), ``all armatures`` (every moving hinge), ``everything``.
Each variant's results are first checked against the folded build at the model file's values (1e-12).
Writes benchmarks/parametric_latest.md.
"""
from __future__ import annotations

import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_common import parse_robot, robot_parser, states  # noqa: E402

import symgen  # noqa: E402


def variants(mb) -> dict:
    bodies = [b for b in mb.body_names]
    moving = [h for h in mb.hinge_names if mb.u_slice(h).stop > mb.u_slice(h).start]
    middle = bodies[len(bodies) // 2]
    inertias = [f"{b}.{w}" for b in bodies for w in ("mass", "com", "inertia")]
    return {"gravity": ["gravity"], "one mass": [f"{middle}.mass"], "all inertias": inertias,
            "all armatures": [f"{h}.armature" for h in moving],
            "everything": inertias + [f"{h}.armature" for h in moving] + ["gravity"]}


def per_state(fn, n, rounds) -> float:
    """Median over rounds of the time per state (µs) of one batched call."""
    fn()
    times = []
    for _ in range(rounds):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times) / n * 1e6


def measure(mb, Q, U, T, rounds) -> dict:
    n = Q.shape[0]
    out_u, out_m = np.empty((n, mb.nu)), np.empty((n, mb.nu, mb.nu))
    return {"FD": per_state(lambda: mb.forward_dynamics(Q, U, T, out=out_u), n, rounds),
            "ID": per_state(lambda: mb.inverse_dynamics(Q, U, T, out=out_u), n, rounds),
            "M": per_state(lambda: mb.mass_matrix(Q, out=out_m), n, rounds)}


def main(argv=None) -> int:
    ap = robot_parser(__doc__)
    ap.set_defaults(robots=["arm7", "quadruped:floating"])
    args = ap.parse_args(argv)
    rows = []
    for spec in args.robots:
        path, floating = parse_robot(spec)
        folded = symgen.build(path, floating_base=floating)
        Q, U, T = states(folded, args.n)
        base = measure(folded, Q, U, T, args.rounds)
        rows.append((spec, "folded", 0, base, base))
        for label, names in variants(folded).items():
            mb = symgen.build(path, floating_base=floating, parameters=names)
            for a, b in ((mb.forward_dynamics(Q[:50], U[:50], T[:50]), folded.forward_dynamics(Q[:50], U[:50], T[:50])),
                         (mb.mass_matrix(Q[:50]), folded.mass_matrix(Q[:50]))):
                err = np.abs(a - b).max() / max(1.0, np.abs(b).max())
                assert err < 1e-12, (spec, label, err)
            rows.append((spec, label, len(names), measure(mb, Q, U, T, args.rounds), base))
            print(f"{spec:<20} {label:<14} done", file=sys.stderr, flush=True)
    head = ("| robot | build | parameters | FD µs | ID µs | M µs | FD / folded | ID / folded | M / folded |\n"
            "|---|---|---|---|---|---|---|---|---|")
    lines = [head] + [f"| {spec} | {label} | {k} | {r['FD']:.3f} | {r['ID']:.3f} | {r['M']:.3f} | "
                      f"{r['FD'] / b['FD']:.2f} | {r['ID'] / b['ID']:.2f} | {r['M'] / b['M']:.2f} |"
                      for spec, label, k, r, b in rows]
    table = "\n".join(lines)
    print(table)
    md = (f"# Parametric builds: speed cost (benchmarks/parametric.py)\n\n"
          f"{platform.processor() or platform.machine()}, Python {platform.python_version()}, numpy "
          f"{np.__version__}, symgen {symgen.__version__}; {args.n} states per batched call, median of "
          f"{args.rounds} rounds, µs per state. Each build agrees with the folded one to 1e-12 at the model "
          f"file's values.\n\n{table}\n")
    (Path(__file__).resolve().parent / "parametric_latest.md").write_text(md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
