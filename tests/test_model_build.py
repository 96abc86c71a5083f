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
    for stage in ("load", "derive", "emit", "render", "compile", "install"):  # progress: stderr
        assert f"\n{stage} " in "\n" + out.stderr
    assert "(cache hit)" in out.stderr and out.stdout.startswith("built arm7")
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
    """The session's cache (tests/conftest.py): the ignored <mimic> leaves the floating arm7 that other tests
    build (the model is named after the file), so its module is a cache hit; what is checked is the CLI's."""
    env = dict(os.environ)
    urdf = (ROOT / "examples" / "models" / "arm7.urdf").read_text().replace(
        '<joint name="joint7" type="continuous">', '<joint name="joint7" type="continuous">\n<mimic joint="joint6"/>')
    (tmp_path / "arm7.urdf").write_text(urdf)
    out = _run(["build", "arm7.urdf", "--floating-base", "--out", "gen"], tmp_path, env)
    assert out.returncode == 0, out.stderr
    assert "nQ = 14, nU = 13" in out.stdout
    assert "warning:" in out.stderr and "<mimic> ignored" in out.stderr


MAIN_C = r"""
#include <stdio.h>
#include "arm7.h"
int main(void)
{
    double q[7] = {0.3, -0.7, 1.1, 0.4, -1.3, 0.9, 2.0}, u[7] = {0.1, 0.2, -0.3, 0.4, -0.5, 0.6, -0.7};
    double p[3 + 7 + 6 * 10] = {0.0, 0.0, -9.81};   /* g, T = 0, no external forces */
    double udot[7], M[49];
    int i;
    if (sg_arm7_forward_dynamics(q, u, p, udot) != 0) return 1;
    sg_arm7_mass_matrix(q, u, p, M);
    for (i = 0; i < 7; ++i) printf("%.17g\n", udot[i]);
    for (i = 0; i < 49; ++i) printf("%.17g\n", M[i]);
    return 0;
}
"""


def test_generated_model_is_strict_c99_and_runs_without_python(tmp_path):
    """The model translation unit compiles with the strict flags (a full -c compile) and a plain C main()
    gets the same forward dynamics and mass matrix as the Python API.  The build uses the session's cache
    (tests/conftest.py), where arm7 is a hit: the package's files are the cached sources, as after any build."""
    import shutil

    import symgen
    from symgen.pipeline.compile import STRICT_FLAGS

    cc = shutil.which("gcc") or shutil.which("cc")
    env = dict(os.environ)
    out = _run(["build", "--out", str(tmp_path / "gen")], tmp_path, env)
    assert out.returncode == 0, out.stderr
    pkg = tmp_path / "gen" / "arm7"
    (pkg / "main.c").write_text(MAIN_C)
    b = subprocess.run([cc, *STRICT_FLAGS, "main.c", "arm7.c", "-o", "demo", "-lm"], cwd=pkg, capture_output=True,
                       text=True)
    assert b.returncode == 0 and b.stderr == "", b.stderr
    vals = np.array([float(x) for x in subprocess.run([str(pkg / "demo")], capture_output=True, text=True,
                                                      check=True).stdout.split()])
    mb = symgen.build(ROOT / "examples" / "models" / "arm7.urdf")
    q = np.array([0.3, -0.7, 1.1, 0.4, -1.3, 0.9, 2.0])
    u = np.array([0.1, 0.2, -0.3, 0.4, -0.5, 0.6, -0.7])
    np.testing.assert_allclose(vals[:7], mb.forward_dynamics(q, u, np.zeros(7)), rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(vals[7:].reshape(7, 7), mb.mass_matrix(q), rtol=1e-13, atol=1e-15)


def test_default_q_and_default_transform(tmp_path):
    """Per-hinge default Q (issue 25, item 4): ``q0:`` and ``default_transform:`` (Simbody setDefaultTransform)
    land in ``mb.default_q()``; a BUSHING's default Q is its X-Y-Z body-fixed Euler angles and translation
    (closed-form extraction from R = Rx(a) Ry(b) Rz(c)); a transform a PIN cannot reach is its least-squares fit,
    with a warning."""
    import yaml

    import symgen

    a, b, c, p = 0.3, -0.5, 1.1, [0.1, -0.2, 0.3]
    Rx = np.array([[1, 0, 0], [0, np.cos(a), -np.sin(a)], [0, np.sin(a), np.cos(a)]])
    Ry = np.array([[np.cos(b), 0, np.sin(b)], [0, 1, 0], [-np.sin(b), 0, np.cos(b)]])
    Rz = np.array([[np.cos(c), -np.sin(c), 0], [np.sin(c), np.cos(c), 0], [0, 0, 1]])
    R = Rx @ Ry @ Rz
    quat = [float(x) for x in _quat_xyzw(R)]
    inertia = {"mass": 1.0, "inertia": [0.01, 0.02, 0.03, 0, 0, 0]}
    doc = {"name": "defaults", "bodies": [
        {"name": "a", "parent": "newtonian", **inertia, "hinge": {"type": "PIN", "q0": [0.7]}},
        {"name": "b", "parent": "a", **inertia, "hinge": {"type": "BALL_QUAT", "q0": [0, 0, 0.6, 0.8]}},
        {"name": "c", "parent": "b", **inertia,
         "hinge": {"type": "BUSHING", "default_transform": {"xyz": p, "quat": quat}}},
        {"name": "d", "parent": "c", **inertia, "hinge": {"type": "PIN", "name": "reach",
                                                          "default_transform": {"xyz": [0, 0, 0.2]}}}]}
    path = tmp_path / "defaults.yaml"
    path.write_text(yaml.safe_dump(doc))
    mb = symgen.build(path)
    q = mb.default_q()
    assert q[mb.q_slice("a")][0] == 0.7
    assert np.allclose(q[mb.q_slice("b")], [0, 0, 0.6, 0.8], atol=0, rtol=1e-15)
    # BUSHING Q = (qx, qy, qz, px, py, pz): the closed-form angles of R and the translation, 1e-9
    want = [np.arctan2(-R[1, 2], R[2, 2]), np.arcsin(R[0, 2]), np.arctan2(-R[0, 1], R[0, 0]), *p]
    assert np.allclose(q[mb.q_slice("c")], want, atol=1e-9, rtol=0)
    X = np.eye(4)
    X[:3, :3], X[:3, 3] = R, p
    assert np.allclose(mb.hinge_kernels("c").transform(q[mb.q_slice("c")]), X, atol=1e-10, rtol=0)
    assert any("hinge 'reach'" in w and "least-squares" in w for w in mb.warnings)
    assert np.array_equal(mb.neutral_q()[mb.q_slice("a")], [0.0])


def _quat_xyzw(R):
    """A rotation matrix as a unit quaternion (x, y, z, w) (Shepperd's method, w > 0 branch suffices here)."""
    w = np.sqrt(1.0 + np.trace(R)) / 2
    return np.array([(R[2, 1] - R[1, 2]) / (4 * w), (R[0, 2] - R[2, 0]) / (4 * w), (R[1, 0] - R[0, 1]) / (4 * w), w])
