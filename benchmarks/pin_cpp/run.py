"""Pinocchio's own C++ (aba, rnea, crba, computeABADerivatives, computeRNEADerivatives), built from the `pin` wheel's headers, on the benchmark robots.

    pip install cmeel-eigen            # Eigen headers (the pin wheel ships Pinocchio's and Boost's, not Eigen's)
    python benchmarks/pin_cpp/run.py [--robots arm6 arm7 quadruped:floating humanoid:floating ...]
                                     [--n 10000] [--rounds 7] [--copies 5] [--json results.json]

A robot is a URDF path or a name in examples/models/; ``:floating`` gives it a free-flyer root.

The wheel has neither the URDF parser's nor the serialization headers, so this script loads each URDF with
Pinocchio in Python and writes ``models.hpp``: C++ that rebuilds the same models through addJoint /
appendBodyToJoint, plus ``build_model(robot, model)``.  It always holds the default robots plus the requested
ones, so the usual runs share one binary.  ``pin_bench.cpp`` includes it; compiling ``pin_bench`` takes about
3 minutes (g++ -O3 -DNDEBUG), so an existing binary is reused while ``models.hpp``, ``pin_bench.cpp`` and the
compile command are unchanged (their hash is kept in ``pin_bench.stamp``).  With ``SYMGEN_MARCH_NATIVE=1`` (the
opt-in that adds ``-march=native`` to symgen's modules) it builds and runs ``pin_bench_native`` with
``-march=native`` too, so both sides of the comparison get the same flags.

``pin_bench ROBOT N ROUNDS`` draws its own N random states (``randomConfiguration`` in [-2, 2], v and tau
uniform in [-1, 1]), warms up, times ``--rounds`` rounds of each algorithm in turn and reports the median
(and minimum) µs per call.  It runs ``--copies`` times (default 5), each from a fresh copy of the binary,
and each number is the median over the copies (``bench_common.run_copies``).  Skips cleanly (message, exit 0) when Pinocchio, its or Eigen's headers, or a C++
compiler are missing.

From Python: ``run(robots, n, rounds, copies=5) -> {robot: {"aba", "rnea", "crba" (median µs), "aba_min",
"aba_spread", ...}}``
({} when skipped).
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
from bench_common import COPIES, DEFAULT_ROBOTS, parse_robot, report, robot_parser, run_copies, slug  # noqa: E402

ALGORITHMS = ("aba", "rnea", "crba", "aba_derivatives", "rnea_derivatives", "ccrba")
SUPPORTED = {"JointModelRX", "JointModelRY", "JointModelRZ", "JointModelRUBX", "JointModelRUBY", "JointModelRUBZ",
             "JointModelPX", "JointModelPY", "JointModelPZ", "JointModelFreeFlyer"}


def models_hpp(pin, robots) -> str:
    out, dispatch, used = [], [], set()
    for spec in robots:
        path, floating = parse_robot(spec)
        fn = f"build_{slug(spec)}"
        while fn in used:
            fn += "_"
        used.add(fn)
        m = pin.buildModelFromUrdf(str(path), pin.JointModelFreeFlyer()) if floating else pin.buildModelFromUrdf(str(path))
        L = [f"static void {fn}(pinocchio::Model &model) {{",
             "  using namespace pinocchio; Eigen::Matrix3d R, I; Eigen::Vector3d p, c; JointIndex j;"]
        for jid in range(1, m.njoints):
            sn = m.joints[jid].shortname()
            if sn not in SUPPORTED:
                raise SystemExit(f"pin_cpp: joint type {sn} of {spec} is not handled by this generator")
            M, In = m.jointPlacements[jid], m.inertias[jid]
            L.append("  R << " + ", ".join(f"{x:.17g}" for x in M.rotation.ravel()) + "; p << "
                     + ", ".join(f"{x:.17g}" for x in M.translation) + ";")
            L.append(f'  j = model.addJoint({m.parents[jid]}, {sn}(), SE3(R, p), "{m.names[jid]}");')
            L.append("  c << " + ", ".join(f"{x:.17g}" for x in In.lever) + "; I << "
                     + ", ".join(f"{x:.17g}" for x in In.inertia.ravel()) + ";")
            L.append(f"  model.appendBodyToJoint(j, Inertia({In.mass:.17g}, c, I), SE3::Identity());")
        out.append("\n".join(L + ["}"]))
        dispatch.append(f'  if (robot == {json.dumps(spec)}) {{ {fn}(model); return true; }}')
    out.append("\n".join(["static bool build_model(const std::string &robot, pinocchio::Model &model) {",
                          *dispatch, "  return false;", "}"]))
    return "// Written by run.py; do not edit.\n#include <string>\n\n" + "\n\n".join(out) + "\n"


def _toolchain(verbose=True):
    """(pinocchio module, prefix, include dir, C++ compiler) or None (with a message) when a piece is missing."""
    try:
        import pinocchio as pin
    except ImportError:
        print("pin_cpp: pinocchio is not installed (pip install pin); skipped")
        return None
    prefix = Path(pin.__file__).resolve().parents[4]  # .../cmeel.prefix
    inc = prefix / "include"
    if not (inc / "pinocchio").exists() or not (inc / "eigen3" / "Eigen").exists():
        print(f"pin_cpp: Pinocchio or Eigen headers not under {inc} (pip install cmeel-eigen); skipped")
        return None
    cxx = shutil.which("g++") or shutil.which("c++")
    if cxx is None:
        print("pin_cpp: no C++ compiler; skipped")
        return None
    return pin, prefix, inc, cxx


def build(robots, verbose: bool = True):
    """Write models.hpp (when its text changes) and compile pin_bench (when anything changed); returns the
    binary's path, or None when skipped."""
    tc = _toolchain(verbose)
    if tc is None:
        return None
    pin, prefix, inc, cxx = tc
    wanted = list(dict.fromkeys(DEFAULT_ROBOTS + list(robots)))
    text = models_hpp(pin, wanted)
    hpp = HERE / "models.hpp"
    if not hpp.exists() or hpp.read_text() != text:
        hpp.write_text(text)
    native = os.environ.get("SYMGEN_MARCH_NATIVE") == "1"     # same opt-in as symgen's own modules
    exe = HERE / ("pin_bench_native" if native else "pin_bench")
    cmd = [cxx, "-O3", *(["-march=native"] if native else []), "-DNDEBUG", "-std=c++17", "-DBOOST_MPL_CFG_NO_PREPROCESSED_HEADERS",
           "-DBOOST_MPL_LIMIT_LIST_SIZE=30", "-DBOOST_MPL_LIMIT_VECTOR_SIZE=30", "-DBOOST_FUSION_INVOKE_MAX_ARITY=12",
           f"-I{inc}", f"-I{inc / 'eigen3'}", str(HERE / "pin_bench.cpp"), "-o", str(exe), f"-L{prefix / 'lib'}",
           "-lpinocchio_default", f"-Wl,-rpath,{prefix / 'lib'}"]
    key = hashlib.sha256("\0".join([*cmd, pin.__version__, text, (HERE / "pin_bench.cpp").read_text()]).encode())
    stamp = exe.with_suffix(".stamp")
    if exe.exists() and stamp.exists() and stamp.read_text() == key.hexdigest():
        if verbose:
            print(f"pin_cpp: reusing {exe.name} (models.hpp, pin_bench.cpp and the command are unchanged)", flush=True)
        return exe
    if verbose:
        print("pin_cpp: compiling Pinocchio's C++ benchmark (about 3 minutes)...", flush=True)
    stamp.unlink(missing_ok=True)
    subprocess.run(cmd, check=True)
    stamp.write_text(key.hexdigest())
    return exe


def run(robots=None, n: int = 10000, rounds: int = 7, verbose: bool = True, copies: int = COPIES) -> dict:
    """Time Pinocchio's C++ aba / rnea / crba on every robot: {robot: {"aba", "rnea", "crba", "*_min"}} in µs
    per call ({} when skipped)."""
    robots = list(robots or DEFAULT_ROBOTS)
    exe = build(robots, verbose)
    if exe is None:
        return {}
    results = {}
    for spec in robots:
        results[spec] = r = run_copies([exe, spec, n, rounds], copies, what="pin_cpp")
        if verbose:
            print(f"pin_cpp {spec:22} " + "  ".join(f"{k} {r[k]:7.3f}" for k in ALGORITHMS) + "  us/call", flush=True)
    return results


def main(argv=None) -> int:
    args = robot_parser(__doc__, n_help="random states (default 10000)").parse_args(argv)
    return report(run(args.robots, args.n, args.rounds, copies=args.copies), args.json)


if __name__ == "__main__":
    sys.exit(main())
