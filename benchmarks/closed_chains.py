"""Constrained forward dynamics of the closed-chain examples: symgen's tree-augmented (TA) method against
Pinocchio's ``constraintDynamics``.

    python benchmarks/closed_chains.py [--models fourbar slider_crank spatial_chain delta_robot] [--n 2000]
                                       [--rounds 7] [--copies 3] [--max-iter 50] [--no-cpp]

Mechanisms: the examples of examples/models/ that Pinocchio can express (all four: their tree hinges are PIN,
SLIDER, BALL_QUAT, UJOINT, FULL6DOF; their cuts BALL -> one ``RigidConstraintModel`` CONTACT_3D, LOCKED ->
CONTACT_6D, PIN about the source frame's z -> two CONTACT_3D, at the frame origin and one unit along z).
The Pinocchio model is built by hand (``addJoint`` / ``appendBodyToJoint``), bodies depth first, aligned joints
(RX, PY...) where a hinge axis is a coordinate axis; reference frame LOCAL, Baumgarte gains 0,
``ProximalSettings(1e-12, 1e-6, --max-iter)``, ``initConstraintDynamics`` once.

States: ``--n`` consistent states per mechanism, the actuated hinges driven along a path (a full crank turn; the
Delta's three arms on phase-shifted sines) and the rest assembled by ``mb.project`` to 1e-14 (continuation from
the previous state); velocities random in the null space of ``mb.constraint_jacobian``, T = M z (z ~ N(0, 1)).
Before timing, the accelerations of symgen (C batch) and Pinocchio (Python, and the C++ program's output) are
compared on every state (max difference, relative to max(1, |udot|)).

Columns (µs):
* symgen C batch / state: ``sg_<m>_ta_forward_dynamics_batch`` called through cffi on the N states (median of
  ``--rounds`` rounds, divided by N);
* symgen Python call: ``mb.forward_dynamics(q, u, T)`` on one state (the one-state fast path);
* Pinocchio Python call: ``pin.constraintDynamics(model, data, q, v, tau, cmodels, cdatas, prox)`` on one state,
  cmodels / cdatas as ``pin.StdVec_RigidConstraintModel`` / ``..Data`` (Python lists are converted, i.e. copied,
  on every call: 13 µs instead of 9 on the four-bar, 30 instead of 11 on the Delta);
* Pinocchio C++ / call: ``benchmarks/pin_cpp/closed_bench.cpp`` (compiled against the pin wheel's headers as
  benchmarks/pin_cpp/run.py does, into benchmarks/pin_cpp/build/; reused while the source and the command are
  unchanged), constraintDynamics over the same N states, median of rounds, median over ``--copies`` fresh copies
  of the binary.
Targets: symgen C <= 0.5x Pinocchio C++, symgen Python call <= 1.0x Pinocchio Python call.  Also printed: the
cost of the bare cffi call of the one-state entry point (prebuilt pointers), to split the Python call into C
work and wrapper overhead.  The table goes to benchmarks/closed_chains_latest.md.
"""
from __future__ import annotations

import argparse
import hashlib
import platform
import statistics
import subprocess
import sys
import tempfile
import timeit
from pathlib import Path

import numpy as np
import yaml

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(BENCH))

import symgen  # noqa: E402
from bench_common import load_script, run_copies  # noqa: E402

MODELS = ROOT / "examples" / "models"
CPP = BENCH / "pin_cpp" / "closed_bench.cpp"
DEFAULT = ["fourbar", "slider_crank", "spatial_chain", "delta_robot"]
NEWTONIAN = "newtonian"
#: project's tolerance on the constrained pose errors.  Tighter than its default 1e-12: TA applies a cut's force
#: at the target frame, so a closure gap d moves ~d |f| of moment into the spatial chain's coupler spin (inertia
#: 1e-5 kg m^2), ~1e-8 relative in udot at d = 1e-12 m, which a comparison of accelerations would charge to
#: the dynamics.
ASSEMBLY_TOL = 1e-14


# ------------------------------------------------------------------------------------------------ states
def example_setup(name):
    """(actuated hinges, configuration guess by hinge) of an example: tests/test_closed_examples.py's."""
    from test_closed_examples import EXAMPLES

    return EXAMPLES[name]


def drive(name, actuated, q0, k, n):
    """The actuated coordinates at path step k of n."""
    s = 2 * np.pi * k / n
    if len(actuated) == 1:
        return {actuated[0]: float(q0[0]) + s}                             # one full crank turn
    return {h: 0.5 + 0.2 * np.sin(s + 2 * np.pi * i / 3) for i, h in enumerate(actuated)}   # the Delta's arms


def closed_states(mb, name, n, seed=0):
    """(Q, U, T, rank): n consistent states along the drive path (project with the actuated hinges held,
    continued from the previous state), U in the null space of G_c, T = M z."""
    actuated, guess = example_setup(name)
    q = mb.neutral_q()
    for h, v in guess.items():
        q[mb.q_slice(h)] = v
    q, _ = mb.project(q, fixed=actuated, tol=ASSEMBLY_TOL)
    q0 = np.concatenate([q[mb.q_slice(h)] for h in actuated])
    Q = np.empty((n, mb.nq))
    for k in range(n):
        for h, v in drive(name, actuated, q0, k, n).items():
            q[mb.q_slice(h)] = v
        q, _ = mb.project(q, fixed=actuated, tol=ASSEMBLY_TOL)
        Q[k] = q
    G, _ = mb.constraint_jacobian(Q)
    _, s, Vt = np.linalg.svd(G)
    ranks = np.sum(s > 1e-10 * s[:, :1], axis=1)
    r = int(ranks[0])
    assert np.all(ranks == r), f"{name}: the constraint rank changes along the path ({sorted(set(ranks))})"
    rng = np.random.default_rng(seed)
    U = np.einsum("nij,nj->ni", Vt[:, r:, :].transpose(0, 2, 1), rng.normal(size=(n, mb.nu - r)))
    T = np.einsum("nij,nj->ni", mb.mass_matrix(Q), rng.normal(size=(n, mb.nu)))
    return np.ascontiguousarray(Q), np.ascontiguousarray(U), np.ascontiguousarray(T), r


# ------------------------------------------------------------------------------------- Pinocchio model
def joint_spec(h: dict) -> tuple:
    """The Pinocchio joint of a symgen hinge (document form): ('RZ',), ('RU', axis), ('S',), ('U', a1, a2)..."""
    t = h["type"]
    if t in ("PIN", "SLIDER"):
        a = np.asarray(h.get("axis", (0, 0, 1)), float)
        a = a / np.linalg.norm(a)
        for k, e in enumerate(np.eye(3)):
            if np.array_equal(a, e):
                return (("R" if t == "PIN" else "P") + "XYZ"[k],)
        return ("RU" if t == "PIN" else "PU", a)
    if t == "BALL_QUAT":
        return ("S",)
    if t == "UJOINT":
        a1, a2 = (np.asarray(a, float) for a in h.get("axes", [[1, 0, 0], [0, 1, 0]]))
        return ("U", a1, a2)
    if t == "FULL6DOF":
        return ("FF",)
    raise SystemExit(f"closed_chains: hinge type {t} has no Pinocchio joint here")


def make_joint(pin, spec):
    t = spec[0]
    simple = {"RX": pin.JointModelRX, "RY": pin.JointModelRY, "RZ": pin.JointModelRZ, "PX": pin.JointModelPX,
              "PY": pin.JointModelPY, "PZ": pin.JointModelPZ, "S": pin.JointModelSpherical,
              "FF": pin.JointModelFreeFlyer}
    if t in simple:
        return simple[t]()
    if t == "RU":
        return pin.JointModelRevoluteUnaligned(spec[1])
    if t == "PU":
        return pin.JointModelPrismaticUnaligned(spec[1])
    return pin.JointModelUniversal(spec[1], spec[2])


def inertia_matrix(v) -> np.ndarray:
    a = np.asarray(v, float)
    if a.shape == (6,):
        xx, yy, zz, xy, xz, yz = a
        a = np.array([[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]])
    return a


def pinocchio_model(pin, pc, doc, mb):
    """``(pm, maps, specs)``: the document's tree in Pinocchio (bodies depth first; body frames named like
    the bodies, the document's frames as OP_FRAMEs), tests/pin_closed.py's conventions (pnode^-1 folded into
    the body and frame placements), the Q/U maps from ``mb``'s slices, and the joint specs by joint id."""
    by = {b["name"]: b for b in doc["bodies"]}
    pm = pin.Model()
    pm.name = doc["name"]
    pm.gravity = pin.Motion(np.r_[np.asarray(doc.get("gravity", [0, 0, -9.81]), float), 0.0, 0.0, 0.0])
    jid_of, bframe_of, specs = {NEWTONIAN: 0}, {NEWTONIAN: 0}, {}
    for n in pc.depth_first_order(doc):
        b = by[n]
        spec = joint_spec(b["hinge"])
        place = pc.pose_matrix(b.get("onode"))
        if b["parent"] != NEWTONIAN:
            place = pc.inv(pc.pose_matrix(by[b["parent"]].get("pnode"))) @ place
        jid = pm.addJoint(jid_of[b["parent"]], make_joint(pin, spec), pc.se3(place), b["hinge"].get("name", n))
        jid_of[n], specs[jid] = jid, spec
        body_in_joint = pc.se3(pc.inv(pc.pose_matrix(b.get("pnode"))))
        pm.appendBodyToJoint(jid, pin.Inertia(float(b["mass"]), np.asarray(b.get("com", [0, 0, 0]), float),
                                              inertia_matrix(b["inertia"])), body_in_joint)
        bframe_of[n] = pm.addBodyFrame(n, jid, body_in_joint, bframe_of[b["parent"]])
        for f in b.get("frames", []):
            pm.addFrame(pin.Frame(f["name"], jid, bframe_of[n], body_in_joint * pc.se3(pc.pose_matrix(f)),
                                  pin.FrameType.OP_FRAME))
    hinges, floating = [], None
    for b in by.values():
        h = b["hinge"].get("name", b["name"])
        jm = pm.joints[jid_of[b["name"]]]
        hm = pc.HingeMap(h, b["name"], b["hinge"]["type"], mb.q_slice(h), mb.u_slice(h), jid_of[b["name"]],
                         slice(jm.idx_q, jm.idx_q + jm.nq), slice(jm.idx_v, jm.idx_v + jm.nv))
        assert (jm.nq, jm.nv) == (hm.q.stop - hm.q.start, hm.u.stop - hm.u.start), h
        hinges.append(hm)
        floating = hm if hm.type == "FULL6DOF" else floating
    assert (pm.nq, pm.nv) == (mb.nq, mb.nu)
    return pm, pc.PinMaps(hinges, pm.nq, pm.nv, {n: jid_of[n] for n in by}, floating), specs


def check_frames(pin, pm, mb, doc, maps, pc, q) -> float:
    """Largest difference of the named frames' world poses, symgen against Pinocchio, at q."""
    pd = pm.createData()
    pin.framesForwardKinematics(pm, pd, pc.to_pin_q(maps, q))
    names = [b["name"] for b in doc["bodies"]] + [f["name"] for b in doc["bodies"] for f in b.get("frames", [])]
    err = 0.0
    for n in names:
        X = pd.oMf[pm.getFrameId(n)]
        err = max(err, float(np.max(np.abs(mb.frame_pose(q, n) - X.homogeneous))))
    return err


# -------------------------------------------------------------------------------------------- timing
def med_us(fn, number, rounds) -> float:
    return statistics.median(timeit.repeat(fn, number=number, repeat=rounds)) / number * 1e6


def cpp_binary(verbose=True):
    """Compile closed_bench.cpp as benchmarks/pin_cpp/run.py compiles pin_bench (its toolchain lookup, its
    flags, plus -Wno-deprecated-declarations: constraintDynamics is marked 'the API will change'); reuse the
    binary while the source, the command and the Pinocchio version are unchanged.  None when skipped."""
    run = load_script("pin_cpp/run.py", "pin_cpp_run")
    tc = run._toolchain(verbose)
    if tc is None:
        return None
    pin, prefix, inc, cxx = tc
    out = BENCH / "pin_cpp" / "build"
    out.mkdir(exist_ok=True)
    exe = out / "closed_bench"
    cmd = [cxx, "-O3", "-DNDEBUG", "-std=c++17", "-Wno-deprecated-declarations",
           "-DBOOST_MPL_CFG_NO_PREPROCESSED_HEADERS", "-DBOOST_MPL_LIMIT_LIST_SIZE=30",
           "-DBOOST_MPL_LIMIT_VECTOR_SIZE=30", "-DBOOST_FUSION_INVOKE_MAX_ARITY=12", f"-I{inc}", f"-I{inc / 'eigen3'}",
           str(CPP), "-o", str(exe), f"-L{prefix / 'lib'}", "-lpinocchio_default", f"-Wl,-rpath,{prefix / 'lib'}"]
    key = hashlib.sha256("\0".join([*cmd, pin.__version__, CPP.read_text()]).encode()).hexdigest()
    stamp = exe.with_suffix(".stamp")
    if exe.exists() and stamp.exists() and stamp.read_text() == key:
        return exe
    if verbose:
        print("closed_chains: compiling the Pinocchio C++ constraintDynamics benchmark (a few minutes)...", flush=True)
    stamp.unlink(missing_ok=True)
    subprocess.run(cmd, check=True)
    stamp.write_text(key)
    return exe


def write_cpp_data(path, pm, specs, cms, prox, QP, V, TAU):
    f = lambda xs: " ".join(f"{float(x):.17g}" for x in np.ravel(xs))  # noqa: E731
    L = [str(pm.njoints - 1)]
    for j in range(1, pm.njoints):
        spec, M, I = specs[j], pm.jointPlacements[j], pm.inertias[j]
        L.append(" ".join([str(pm.parents[j]), spec[0], *(f(a) for a in spec[1:]), f(M.rotation), f(M.translation),
                           f([I.mass]), f(I.lever), f(I.inertia)]))
    L.append(f(pm.gravity.linear))
    L.append(str(len(cms)))
    for cm in cms:
        kind = 6 if cm.type == cm.type.CONTACT_6D else 3
        L.append(" ".join([str(kind), str(cm.joint1_id), f(cm.joint1_placement.rotation), f(cm.joint1_placement.translation),
                           str(cm.joint2_id), f(cm.joint2_placement.rotation), f(cm.joint2_placement.translation)]))
    L.append(f"{prox[0]:.17g} {prox[1]:.17g} {prox[2]}")
    L.append(str(len(QP)))
    L += [" ".join([f(q), f(v), f(t)]) for q, v, t in zip(QP, V, TAU)]
    Path(path).write_text("\n".join(L) + "\n")


def bench_model(name, args, pin, pc, exe):
    path = MODELS / f"{name}.yaml"
    doc = yaml.safe_load(path.read_text())
    for lc in doc.get("loops", []):
        h = lc["hinge"] if isinstance(lc["hinge"], dict) else {"type": lc["hinge"]}
        if h["type"].upper() not in ("BALL", "LOCKED", "PIN") or list(h.get("axis", [0, 0, 1])) != [0, 0, 1]:
            print(f"{name}: cut {lc['name']} ({h}) has no Pinocchio constraint here; skipped")
            return None
    mb = symgen.build(str(path))
    Q, U, T, rank = closed_states(mb, name, args.n)
    n = len(Q)
    pm, maps, specs = pinocchio_model(pin, pc, doc, mb)
    cms = pc.constraint_models(pm, doc)
    frame_err = max(check_frames(pin, pm, mb, doc, maps, pc, Q[k]) for k in (0, n // 3, 2 * n // 3))
    assert frame_err < 1e-12, f"{name}: symgen and Pinocchio frames differ by {frame_err:.3g}"
    QP = np.array([pc.to_pin_q(maps, q) for q in Q])
    Tm = [pc.u_matrix(maps, q) for q in Q]
    V = np.array([np.linalg.solve(t, u) for t, u in zip(Tm, U)])
    TAU = np.array([t.T @ tau for t, tau in zip(Tm, T)])
    Jv = float(np.max(np.abs(pc.pin_constraint_jacobian(pm, cms, QP[0]) @ V[0])))

    # symgen: the C batch entry point on the n states
    L = mb.layout
    P = np.zeros((n, L.ta_params.size))
    P[:, L.ta_params.span("gravity")] = mb.gravity
    P[:, L.ta_params.span("tau")] = T
    out = np.zeros((n, L.ta_out.size))
    ffi, lib = mb.binding.ffi, mb.binding.lib
    batch = getattr(lib, f"sg_{mb.name}_ta_forward_dynamics_batch")
    bufs = [ffi.from_buffer("double[]", a) for a in (Q, U, P)] + [ffi.from_buffer("double[]", out, require_writable=True)]
    assert batch(n, *bufs) == 0
    udot = out[:, L.ta_out.span("udot")].copy()
    assert np.all(out[:, L.ta_out["rank"]] == rank)

    # Pinocchio (Python) on every state: the accelerations, mapped to symgen's U
    pd = pm.createData()
    cms_py, cms, cds = cms, pin.StdVec_RigidConstraintModel(), pin.StdVec_RigidConstraintData()
    for cm in cms_py:                  # Pinocchio's own vector types: a Python list is converted on every call
        cms.append(cm)
        cds.append(cm.createData())
    pin.initConstraintDynamics(pm, pd, cms, cds)
    prox_args = (1e-12, 1e-6, args.max_iter)
    prox = pin.ProximalSettings(*prox_args)
    diff, iters = 0.0, []
    for k in range(n):
        a = np.array(pin.constraintDynamics(pm, pd, QP[k], V[k], TAU[k], cms, cds, prox))
        iters.append(prox.iter)
        ud = pc.from_pin_accel(maps, Q[k], V[k], a)
        diff = max(diff, float(np.max(np.abs(ud - udot[k]))) / max(1.0, float(np.max(np.abs(udot[k])))))
    q, u, tau = Q[0].copy(), U[0].copy(), T[0].copy()
    d0 = float(np.max(np.abs(mb.forward_dynamics(q, u, tau) - udot[0])))
    a0 = np.array(pin.constraintDynamics(pm, pd, QP[0], V[0], TAU[0], cms, cds, prox))
    diff0 = float(np.max(np.abs(pc.from_pin_accel(maps, Q[0], V[0], a0) - udot[0])))
    print(f"{name}: nU {mb.nu}, symgen rows {L.nc} (rank {rank}), Pinocchio rows "
          f"{sum(3 if c.type == c.type.CONTACT_3D else 6 for c in cms)}; frames agree to {frame_err:.1e}, "
          f"|J_pin v| {Jv:.1e}; max |udot_symgen - udot_pin| / max(1, |udot|) over {n} states {diff:.2e} "
          f"(prox iterations mean {np.mean(iters):.1f}, max {max(iters)} of {args.max_iter}); at the state "
          f"timed in Python: max |udot_symgen - udot_pin| {diff0:.1e} (|udot| {np.max(np.abs(udot[0])):.3g}), "
          f"symgen Python call vs C batch {d0:.1e}", flush=True)

    res = {"model": name, "nu": mb.nu, "nc": L.nc, "rank": rank, "diff": diff, "iters": float(np.mean(iters)),
           "max_iters": int(max(iters))}
    reps = max(1, int(0.05 / max(1e-9, timeit.timeit(lambda: batch(n, *bufs), number=1))))
    res["sym_c"] = med_us(lambda: batch(n, *bufs), reps, args.rounds) / n
    res["sym_py"] = med_us(lambda: mb.forward_dynamics(q, u, tau), 20000, args.rounds)
    fb, dbl = ffi.from_buffer, ffi.typeof("double[]")
    pq, pu, pt = fb(dbl, q), fb(dbl, u), fb(dbl, tau)
    res_buf = np.empty(mb.nu)
    po, g, null, ta1 = fb(dbl, res_buf), mb.binding.gravity_pointer(None), ffi.NULL, mb.binding.one_state["ta_forward_dynamics"]
    res["sym_cffi"] = med_us(lambda: ta1(pq, pu, g, pt, null, po), 20000, args.rounds)
    qp, v, tp = QP[0].copy(), V[0].copy(), TAU[0].copy()
    res["pin_py"] = med_us(lambda: pin.constraintDynamics(pm, pd, qp, v, tp, cms, cds, prox), 20000, args.rounds)
    res["pin_cpp"] = None
    if exe is not None:
        with tempfile.TemporaryDirectory(prefix="closed-bench-") as tmp:
            data, acc = Path(tmp) / "data.txt", Path(tmp) / "acc.txt"
            write_cpp_data(data, pm, specs, cms, prox_args, QP, V, TAU)
            r = run_copies([exe, data, args.rounds, acc], args.copies, what="closed_bench")
            A = np.loadtxt(acc, ndmin=2)
        ud = np.array([pc.from_pin_accel(maps, Q[k], V[k], A[k]) for k in range(n)])
        res["cpp_diff"] = float(np.max(np.abs(ud - udot) / np.maximum(1.0, np.max(np.abs(udot), axis=1))[:, None]))
        res["pin_cpp"], res["cpp_iters"] = r["constraintDynamics"], r["iters"]
        print(f"{name}: Pinocchio C++ accelerations vs symgen {res['cpp_diff']:.2e} "
              f"(prox iterations mean {r['iters']:.1f})", flush=True)
    return res


def table(rows, args) -> str:
    def x(a, b):
        return f"{a / b:.2f}x" if a is not None and b else "-"
    H = ["model", "nU", "rows symgen (rank)", "max rel. udot diff", "prox iters (mean/max)",
         "symgen C batch µs/state", "symgen Python µs/call", "(bare cffi call µs)", "Pinocchio Python µs/call",
         "Pinocchio C++ µs/call", "symgen C / Pin C++ (target ≤ 0.5x)", "symgen Py / Pin Py (target ≤ 1.0x)"]
    out = ["| " + " | ".join(H) + " |", "|" + "---|" * len(H)]
    for r in rows:
        cpp = "-" if r["pin_cpp"] is None else f"{r['pin_cpp']:.2f}"
        diff = f"{r['diff']:.1e}" + ("" if r.get("cpp_diff") is None else f" (C++ {r['cpp_diff']:.1e})")
        out.append("| " + " | ".join([r["model"], str(r["nu"]), f"{r['nc']} ({r['rank']})", diff,
                                      f"{r['iters']:.1f}/{r['max_iters']}", f"{r['sym_c']:.2f}", f"{r['sym_py']:.2f}",
                                      f"{r['sym_cffi']:.2f}", f"{r['pin_py']:.2f}", cpp, x(r["sym_c"], r["pin_cpp"]),
                                      x(r["sym_py"], r["pin_py"])]) + " |")
    return "\n".join(out)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", nargs="+", default=DEFAULT)
    ap.add_argument("--n", type=int, default=2000, help="consistent states per mechanism (default 2000)")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--copies", type=int, default=3, help="fresh copies of the C++ binary (median over them)")
    ap.add_argument("--max-iter", type=int, default=50, help="ProximalSettings max_iter (default 50)")
    ap.add_argument("--no-cpp", action="store_true", help="skip the Pinocchio C++ column")
    ap.add_argument("--out", default=str(BENCH / "closed_chains_latest.md"))
    args = ap.parse_args(argv)
    try:
        import pinocchio as pin
    except ImportError:
        print("closed_chains: pinocchio is not installed (pip install pin); skipped")
        return 0
    import pin_closed as pc

    exe = None if args.no_cpp else cpp_binary()
    rows = [r for r in (bench_model(m, args, pin, pc, exe) for m in args.models) if r is not None]
    text = table(rows, args)
    c_ok = [r["model"] for r in rows if r["pin_cpp"] is not None and r["sym_c"] <= 0.5 * r["pin_cpp"]]
    py_ok = [r["model"] for r in rows if r["sym_py"] <= r["pin_py"]]
    text += (f"\n\nTargets: symgen C <= 0.5x Pinocchio C++ met on {len(c_ok)} of "
             f"{sum(r['pin_cpp'] is not None for r in rows)} ({', '.join(c_ok) or 'none'}); symgen Python call <= 1.0x "
             f"Pinocchio Python call met on {len(py_ok)} of {len(rows)} ({', '.join(py_ok) or 'none'}).")
    slow = [f"{r['model']} ({r['iters']:.0f})" for r in rows if r["iters"] > 10]
    if slow:
        text += (f"\n\nPinocchio's proximal solver needs many iterations on {', '.join(slow)}: a PIN cut in a planar "
                 f"mechanism is 6 Pinocchio rows of rank 2, and with redundant rows the iteration (mu = 1e-6) "
                 f"converges slowly; symgen's TA does one rank-revealing solve.")
    over = [r["sym_py"] - r["sym_cffi"] for r in rows]
    call = [r["sym_cffi"] - r["sym_c"] for r in rows]
    text += (f"\n\nsymgen's Python call is the bare cffi call of sg_<m>_ta_forward_dynamics_single plus "
             f"{min(over):.2f}-{max(over):.2f} µs of wrapper (dtype / shape checks, four ffi.from_buffer, the output "
             f"array); the bare call is the C work (the batch's µs/state) plus {min(call):.2f}-{max(call):.2f} µs of cffi "
             f"dispatch.")
    print("\n" + text)
    head = (f"# Constrained forward dynamics: symgen TA vs Pinocchio constraintDynamics\n\n"
            f"`python benchmarks/closed_chains.py` ({args.n} consistent states per mechanism, {args.rounds} rounds, "
            f"ProximalSettings(1e-12, 1e-6, {args.max_iter}), Baumgarte gains 0; Pinocchio {pin.__version__}, "
            f"{platform.machine()}, Python {platform.python_version()}).  See the script's docstring for the "
            f"columns.\n\n")
    Path(args.out).write_text(head + text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
