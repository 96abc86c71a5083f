"""MuJoCo as a second peer: mj_forward, mj_inverse and the dense mass matrix on the benchmark robots.

    pip install mujoco                      # or: pip install -e ".[bench]"
    python benchmarks/mujoco_peer.py [--robots arm6 arm7 quadruped:floating humanoid:floating ...]
                                     [--n 10000] [--rounds 7] [--copies 5] [--python] [--json results.json]

A robot is a URDF path or a name in examples/models/; ``:floating`` gives it a floating base.

The model: the URDF gets ``<mujoco><compiler discardvisual="true" balanceinertia="true"
fusestatic="false"/></mujoco>`` and is compiled by MuJoCo's own URDF importer (through ``MjSpec``); for a
floating base a free joint, named like symgen's root hinge, is added to the root body.  Contacts and all
constraints (joint limits included) are disabled and gravity is symgen's.  MuJoCo's free joint has the
coordinates of symgen's FULL6DOF (position; velocity ``[ṗ in the world; ω in the body]``), up to the
quaternion order (MuJoCo ``w x y z``, symgen ``x y z w``), so the states map one to one.

Checks (the script fails if one is off): MuJoCo's nq/nv equal symgen's, and on state 0 ``qacc`` of
``mj_forward``, ``qfrc_inverse`` of ``mj_inverse`` and the dense mass matrix equal symgen's forward dynamics,
inverse dynamics and mass matrix to 1e-8 relative (max abs difference over max abs value), for every
robot.  It also reports whether MuJoCo's compiled masses, principal inertias and armature differ from the
URDF's (``balanceinertia`` only touches inertias that violate the triangle inequality, which symgen's loader
rejects anyway).

Timing, over the states of ``bench_common.states`` (as in c_bench and vs_pinocchio.py; T is the applied
force of ``mj_forward`` and the qacc of ``mj_inverse``), median µs per state over ``--rounds`` interleaved
rounds:

* ``forward``   copy qpos, qvel, qfrc_applied; ``mj_forward`` (the whole forward pipeline: kinematics,
  CRB, LDLᵀ factor, bias forces by RNE, qacc; collision and constraints are disabled)
* ``inverse``   copy qpos, qvel, qacc; ``mj_inverse``
* ``M``         copy qpos; ``mj_kinematics``, ``mj_comPos``, ``mj_makeM`` (the CRB), ``mj_fullM`` (dense)
* ``M_fwdpos``  copy qpos; ``mj_fwdPosition`` (also the factorization and the rest of the position stage),
  ``mj_fullM``

By default these run in plain C: ``mj_bench.c`` is compiled (``cc -std=c11 -O2``; MuJoCo's headers are
C11) against the ``libmujoco`` and headers shipped in the wheel, and loads the compiled model from an ``.mjb``
file (``mj_saveModel``: exact doubles; the MJCF that MuJoCo writes rounds to 6 significant digits, so the
``model.xml`` next to it is for reading only).  Without the wheel's headers or libmujoco, or with
``--python``, the same calls are timed from Python (mujoco's bindings, one call per state), and ``timed_in``
says so.  In C the program runs ``--copies`` times, each from fresh copies of ``mj_bench`` and of
``libmujoco`` (found first through LD_LIBRARY_PATH), and each number is the median over the copies
(``bench_common.run_copies``).  Build files go to ``benchmarks/build/mujoco/`` (gitignored).  Without ``mujoco`` installed, or
without a C compiler (symgen then cannot build the models it checks against), the script prints a message
and exits 0.

From Python: ``run(robots, n, rounds, copies=5) -> {robot: {"forward", "inverse", "M", "M_fwdpos" (median
µs), "*_min", "*_spread" (C only), "nv", "timed_in", "check", "inertia_note"}}`` ({} when skipped).
"""
from __future__ import annotations

import glob
import hashlib
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from bench_common import COPIES, DEFAULT_ROBOTS, median, parse_robot, report, robot_parser, run_copies, slug, states  # noqa: E402

BUILD = HERE / "build" / "mujoco"
PATHS = ("forward", "inverse", "M", "M_fwdpos")
TOL = 1e-8
COMPILER_OPTIONS = {"discardvisual": "true", "balanceinertia": "true", "fusestatic": "false"}


def urdf_for_mujoco(path: Path) -> str:
    """The URDF with MuJoCo's compiler options in its <robot><mujoco> element."""
    root = ET.parse(path).getroot()
    mj = root.find("mujoco")
    if mj is None:
        mj = ET.Element("mujoco")
        root.insert(0, mj)
    comp = mj.find("compiler")
    if comp is None:
        comp = ET.SubElement(mj, "compiler")
    comp.attrib.update(COMPILER_OPTIONS)
    return ET.tostring(root, encoding="unicode")


def mujoco_model(mujoco, path: Path, floating: bool, mb):
    """Compiled MjModel of the URDF: visuals stripped, free joint on the root body for a floating base,
    contacts and constraints off, symgen's gravity."""
    spec = mujoco.MjSpec.from_string(urdf_for_mujoco(path))
    if floating:
        root = [n for n, h in mb.manifest["hinges"].items() if h["type"] == "FULL6DOF"]
        body = spec.worldbody.first_body()
        if len(root) != 1 or body is None or body.name != mb.manifest["hinges"][root[0]]["body"]:
            raise RuntimeError(f"mujoco_peer: {path.name}: cannot match symgen's floating root to MuJoCo's root body")
        body.add_freejoint().name = root[0]
    spec.option.disableflags |= int(mujoco.mjtDisableBit.mjDSBL_CONTACT) | int(mujoco.mjtDisableBit.mjDSBL_CONSTRAINT)
    spec.option.gravity = np.asarray(mb.gravity, float)
    return spec, spec.compile()


def coordinate_maps(mujoco, m, mb):
    """(qperm, uperm): MuJoCo qpos[i] = symgen q[qperm[i]], qvel[i] = symgen u[uperm[i]]."""
    if (m.nq, m.nv) != (mb.nq, mb.nu):
        raise RuntimeError(f"mujoco_peer: {mb.name}: MuJoCo has nq={m.nq}, nv={m.nv}; symgen nQ={mb.nq}, nU={mb.nu}")
    qperm, uperm = np.full(m.nq, -1), np.full(m.nv, -1)
    for name, h in mb.manifest["hinges"].items():
        if h["type"] == "LOCKED":
            continue
        if h["type"] not in ("PIN", "SLIDER", "FULL6DOF"):
            raise RuntimeError(f"mujoco_peer: {mb.name}: no MuJoCo mapping for symgen hinge {name} ({h['type']})")
        jid = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_JOINT, name)
        if jid < 0:
            raise RuntimeError(f"mujoco_peer: {mb.name}: MuJoCo has no joint {name!r}")
        qa, da = m.jnt_qposadr[jid], m.jnt_dofadr[jid]
        (q0, q1), (u0, u1) = h["q"], h["u"]
        if h["type"] == "FULL6DOF":  # MuJoCo [x y z qw qx qy qz], symgen [x y z qx qy qz qw]
            qperm[qa:qa + 7] = [q0, q0 + 1, q0 + 2, q0 + 6, q0 + 3, q0 + 4, q0 + 5]
        else:
            qperm[qa:qa + q1 - q0] = range(q0, q1)
        uperm[da:da + u1 - u0] = range(u0, u1)
    if sorted(qperm) != list(range(m.nq)) or sorted(uperm) != list(range(m.nv)):
        raise RuntimeError(f"mujoco_peer: {mb.name}: MuJoCo's joints do not cover symgen's coordinates one to one")
    return qperm, uperm


def inertia_note(mujoco, m, mb) -> str:
    """How MuJoCo's compiled masses / principal inertias / armature / damping compare with the URDF's."""
    changed = []
    for b in mb.manifest["bodies"]:
        bid = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_BODY, b["name"])
        if bid < 0:
            changed.append(f"{b['name']} missing")
            continue
        eig = np.sort(np.linalg.eigvalsh(np.asarray(b["inertia"], float)))
        if abs(m.body_mass[bid] - b["mass"]) > 1e-12 * b["mass"] or \
                np.max(np.abs(np.sort(m.body_inertia[bid]) - eig)) > 1e-12 * max(eig.max(), 1e-300):
            changed.append(b["name"])
    extra = [f"{k} {getattr(m, k).max():g}" for k in ("dof_armature", "dof_damping", "dof_frictionloss")
             if m.nv and getattr(m, k).max() != 0]
    if not changed and not extra:
        return "masses and principal inertias as in the URDF (1e-12); no armature, damping or friction loss"
    return "; ".join(([f"inertia/mass changed on {', '.join(changed)}"] if changed else []) + extra)


def mujoco_reference(mujoco, m, qpos, qvel, tau, qacc):
    """qacc of mj_forward, qfrc_inverse of mj_inverse and the dense M for one state, from Python."""
    d = mujoco.MjData(m)
    d.qpos[:], d.qvel[:], d.qfrc_applied[:] = qpos, qvel, tau
    mujoco.mj_forward(m, d)
    fd = d.qacc.copy()
    M = np.zeros((m.nv, m.nv))
    mujoco.mj_fullM(m, d, M)
    d.qacc[:] = qacc
    mujoco.mj_inverse(m, d)
    return fd, d.qfrc_inverse.copy(), M


def _rel(a, b) -> float:
    a, b = np.ravel(a), np.ravel(b)
    return float(np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-300)) if b.size else 0.0


def _c_toolchain(mujoco):
    """(compiler command, include dir, libmujoco path) or a reason string why C timing is unavailable."""
    from symgen.pipeline.compile import compiler

    pkg = Path(mujoco.__file__).resolve().parent
    inc = pkg / "include"
    libs = sorted(glob.glob(str(pkg / "libmujoco.so*")) + glob.glob(str(pkg / "libmujoco*.dylib")))
    if not (inc / "mujoco" / "mujoco.h").exists() or not libs:
        return f"no libmujoco or headers in {pkg}"
    return compiler(), inc, Path(libs[0])


def _compile_c(cc, inc: Path, lib: Path) -> Path:
    exe = BUILD / "mj_bench"
    cmd = [*cc, "-std=c11", "-O2", f"-I{inc}", str(HERE / "mj_bench.c"), str(lib), f"-Wl,-rpath,{lib.parent}",
           "-o", str(exe), "-lm"]
    key = hashlib.sha256(("\0".join(cmd)).encode() + (HERE / "mj_bench.c").read_bytes()
                         + (HERE / "bench_util.h").read_bytes()
                         + str(lib.stat().st_mtime_ns).encode()).hexdigest()
    stamp = exe.with_suffix(".stamp")
    if exe.exists() and stamp.exists() and stamp.read_text() == key:
        return exe
    BUILD.mkdir(parents=True, exist_ok=True)
    exe.unlink(missing_ok=True)
    res = subprocess.run(cmd, capture_output=True, text=True)
    if res.returncode:
        raise RuntimeError(f"mujoco_peer: compiling mj_bench.c failed:\n{' '.join(cmd)}\n{res.stderr[-4000:]}")
    stamp.write_text(key)
    return exe


def _time_c(exe: Path, lib: Path, mujoco, m, d: Path, n: int, rounds: int, data: dict,
            copies: int) -> tuple[dict, np.ndarray]:
    mujoco.mj_saveModel(m, str(d / "model.mjb"), None)
    for k, a in data.items():
        np.ascontiguousarray(a, dtype=np.float64).tofile(d / f"{k}.bin")
    times = run_copies([exe, d / "model.mjb", d, n, rounds], copies, libs=[lib], what="mujoco_peer")
    return times, np.fromfile(d / "first.bin")


def _time_python(mujoco, m, n: int, rounds: int, data: dict) -> dict:
    d = mujoco.MjData(m)
    M = np.zeros((m.nv, m.nv))
    qpos, qvel, tau, qacc = data["qpos"], data["qvel"], data["tau"], data["qacc"]

    def forward(i):
        d.qpos[:], d.qvel[:], d.qfrc_applied[:] = qpos[i], qvel[i], tau[i]
        mujoco.mj_forward(m, d)

    def inverse(i):
        d.qpos[:], d.qvel[:], d.qacc[:] = qpos[i], qvel[i], qacc[i]
        mujoco.mj_inverse(m, d)

    def mass(i):
        d.qpos[:] = qpos[i]
        mujoco.mj_kinematics(m, d)
        mujoco.mj_comPos(m, d)
        mujoco.mj_makeM(m, d)
        mujoco.mj_fullM(m, d, M)

    def mass_fwdpos(i):
        d.qpos[:] = qpos[i]
        mujoco.mj_fwdPosition(m, d)
        mujoco.mj_fullM(m, d, M)

    fns = dict(zip(PATHS, (forward, inverse, mass, mass_fwdpos)))
    samples = {k: [] for k in PATHS}
    for fn in fns.values():
        for i in range(min(n, 100)):  # warm-up
            fn(i)
    for _ in range(rounds):
        for k, fn in fns.items():
            t = time.perf_counter()
            for i in range(n):
                fn(i)
            samples[k].append((time.perf_counter() - t) / n * 1e6)
    out = {}
    for k, v in samples.items():
        out[k], out[f"{k}_min"] = median(v), min(v)
    return out


def bench_robot(mujoco, spec: str, n: int, rounds: int, c_exe, copies: int = COPIES) -> dict:
    """c_exe: (mj_bench, libmujoco) or None (time from Python)."""
    import symgen

    path, floating = parse_robot(spec)
    mb = symgen.build(path, floating_base=floating)
    mjspec, m = mujoco_model(mujoco, path, floating, mb)
    qperm, uperm = coordinate_maps(mujoco, m, mb)
    Q, U, T = states(mb, n)
    data = {"qpos": Q[:, qperm], "qvel": U[:, uperm], "tau": T[:, uperm], "qacc": T[:, uperm]}

    fd, tau, M = mujoco_reference(mujoco, m, data["qpos"][0], data["qvel"][0], data["tau"][0], data["qacc"][0])
    check = {"fd": _rel(fd, mb.forward_dynamics(Q[0], U[0], T[0])[uperm]),
             "id": _rel(tau, mb.inverse_dynamics(Q[0], U[0], T[0])[uperm]),
             "M": _rel(M, mb.mass_matrix(Q[0])[np.ix_(uperm, uperm)])}
    if max(check.values()) > TOL:
        raise RuntimeError(f"mujoco_peer: {spec}: MuJoCo and symgen disagree on state 0 (relative deviations "
                           f"{check}; tol {TOL})")

    d = BUILD / slug(spec)
    d.mkdir(parents=True, exist_ok=True)
    (d / "model.xml").write_text(mjspec.to_xml())  # for reading; the C main loads model.mjb
    if c_exe is not None:
        times, first = _time_c(*c_exe, mujoco, m, d, n, rounds, data, copies)
        nv = m.nv
        want = np.concatenate([fd, tau, M.ravel(), M.ravel()])
        if first.size != want.size or _rel(first, want) > 1e-12:
            raise RuntimeError(f"mujoco_peer: {spec}: the C main's state-0 outputs differ from MuJoCo's Python "
                               f"bindings ({first.size} values for {want.size} expected; nv={nv})")
        timed_in = "C"
    else:
        times, timed_in = _time_python(mujoco, m, n, rounds, data), "python"
    return {"nq": m.nq, "nv": m.nv, "nbody": m.nbody, "n": n, "rounds": rounds, "timed_in": timed_in,
            "mujoco": mujoco.__version__, "check": check, "inertia_note": inertia_note(mujoco, m, mb), **times}


def run(robots=None, n: int = 10000, rounds: int = 7, python: bool = False, verbose: bool = True,
        copies: int = COPIES) -> dict:
    """Time MuJoCo on every robot; {robot spec: results} ({} when mujoco is not installed)."""
    try:
        import mujoco
    except ImportError:
        print("mujoco_peer: mujoco is not installed (pip install mujoco); skipped")
        return {}
    from symgen.pipeline.compile import BuildError, compiler

    try:
        compiler()
    except BuildError:
        print("mujoco_peer: no C compiler, so symgen cannot build the models to check against; skipped")
        return {}
    robots = list(robots or DEFAULT_ROBOTS)
    c_exe = None
    if not python:
        tc = _c_toolchain(mujoco)
        if isinstance(tc, str):
            print(f"mujoco_peer: {tc}; timing from Python instead of C")
        else:
            c_exe = (_compile_c(*tc), tc[2])
    results = {}
    for spec in robots:
        results[spec] = r = bench_robot(mujoco, spec, n, rounds, c_exe, copies)
        if verbose:
            print(f"mujoco {r['mujoco']} {spec:22} nv={r['nv']:3d}  " + "  ".join(f"{k} {r[k]:7.3f}" for k in PATHS)
                  + f"  us/state, timed in {r['timed_in']}  (vs symgen: "
                  + ", ".join(f"{k} {v:.0e}" for k, v in r["check"].items()) + ")", flush=True)
    return results


def table(results: dict) -> str:
    lines = [f"{'robot':22} {'nv':>4} " + " ".join(f"{k:>9}" for k in PATHS) + "   (median us per state)"]
    for spec, r in results.items():
        lines.append(f"{spec:22} {r['nv']:4d} " + " ".join(f"{r[k]:9.3f}" for k in PATHS) + f"   {r['timed_in']}")
    notes = {spec: r["inertia_note"] for spec, r in results.items()}
    lines += [f"{spec}: {note}" for spec, note in notes.items()]
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = robot_parser(__doc__)
    ap.add_argument("--python", action="store_true", help="time from Python even when C is available")
    args = ap.parse_args(argv)
    return report(run(args.robots, args.n, args.rounds, python=args.python, copies=args.copies), args.json, table)


if __name__ == "__main__":
    sys.exit(main())
