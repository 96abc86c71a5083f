"""Pinocchio's own C++ (aba, rnea, crba), built from the `pin` wheel's headers, on the benchmark robots.

    pip install cmeel-eigen            # Eigen headers (the pin wheel ships Pinocchio's and Boost's, not Eigen's)
    python benchmarks/pin_cpp/run.py   # writes models.hpp, compiles pin_bench (about 3 minutes), runs it

The wheel has neither the URDF parser's nor the serialization headers, so this script loads each URDF with
Pinocchio in Python and writes C++ that rebuilds the same model through addJoint / appendBodyToJoint.
Prints the median µs per call over 7 rounds of 10^4 random states.  Skips cleanly when a piece is missing.
"""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROBOTS = [("arm6", False), ("arm7", False), ("quadruped", True), ("humanoid", True)]
SUPPORTED = {"JointModelRX", "JointModelRY", "JointModelRZ", "JointModelRUBX", "JointModelRUBY", "JointModelRUBZ",
             "JointModelPX", "JointModelPY", "JointModelPZ", "JointModelFreeFlyer"}


def models_hpp(pin) -> str:
    out = []
    for name, floating in ROBOTS:
        path = HERE.parents[1] / "examples" / "models" / f"{name}.urdf"
        m = pin.buildModelFromUrdf(str(path), pin.JointModelFreeFlyer()) if floating else pin.buildModelFromUrdf(str(path))
        L = [f"static void build_{name}(pinocchio::Model &model) {{",
             "  using namespace pinocchio; Eigen::Matrix3d R, I; Eigen::Vector3d p, c; JointIndex j;"]
        for jid in range(1, m.njoints):
            sn = m.joints[jid].shortname()
            if sn not in SUPPORTED:
                raise SystemExit(f"pin_cpp: joint type {sn} of {name} is not handled by this generator")
            M, In = m.jointPlacements[jid], m.inertias[jid]
            L.append("  R << " + ", ".join(f"{x:.17g}" for x in M.rotation.ravel()) + "; p << "
                     + ", ".join(f"{x:.17g}" for x in M.translation) + ";")
            L.append(f'  j = model.addJoint({m.parents[jid]}, {sn}(), SE3(R, p), "{m.names[jid]}");')
            L.append("  c << " + ", ".join(f"{x:.17g}" for x in In.lever) + "; I << "
                     + ", ".join(f"{x:.17g}" for x in In.inertia.ravel()) + ";")
            L.append(f"  model.appendBodyToJoint(j, Inertia({In.mass:.17g}, c, I), SE3::Identity());")
        out.append("\n".join(L + ["}"]))
    return "\n\n".join(out) + "\n"


def main() -> int:
    try:
        import pinocchio as pin
    except ImportError:
        print("pin_cpp: pinocchio is not installed; skipped")
        return 0
    prefix = Path(pin.__file__).resolve().parents[4]  # .../cmeel.prefix
    inc = prefix / "include"
    if not (inc / "pinocchio").exists() or not (inc / "eigen3" / "Eigen").exists():
        print(f"pin_cpp: Pinocchio or Eigen headers not under {inc} (pip install cmeel-eigen); skipped")
        return 0
    cxx = shutil.which("g++") or shutil.which("c++")
    if cxx is None:
        print("pin_cpp: no C++ compiler; skipped")
        return 0
    (HERE / "models.hpp").write_text(models_hpp(pin))
    exe = HERE / "pin_bench"
    cmd = [cxx, "-O3", "-DNDEBUG", "-std=c++17", "-DBOOST_MPL_CFG_NO_PREPROCESSED_HEADERS",
           "-DBOOST_MPL_LIMIT_LIST_SIZE=30", "-DBOOST_MPL_LIMIT_VECTOR_SIZE=30", "-DBOOST_FUSION_INVOKE_MAX_ARITY=12",
           f"-I{inc}", f"-I{inc / 'eigen3'}", str(HERE / "pin_bench.cpp"), "-o", str(exe), f"-L{prefix / 'lib'}",
           "-lpinocchio_default", f"-Wl,-rpath,{prefix / 'lib'}"]
    print("compiling Pinocchio's C++ benchmark (about 3 minutes)...", flush=True)
    subprocess.run(cmd, check=True)
    for name, _ in ROBOTS:
        out = subprocess.run([str(exe), name], capture_output=True, text=True, check=True).stdout
        print(name, " ".join(f"{k}={v} us" for k, v in (line.split() for line in out.splitlines())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
