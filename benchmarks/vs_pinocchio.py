"""symgen vs Pinocchio, side by side in one process (speed lives here, never in the tests), plus the
optional plain-C sections: symgen's C from a C main(), Pinocchio's C++ and MuJoCo.

    python benchmarks/vs_pinocchio.py [--robots arm6 arm7 quadruped:floating humanoid:floating big ...]
                                      [--n 10000] [--single 10000] [--rounds 7] [--copies 5] [--repeats 3]
                                      [--lane-width {2,4,8}] [--c] [--mujoco] [--pin-cpp] [--all]
                                      [--json results.json]

A robot is a URDF path, a name in examples/models/ or an example-robot-data name (``talos``, ``tiago_dual``,
``ur5``, ``panda``, ``solo12``); ``:floating`` gives it a floating base; ``big`` stands for
``talos:floating tiago_dual:floating``.  ``--lane-width`` builds the models at that lane width
(``SYMGEN_LANE_WIDTH``; default: the widest this CPU runs, symgen.codegen.lanes), e.g. 4 to time AVX2 on an
AVX-512 machine.

For every robot: the same URDF into symgen and Pinocchio, the same random states, a warm-up, then
``--rounds`` interleaved rounds; each number is the median over the rounds of the time per call (or per
state for batches).  Rows:

* ``fd``    forward dynamics   (symgen ATBI         vs ``pin.aba``)
* ``id``    inverse dynamics   (symgen Newton-Euler vs ``pin.rnea``)
* ``M``     mass matrix        (symgen CRBA         vs ``pin.crba``)
* ``cmm``   centroidal momentum matrix A_G (``mb.centroidal_momentum_matrix``; its C computes h_G and the centre of
  mass too) vs ``pin.ccrba`` (A_G and h_G)
* ``pose``  one frame pose, the last link (``mb.frame_pose(q, handle)`` vs ``pin.forwardKinematics`` +
  ``pin.updateFramePlacement(...).homogeneous``: Pinocchio's cheapest route to one frame's 4x4)
* ``poses`` poses of all frames (``mb.frame_poses(q)``, an (n_frames, 4, 4) array vs
  ``pin.framesForwardKinematics`` alone: Pinocchio computes every frame of its own, more numerous
  frames but hands back no array, so its number is a lower bound for getting them into numpy)
* ``jac``   one frame Jacobian, the last link (``mb.jacobian(q, handle)`` vs
  ``pin.computeFrameJacobian(..., LOCAL)``)
* ``vel``   one frame velocity, the last link (``mb.frame_velocity(q, u, handle)`` vs
  ``pin.forwardKinematics(q, v)`` + ``pin.getFrameVelocity(..., LOCAL).vector``)

Columns: ``py1`` one call from Python per state (a new output array each call, as users call it; frames by
a handle from ``mb.frame_handle``), ``batch`` one symgen call for ``--n`` states (per state; fd, id, M and
cmm write into a preallocated ``out=``, as Pinocchio writes into its Data; the batches of fd, id and M run the
lane form, templates/helpers/lanes.c.jinja, where the model and the CPU have one), Pinocchio one call from
Python; ratio = symgen / Pinocchio.  With ``--c`` the summary also has ``C batch``: the ``_batch`` functions
called once for the ``--n`` states from a plain C main (no Python, p filled beforehand), per state.

Optional sections (each is also a script of its own; see its docstring):

* ``--c``        ``benchmarks/c_bench/run.py``: the generated C called from a plain C main(), one call per
  state (µs per state; the state-0 outputs are checked against the Python call to 1e-12);
* ``--mujoco``   ``benchmarks/mujoco_peer.py``: MuJoCo's ``mj_forward``, ``mj_inverse`` and the dense mass
  matrix (kinematics, comPos, makeM, fullM), timed from C against the wheel's libmujoco (from Python if
  that is not possible; the summary then says ``MuJoCo py``), checked against symgen to 1e-8;
* ``--pin-cpp``  ``benchmarks/pin_cpp/run.py``: Pinocchio's C++ ``aba``, ``rnea``, ``crba`` (compiling it takes
  about 3 minutes the first time; the binary is reused afterwards);
* ``--all``      all three.

Each runs with the same ``--robots``, ``--n``, ``--rounds`` and ``--copies`` (each C program runs that many
times from fresh copies of its file; see ``bench_common.run_copies``), and the sections run ``--repeats`` times in
turn (symgen C, MuJoCo, Pinocchio C++, symgen C, ...), each number the median over the repeats, so that the
drift of a shared machine hits every side alike.  Then a summary table per robot, rows
fd / id / M, columns symgen C (``--c``), symgen batch (this script), pin C++ (``--pin-cpp``), MuJoCo C
(``--mujoco``), the ratio symgen C / min(pin C++, MuJoCo C) over the peers that ran, and symgen batch /
pin C++; a dash where a section did not run or was skipped.  ``--json`` holds every section (``robots``, ``c_bench``, ``mujoco``,
``pin_cpp``) and the ``summary``.  c_bench and MuJoCo use ``bench_common.states``: the same seed and draws as
this script, so the same states for arm6 and arm7 (in general up to Pinocchio's joint order and, for a
floating base, the rotation of the base velocity); Pinocchio's C++ draws its own random states.
"""
from __future__ import annotations

import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "benchmarks"))
from bench_common import BIG_ROBOTS, load_script, parse_robot, robot_parser  # noqa: E402

#: summary rows: (row, c_bench key, pin C++ key, MuJoCo key)
SUMMARY_ROWS = (("fd", "fd", "aba", "forward"), ("id", "id", "rnea", "inverse"), ("M", "M", "crba", "M"),
                ("cmm", None, "ccrba", None))


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
    OUT_U, OUT_M, OUT_A = np.empty((n, mb.nu)), np.empty((n, mb.nu, mb.nu)), np.empty((n, 6, mb.nu))  # preallocated out=
    last = mb.body_names[-1]
    fid = pm.getFrameId(last, pin.FrameType.BODY)
    h = mb.frame_handle(last)

    def loop(fn):
        def run(reps):
            for i in range(reps):
                fn(i % n)
        return run

    cases = {
        "fd": (lambda i: mb.forward_dynamics(Q[i], U[i], T[i]),
               lambda N: mb.forward_dynamics(Q[:N], U[:N], T[:N], out=OUT_U[:N]),
               lambda i: pin.aba(pm, pd, QP[i], V[i], TAU[i])),
        "id": (lambda i: mb.inverse_dynamics(Q[i], U[i], T[i]),
               lambda N: mb.inverse_dynamics(Q[:N], U[:N], T[:N], out=OUT_U[:N]),
               lambda i: pin.rnea(pm, pd, QP[i], V[i], TAU[i])),
        "M": (lambda i: mb.mass_matrix(Q[i]), lambda N: mb.mass_matrix(Q[:N], out=OUT_M[:N]),
              lambda i: pin.crba(pm, pd, QP[i])),
        "cmm": (lambda i: mb.centroidal_momentum_matrix(Q[i]),
                lambda N: mb.centroidal_momentum_matrix(Q[:N], out=OUT_A[:N]),
                lambda i: pin.ccrba(pm, pd, QP[i], V[i])),
        "pose": (lambda i: mb.frame_pose(Q[i], h), lambda N: mb.frame_pose(Q[:N], h),
                 lambda i: (pin.forwardKinematics(pm, pd, QP[i]), pin.updateFramePlacement(pm, pd, fid).homogeneous)),
        "poses": (lambda i: mb.frame_poses(Q[i]), lambda N: mb.frame_poses(Q[:N]),
                  lambda i: pin.framesForwardKinematics(pm, pd, QP[i])),
        "jac": (lambda i: mb.jacobian(Q[i], h), lambda N: mb.jacobian(Q[:N], h),
                lambda i: pin.computeFrameJacobian(pm, pd, QP[i], fid, pin.LOCAL)),
        "vel": (lambda i: mb.frame_velocity(Q[i], U[i], h), lambda N: mb.frame_velocity(Q[:N], U[:N], h),
                lambda i: (pin.forwardKinematics(pm, pd, QP[i], V[i]),
                           pin.getFrameVelocity(pm, pd, fid, pin.LOCAL).vector)),
    }
    out = {"robot": path.stem, "floating": floating, "nq": mb.nq, "nu": mb.nu, "bodies": mb.nb, "lanes": mb.lane_width,
           "build_s": build_s, "c_kB": _c_size_kb(path, floating), "rows": {}}
    for name, (py1, batch, pinf) in cases.items():
        samples = {"py1": [], "batch": [], "pin": []}
        py1(0), batch(n), pinf(0)  # warm-up (the whole batch once: its output pages touched, as Pinocchio's Data is)
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
    from symgen.model import load_model
    from symgen.pipeline.sources import cached_model_sources

    files, _ = cached_model_sources(load_model(path, floating_base=floating))
    return sum(len(t) for f, t in files.items() if f.endswith((".c", ".h"))) / 1024


def _median_of_runs(reps: list) -> dict:
    """{robot: {key: median over the runs}} for numbers; other values from the first run."""
    out = {}
    for robot, first in reps[0].items():
        row = {}
        for k, v in first.items():
            vals = [r[robot][k] for r in reps if robot in r and k in r[robot]]
            row[k] = float(np.median(vals)) if isinstance(v, (int, float)) and not isinstance(v, bool) else v
        out[robot] = row
    return out


def summary(results: dict) -> dict:
    """{robot: {row: {symgen_C, symgen_batch, pin_cpp, mujoco, ratio}}} from whatever sections ran (None where
    a number is missing); ratio = symgen C / min(pin C++, MuJoCo); ratio_batch = symgen batch / pin C++."""
    out = {}
    for res in results["robots"]:
        spec = res["spec"]
        c, pc, mj = (results.get(k, {}).get(spec) for k in ("c_bench", "pin_cpp", "mujoco"))
        rows = {}
        for row, ck, pk, mk in SUMMARY_ROWS:
            r = {"symgen_C": c.get(ck) if c else None, "symgen_batch": res["rows"][row]["batch"],
                 "symgen_C_batch": c.get(f"{ck}_batch") if c else None,
                 "pin_cpp": pc.get(pk) if pc else None, "mujoco": mj.get(mk) if mj else None,
                 "mujoco_timed_in": mj["timed_in"] if mj else None}
            peers = [x for x in (r["pin_cpp"], r["mujoco"]) if x is not None]
            r["ratio"] = r["symgen_C"] / min(peers) if peers and r["symgen_C"] is not None else None
            r["ratio_batch"] = r["symgen_batch"] / r["pin_cpp"] if r["pin_cpp"] else None
            r["ratio_C_batch"] = (r["symgen_C_batch"] / r["pin_cpp"] if r["pin_cpp"] and r["symgen_C_batch"] is not None
                                  else None)
            rows[row] = r
        out[spec] = rows
    return out


def print_summary(summ: dict) -> None:
    def cell(x, w=12, f="{:.2f}"):
        return f"{'-' if x is None else f.format(x):>{w}}"

    mj_where = {r["mujoco_timed_in"] for rows in summ.values() for r in rows.values() if r["mujoco_timed_in"]}
    mj_label = "MuJoCo C" if mj_where <= {"C"} else "MuJoCo py" if mj_where == {"python"} else "MuJoCo C/py"
    print("\nSummary: median us per state / call; ratio = symgen C / min(pin C++, MuJoCo); "
          "batch/pin = symgen batch / pin C++; C batch: one _batch call from C (the lane form), C batch/pin likewise")
    for spec, rows in summ.items():
        print(f"\n{spec}")
        print(f"{'':4} {'symgen C':>12} {'symgen batch':>12} {'C batch':>12} {'pin C++':>12} {mj_label:>12} {'ratio':>12} "
              f"{'batch/pin':>12} {'C batch/pin':>12}")
        for row, r in rows.items():
            print(f"{row:4} {cell(r['symgen_C'])} {cell(r['symgen_batch'])} {cell(r.get('symgen_C_batch'), f='{:.3f}')} "
                  f"{cell(r['pin_cpp'])} {cell(r['mujoco'])} {cell(r['ratio'])} {cell(r['ratio_batch'])} "
                  f"{cell(r.get('ratio_C_batch'), f='{:.3f}')}")


def main(argv=None) -> int:
    ap = robot_parser(__doc__, n_help="states per batch (default 10000)")
    ap.add_argument("--single", type=int, default=10000, help="single calls per round (default 10000)")
    ap.add_argument("--c", action="store_true", help="also time symgen's C from a plain C main (c_bench/run.py)")
    ap.add_argument("--mujoco", action="store_true", help="also time MuJoCo (mujoco_peer.py)")
    ap.add_argument("--pin-cpp", action="store_true",
                    help="also time Pinocchio's C++ (pin_cpp/run.py; about 3 min to build the first time)")
    ap.add_argument("--all", action="store_true", help="--c --mujoco --pin-cpp")
    ap.add_argument("--repeats", type=int, default=3,
                    help="run the C sections this many times in turn and take each number's median (default 3)")
    ap.add_argument("--lane-width", type=int, choices=(2, 4, 8),
                    help="build the models at this lane width (SYMGEN_LANE_WIDTH; default: the CPU's widest)")
    args = ap.parse_args(argv)
    args.robots = [r for spec in args.robots for r in (BIG_ROBOTS if spec == "big" else [spec])]
    if args.lane_width:
        os.environ["SYMGEN_LANE_WIDTH"] = str(args.lane_width)
    if args.all:
        args.c = args.mujoco = args.pin_cpp = True
    from symgen.pipeline.compile import opt_flags

    from symgen.codegen.lanes import lane_width

    results = {"machine": f"{platform.machine()} {platform.processor() or ''}".strip(), "lane_width": lane_width(),
               "python": platform.python_version(), "symgen_flags": list(opt_flags()), "robots": []}
    for spec in args.robots:
        path, floating = parse_robot(spec)
        res = bench_robot(path, floating, args.n, args.rounds, args.single)
        res["spec"] = spec
        results["robots"].append(res)
        print(f"\n{res['robot']} ({'floating' if res['floating'] else 'fixed'} base, nQ={res['nq']}, nU={res['nu']}, "
              f"{res['bodies']} bodies; build {res['build_s']:.2f} s; {res['c_kB']:.0f} kB of C; "
              f"batched FD {res['lanes']} state(s) per call)")
        print(f"{'':5} {'symgen py1':>11} {'symgen batch':>13} {'pin py1':>9} {'py1 ratio':>10} {'batch ratio':>12}   (us)")
        for name, m in res["rows"].items():
            print(f"{name:5} {m['py1']:11.2f} {m['batch']:13.2f} {m['pin']:9.2f} {m['ratio_py1']:10.2f} "
                  f"{m['ratio_batch']:12.2f}")
    sections = (("c", "c_bench", "c_bench/run.py"), ("mujoco", "mujoco", "mujoco_peer.py"),
                ("pin_cpp", "pin_cpp", "pin_cpp/run.py"))
    runs = {}
    for rep in range(args.repeats):     # the C sections in turn, again and again: machine drift hits all alike
        for flag, key, script in sections:
            if getattr(args, flag):
                print(f"\n== {script} ({rep + 1}/{args.repeats})", flush=True)
                mod = load_script(script, f"symgen_bench_{key}")
                runs.setdefault(key, []).append(mod.run(args.robots, args.n, args.rounds, copies=args.copies))
    for key, reps in runs.items():
        results[key] = _median_of_runs(reps)
    results["summary"] = summary(results)
    print_summary(results["summary"])
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
