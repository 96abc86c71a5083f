"""examples/c: the generated C of arm7 shipped without Python.  The example program (examples/c/arm7_fd.c,
built by its Makefile, or by the plain cc line where there is no make) compiles with the strict flags
against a freshly built generated/arm7/, links only libm, checks its own forward dynamics with two
identities in C, and prints accelerations that agree with Pinocchio's ``aba``."""
from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import time
from pathlib import Path

import numpy as np
import pytest

import symgen
from conftest import TIMINGS

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "c"
URDF = ROOT / "examples" / "models" / "arm7.urdf"
STRICT = ["-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic"]
CC = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")

pytestmark = pytest.mark.skipif(CC is None, reason="no C compiler")

#: the program's built-in state (examples/c/arm7_fd.c)
DEFAULT_STATE = ([0.3, -0.7, 1.1, 0.4, -1.3, 0.9, 2.0], [0.1, 0.2, -0.3, 0.4, -0.5, 0.6, -0.7],
                 [1.0, -2.0, 0.5, 3.0, -0.25, 0.75, -1.5])


class Program:
    def __init__(self, mb, exe, command, build):
        self.mb, self.exe, self.command, self.build = mb, exe, command, build

    def run(self, *state):
        args = [repr(float(x)) for part in state for x in part]
        # an empty environment and a directory outside the repository: nothing of Python's is found
        return subprocess.run([str(self.exe), *args], capture_output=True, text=True, env={},
                              cwd=self.exe.parent, timeout=60)


def parse(stdout):
    lines = {ln.split(":")[0] if ":" in ln else ln.split()[0]: ln for ln in stdout.splitlines() if ln.strip()}
    udot = np.array([float(x) for x in lines["udot"].split()[1:]])
    res = [float(lines[k].split(":")[1]) for k in ("residual ID(q, u, udot) - tau",
                                                   "residual M udot + ID(q, u, 0) - tau")]
    return udot, res


@pytest.fixture(scope="module")
def program(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("shipped_c")
    mb = symgen.build(URDF, out=tmp)                 # writes tmp/arm7/ as `python -m symgen build` does
    gen = tmp / "arm7"
    src = tmp / "c"                                  # a copy of the example, as a user would take it
    src.mkdir()
    for f in ("arm7_fd.c", "Makefile"):
        shutil.copy2(EXAMPLE / f, src / f)
    exe = tmp / "arm7_fd"
    make = shutil.which("make")
    env = {k: v for k, v in os.environ.items() if k not in ("CFLAGS", "LDFLAGS", "LDLIBS", "MAKEFLAGS", "MFLAGS")}
    if make:
        cmd = [make, "-C", str(src), f"GENERATED={gen}", f"OUT={exe}", f"CC={CC}"]
    else:
        cmd = [CC, *STRICT, "-O2", f"-I{gen}", "-o", str(exe), str(src / "arm7_fd.c"), str(gen / "arm7.c"), "-lm"]
    t = time.perf_counter()
    build = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    TIMINGS["examples/c/arm7_fd: compile and link against generated/arm7"] = time.perf_counter() - t
    assert build.returncode == 0, build.stdout + build.stderr
    # the compile-and-link line: the one the Makefile echoed, or ours
    command = next((shlex.split(ln) for ln in build.stdout.splitlines() if " -o " in ln), cmd) if make else cmd
    return Program(mb, exe, command, build)


def test_example_builds_strict_and_links_only_libm(program):
    cmd = program.command
    for flag in STRICT:
        assert flag in cmd, (flag, cmd)
    assert program.build.stderr == "", program.build.stderr          # no warnings either
    # linked against nothing but libm: no -l other than -lm, no -L, no library or object files; the
    # sources are the example and the model's one translation unit (it #includes its hinge kernels)
    assert [a for a in cmd if a.startswith("-l")] == ["-lm"], cmd
    assert not [a for a in cmd if a.startswith("-L") or a.endswith((".so", ".a", ".o"))], cmd
    assert sorted(Path(a).name for a in cmd if a.endswith(".c")) == ["arm7.c", "arm7_fd.c"], cmd
    data = program.exe.read_bytes()
    assert b"libpython" not in data and b"cffi" not in data


def test_example_runs_and_checks_itself(program):
    r = program.run()                                               # the built-in state
    assert r.returncode == 0, r.stdout + r.stderr
    udot, res = parse(r.stdout)
    assert udot.shape == (7,) and np.all(np.isfinite(udot))
    assert max(res) <= 1e-10 and r.stdout.rstrip().endswith("OK")
    print(f"\narm7_fd residuals at its built-in state: ID {res[0]:.2e}, M udot + C {res[1]:.2e}")
    # the same accelerations as the Python API on the same generated C (compiled with other flags)
    q, u, tau = (np.array(x) for x in DEFAULT_STATE)
    np.testing.assert_allclose(udot, program.mb.forward_dynamics(q, u, tau), rtol=1e-12, atol=1e-12)
    # a failed check exits non-zero (a NaN state fails both identities); bad input exits 2
    bad = program.run([float("nan")] + list(q[1:]), u, tau)
    assert bad.returncode == 1 and "FAIL" in bad.stdout, bad.stdout + bad.stderr
    assert program.run([1.0]).returncode == 2


def test_example_accelerations_match_pinocchio(program):
    pin = pytest.importorskip("pinocchio")
    from pin_maps import to_pin_q, u_map

    mb = program.mb
    pm = pin.buildModelFromUrdf(str(URDF))       # fixed base; joint7 is continuous: (cos, sin) in Pinocchio
    pm.gravity.linear = np.array(mb.gravity, dtype=float)
    pd = pm.createData()
    assert [pm.names[j] for j in range(1, pm.njoints)] == [f"joint{i}" for i in range(1, 8)]
    assert pm.nq == 8 and pm.nv == 7
    rng = np.random.default_rng(20261123)
    states = [tuple(np.array(x) for x in DEFAULT_STATE)]
    states += [(rng.uniform(-2.5, 2.5, 7), rng.normal(size=7), rng.normal(scale=5.0, size=7)) for _ in range(5)]
    worst, worst_res = 0.0, 0.0
    for q, u, tau in states:
        r = program.run(q, u, tau)
        assert r.returncode == 0, r.stdout + r.stderr
        udot, res = parse(r.stdout)
        T = u_map(mb, pm, q, floating=False)     # the identity here: symgen U order = Pinocchio v order
        expected = T @ pin.aba(pm, pd, to_pin_q(mb, pm, q), np.linalg.solve(T, u), T.T @ tau)
        err = float(np.max(np.abs(udot - expected)) / max(1.0, float(np.max(np.abs(expected)))))
        assert err <= 1e-10, (q, u, tau, udot, expected)
        worst, worst_res = max(worst, err), max(worst_res, *res)
    print(f"\narm7_fd vs pin.aba over {len(states)} states: largest relative difference {worst:.2e}; "
          f"largest residual printed by the program {worst_res:.2e}")


def test_header_defines_the_sizes(program, tmp_path):
    """arm7.h's size macros, printed by a C program, against the URDF read with ElementTree (7 movable joints,
    no quaternions: nQ = nU = 7; one body per link), the layout of p (g, T, f_ext per body) and the blocks of
    atbi_matrices (P, D, Dinv, G, tauper, psi, H in 36 each; z, z+, eps, nu in 6 each)."""
    import xml.etree.ElementTree as ET

    robot = ET.parse(URDF).getroot()
    n_links = len(robot.findall("link"))
    n_movable = sum(j.get("type") != "fixed" for j in robot.findall("joint"))
    gen = Path(program.mb.path).parent
    (tmp_path / "sizes.c").write_text(
        '#include <stdio.h>\n#include "arm7.h"\nint main(void) {\n'
        '    printf("%d %d %d %d %d %d\\n", SG_ARM7_NQ, SG_ARM7_NU, SG_ARM7_NB, SG_ARM7_P_SIZE,\n'
        '           SG_ARM7_KINEMATICS_BLOCK, SG_ARM7_MATS_BLOCK);\n    return 0;\n}\n')
    subprocess.run([CC, *STRICT, f"-I{gen}", "-o", str(tmp_path / "sizes"), str(tmp_path / "sizes.c")], check=True)
    nq, nu, nb, p_size, kin, mats = map(int, subprocess.run([str(tmp_path / "sizes")], capture_output=True,
                                                          text=True, check=True).stdout.split())
    assert (nq, nu, nb) == (n_movable, n_movable, n_links)
    assert p_size == 3 + nu + 6 * nb
    assert kin == 9 + 3 + 2 * 6 * nu and mats == 7 * 36 + 4 * 6     # 7 matrices, 4 filter vectors
