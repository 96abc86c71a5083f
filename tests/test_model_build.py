"""`python -m symgen build [MODEL]`: the bundled example cold and warm (times printed, not asserted), the
generated package imports without sympy/jinja2, --floating-base, warnings on stderr."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np

from conftest import TIMINGS

ROOT = Path(__file__).resolve().parents[1]


def _run(args, cwd, env):
    return subprocess.run([sys.executable, "-m", "symgen", *args], cwd=cwd, env=env, capture_output=True, text=True)


def test_build_bundled_example_cold_warm_and_import(tmp_path):
    env = dict(os.environ, SYMGEN_CACHE_DIR=str(tmp_path / "cache"))
    times = []
    for _ in range(2):
        t = time.perf_counter()
        out = _run(["build", "--out", str(tmp_path / "generated")], tmp_path, env)
        times.append(time.perf_counter() - t)
        assert out.returncode == 0, out.stderr
    TIMINGS["python -m symgen build (arm7.urdf), cold cache"] = times[0]
    TIMINGS["python -m symgen build (arm7.urdf), warm cache"] = times[1]
    for stage in ("load", "generate", "compile", "install", "built"):
        assert stage in out.stdout
    assert "(cache hit)" in out.stdout
    pkg = tmp_path / "generated" / "arm7"
    assert (pkg / "arm7.c").exists() and (pkg / "manifest.json").exists() and (pkg / "__init__.py").exists()
    script = textwrap.dedent("""
        import sys
        sys.modules["sympy"] = None; sys.modules["jinja2"] = None   # a built model must load without them
        import numpy as np
        import generated.arm7 as m
        q = np.zeros(m.model.nq)
        print(m.frame_pose(q, "tool")[2, 3], m.model.nu, len(m.hinge_names))
    """)
    out = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    z, nu, nh = out.stdout.split()
    import pinocchio as pin  # the tool height at q = 0 from the oracle

    pm = pin.buildModelFromUrdf(str(ROOT / "examples" / "models" / "arm7.urdf"))
    pd = pm.createData()
    pin.framesForwardKinematics(pm, pd, pin.neutral(pm))
    assert abs(float(z) - pd.oMf[pm.getFrameId("tool")].translation[2]) < 1e-12
    assert int(nu) == 7 and int(nh) == 10


def test_floating_base_flag_and_warnings(tmp_path):
    env = dict(os.environ, SYMGEN_CACHE_DIR=str(tmp_path / "cache"))
    urdf = (ROOT / "examples" / "models" / "arm7.urdf").read_text().replace(
        '<joint name="joint7" type="continuous">', '<joint name="joint7" type="continuous">\n<mimic joint="joint6"/>')
    (tmp_path / "arm_mimic.urdf").write_text(urdf)
    out = _run(["build", "arm_mimic.urdf", "--floating-base", "--out", "gen"], tmp_path, env)
    assert out.returncode == 0, out.stderr
    assert "nQ = 14, nU = 13" in out.stdout
    assert "warning:" in out.stderr and "<mimic> ignored" in out.stderr
