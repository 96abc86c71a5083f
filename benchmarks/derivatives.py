"""Derivatives of the dynamics: symgen against Pinocchio's analytic derivatives, and one step's derivatives
against MuJoCo's finite-differenced transition (speed lives here, never in the tests).

    python benchmarks/derivatives.py [--robots arm7 quadruped:floating humanoid:floating ur5 panda ...]
                                     [--n 2000] [--rounds 7] [--pin-cpp] [--copies 5] [--json results.json]

A robot is a URDF path, a name in examples/models/ (``:floating`` for a floating base) or ``ur5`` / ``panda``
(``example-robot-data``'s URDFs).  For every robot, the same states for both (``bench_common.states``, mapped
through Pinocchio's joint order), a warm-up, then ``--rounds`` interleaved rounds; each number is the median of
the rounds' µs per call (per state for batches).  Rows:

* ``fd_d``  ``mb.forward_dynamics_derivatives`` vs ``pin.computeABADerivatives``
* ``id_d``  ``mb.inverse_dynamics_derivatives`` vs ``pin.computeRNEADerivatives``

Columns: ``py1`` one symgen call from Python per state (new output arrays, as users call it), ``C batch`` the
generated ``sg_<m>_<fd|id>_derivatives_batch`` for ``--n`` states in one call (per state; preallocated output),
``C in cache`` the same batch on one block of the lane width at a time into one reused output (as Pinocchio's
C++ computes into one Data: without the outputs' trip to memory, 275 kB a state on tiago_dual),
``pin py`` Pinocchio's call from Python, and with ``--pin-cpp`` Pinocchio's C++ (``benchmarks/pin_cpp``, its own
random states; median over ``--copies`` fresh copies of the binary).  Ratios: C batch / pin C++, C in cache /
pin C++, py1 / pin py.

Then ``step``: ``mb.step_derivatives(q, u, T, dt, method="euler")`` against ``mujoco.mjd_transitionFD`` (centered,
eps 1e-6) on the robots MuJoCo loads from the same URDF (fixed bases), at MuJoCo's default semi-implicit Euler.
"""
from __future__ import annotations

import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests"))
from bench_common import ERD, erd_path, load_script, parse_robot, report, robot_parser, states  # noqa: E402

DEFAULT = ["arm7", "quadruped:floating", "humanoid:floating", "ur5", "panda"]
def resolve(spec: str) -> str:
    """``ur5`` / ``panda`` / ``talos`` / ``tiago_dual`` (bench_common.ERD) -> the example-robot-data URDF path (with
    its ``:floating``), else the spec."""
    name, sep, mode = spec.partition(":")
    return str(erd_path(name)) + sep + mode if name in ERD else spec


def _median_rounds(fns: dict, rounds: int) -> dict:
    """{name: median µs} of callables returning µs per call, interleaved over rounds."""
    samples = {k: [] for k in fns}
    for f in fns.values():
        f()  # warm-up
    for _ in range(rounds):
        for k, f in fns.items():
            samples[k].append(f())
    return {k: statistics.median(v) for k, v in samples.items()}


def bench_robot(spec: str, n: int, rounds: int) -> dict:
    import pinocchio as pin

    import symgen
    from pin_maps import to_pin_q, u_map

    path, floating = parse_robot(resolve(spec))
    mb = symgen.build(str(path), floating_base=floating)
    pm = pin.buildModelFromUrdf(str(path), pin.JointModelFreeFlyer()) if floating else pin.buildModelFromUrdf(str(path))
    pd = pm.createData()
    Q, U, T = states(mb, n)
    QP = np.array([to_pin_q(mb, pm, q) for q in Q])
    maps = [u_map(mb, pm, q, floating) for q in Q]
    V = np.array([np.linalg.lstsq(P, u, rcond=None)[0] for P, u in zip(maps, U)])
    TAU = np.array([P.T @ t for P, t in zip(maps, T)])
    b = mb.derivative_binding()                   # the module with the derivative functions (compiled on first use)
    out = np.empty((n, mb.nu * (mb.nq + 2 * mb.nu)))
    reps = min(n, 500)

    def per_call(fn, count):
        def run():
            t = time.perf_counter()
            for i in range(count):
                fn(i)
            return (time.perf_counter() - t) / count * 1e6
        return run

    def c_batch(kind, P):
        f = getattr(b.lib, f"sg_{mb.name}_{kind}_derivatives_batch")
        args = (n, b.buf(Q), b.buf(U), b.buf(P), 1, b.buf(out))
        if f(*args):
            raise RuntimeError(f"{spec}: sg_{mb.name}_{kind}_derivatives_batch failed")

        def run():
            t = time.perf_counter()
            f(*args)
            return (time.perf_counter() - t) / n * 1e6
        return run

    w = max(1, getattr(b.lib, f"sg_{mb.name}_lane_width")())
    blk = np.empty((w, mb.nu * (mb.nq + 2 * mb.nu)))

    def c_cached(kind, P):
        """The batch on one block of the lane width at a time, each into the same output (which stays in the
        cache, as Pinocchio's C++ computes into one Data): what the states cost without the output's trip to
        memory (tiago_dual's 275 kB a state)."""
        f = getattr(b.lib, f"sg_{mb.name}_{kind}_derivatives_batch")
        blocks = [(b.buf(Q[i:i + w]), b.buf(U[i:i + w]), b.buf(np.ascontiguousarray(P[i:i + w])))
                  for i in range(0, n - w + 1, w)]

        def run():
            t = time.perf_counter()
            for q, u, p in blocks:
                f(w, q, u, p, 1, b.buf(blk))
            return (time.perf_counter() - t) / (w * len(blocks)) * 1e6
        return run

    P_fd, P_id = (np.ascontiguousarray(b.p(n, X, None, None)) for X in (T, T))
    res = _median_rounds({
        "fd_d py1": per_call(lambda i: mb.forward_dynamics_derivatives(Q[i], U[i], T[i]), reps),
        "fd_d C batch": c_batch("fd", P_fd),
        "fd_d C in cache": c_cached("fd", P_fd),
        "fd_d pin py": per_call(lambda i: pin.computeABADerivatives(pm, pd, QP[i], V[i], TAU[i]), reps),
        "id_d py1": per_call(lambda i: mb.inverse_dynamics_derivatives(Q[i], U[i], T[i]), reps),
        "id_d C batch": c_batch("id", P_id),
        "id_d C in cache": c_cached("id", P_id),
        "id_d pin py": per_call(lambda i: pin.computeRNEADerivatives(pm, pd, QP[i], V[i], TAU[i]), reps),
    }, rounds)
    return {"robot": path.stem, "floating": floating, "nq": mb.nq, "nu": mb.nu, **res}


def bench_step(spec: str, rounds: int, dt: float = 1e-3) -> dict | None:
    """step_derivatives (semi-implicit Euler) vs mjd_transitionFD (centered) on a fixed-base URDF."""
    try:
        import mujoco
    except ImportError:
        return None
    import symgen

    path, floating = parse_robot(resolve(spec))
    if floating:
        return None
    try:
        m = mujoco.MjModel.from_xml_path(str(path))
    except Exception as e:  # noqa: BLE001  (MuJoCo refuses some URDFs: meshes it cannot find)
        print(f"step {spec}: MuJoCo does not load it ({str(e).splitlines()[0]})", flush=True)
        return None
    m.opt.timestep = dt
    mb = symgen.build(str(path))
    d = mujoco.MjData(m)
    Q, U, T = states(mb, 1)
    A = np.zeros((2 * m.nv, 2 * m.nv))
    B = np.zeros((2 * m.nv, max(m.nu, 1)))
    reps = 300

    def mj():
        t = time.perf_counter()
        for _ in range(reps):
            mujoco.mjd_transitionFD(m, d, 1e-6, 1, A, B if m.nu else None, None, None)
        return (time.perf_counter() - t) / reps * 1e6

    def ours():
        t = time.perf_counter()
        for _ in range(reps):
            mb.step_derivatives(Q[0], U[0], T[0], dt, method="euler")  # as users call it (keyword)
        return (time.perf_counter() - t) / reps * 1e6
    r = _median_rounds({"symgen step_derivatives": ours, "mjd_transitionFD centered": mj}, rounds)
    r["speedup"] = r["mjd_transitionFD centered"] / r["symgen step_derivatives"]
    return {"robot": path.stem, "nv": m.nv, **r}


def table(results: dict) -> str:
    rows = ["| robot | nU | row | symgen py1 | symgen C batch | C in cache | pin py | pin C++ | C batch / pin C++ | "
            "in cache / pin C++ | py1 / pin py |",
            "|---|---|---|---|---|---|---|---|---|---|---|"]
    for spec, r in results["robots"].items():
        cpp = (results.get("pin_cpp") or {}).get(resolve(spec)) or {}
        for row, pk in (("fd_d", "aba_derivatives"), ("id_d", "rnea_derivatives")):
            c = cpp.get(pk)
            cached = r.get(f"{row} C in cache", float("nan"))
            ratios = f"{c:.2f} | {r[f'{row} C batch'] / c:.2f} | {cached / c:.2f}" if c else "- | - | -"
            rows.append(f"| {spec} | {r['nu']} | {row} | {r[f'{row} py1']:.2f} | {r[f'{row} C batch']:.2f} | "
                        f"{cached:.2f} | {r[f'{row} pin py']:.2f} | {ratios} | "
                        f"{r[f'{row} py1'] / r[f'{row} pin py']:.2f} |")
    if results.get("step"):
        rows += ["", "| robot | nv | symgen step_derivatives (µs) | mjd_transitionFD centered (µs) | speed-up |",
                 "|---|---|---|---|---|"]
        for spec, r in results["step"].items():
            rows.append(f"| {spec} | {r['nv']} | {r['symgen step_derivatives']:.1f} | "
                        f"{r['mjd_transitionFD centered']:.1f} | {r['speedup']:.1f}x |")
    return "\n".join(rows)


def main(argv=None) -> int:
    ap = robot_parser(__doc__, "states (default 2000)")
    ap.set_defaults(robots=DEFAULT, n=2000)
    ap.add_argument("--pin-cpp", action="store_true", help="also Pinocchio's C++ (benchmarks/pin_cpp)")
    args = ap.parse_args(argv)
    results = {"machine": platform.processor() or platform.machine(), "robots": {}, "step": {}}
    for spec in args.robots:
        r = bench_robot(spec, args.n, args.rounds)
        results["robots"][spec] = r
        print(f"{spec:22} " + "  ".join(f"{k} {v:8.3f}" for k, v in r.items() if isinstance(v, float)), flush=True)
        s = bench_step(spec, args.rounds)
        if s:
            results["step"][spec] = s
            print(f"{spec:22} step: {s}", flush=True)
    if args.pin_cpp:
        pin_cpp = load_script("pin_cpp/run.py", "pin_cpp_run")
        results["pin_cpp"] = {}
        ok = []
        import pinocchio as pin

        for spec in args.robots:                   # pin_cpp's model writer does not take every joint type
            try:
                pin_cpp.models_hpp(pin, [resolve(spec)])
                ok.append(resolve(spec))
            except SystemExit as e:
                print(f"pin_cpp {spec}: skipped ({e})", flush=True)
        results["pin_cpp"] = pin_cpp.run(ok, args.n, args.rounds, copies=args.copies)
    return report(results, args.json, table)


if __name__ == "__main__":
    sys.exit(main())
