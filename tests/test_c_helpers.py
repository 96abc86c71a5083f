"""The hand-written C helpers of the generated code are real C files (symgen/codegen/templates/helpers/*.c):
no template syntax, and each compiles on its own, with only <math.h> before it, under the strict flags every
generated model compiles with.  The helpers printed with model numbers stay templates (``*.c.jinja``)."""
from __future__ import annotations

import shutil
import subprocess

import pytest

from symgen.codegen.render import HELPER_NEEDS, helper_files
from symgen.paths import templates_dir

HELPERS = sorted((templates_dir() / "helpers").glob("*.c"))
STRICT = ["-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic", "-Wno-unused-function", "-fsyntax-only"]
#: what the model template defines before a helper that needs it
DEFINES = {"loops": "#define SG_LOOP_MAX_NC 4\n", "step_derivatives": "#define SG_STEP_MAX_HU 6\n"}


def test_the_plain_helpers_are_c_files():
    names = {f.name for f in HELPERS}
    assert {"atbi_finish.c", "loops.c", "model_kinematics.c", "sincos.c", "sincos_n.c"} <= names
    for f in HELPERS:
        text = f.read_text()
        assert not any(tok in text for tok in ("{{", "{%", "{#")), f"{f.name} holds template syntax"
    # the printer picks the C file where there is one, and a helper's needs come first, once
    assert helper_files(["sincos_n", "sincos"]) == ["helpers/sincos.c", "helpers/sincos_n.c"]
    assert helper_files(["stumpff"]) == ["helpers/stumpff.c.jinja"]
    assert HELPER_NEEDS["sincos_n"] == ("sincos",)


@pytest.mark.skipif(shutil.which("cc") is None, reason="no C compiler")
@pytest.mark.parametrize("path", HELPERS, ids=lambda p: p.name)
def test_each_helper_compiles_alone(path, tmp_path):
    name = path.name[:-2]
    text = "#include <math.h>\n" + DEFINES.get(name, "")
    for need in HELPER_NEEDS.get(name, ()):
        text += (templates_dir() / "helpers" / f"{need}.c").read_text()
    (tmp_path / "unit.c").write_text(text + path.read_text())
    out = subprocess.run(["cc", *STRICT, str(tmp_path / "unit.c")], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr


@pytest.mark.skipif(shutil.which("cc") is None, reason="no C compiler")
def test_psd_solve_against_numpy(tmp_path):
    """sg_psd_solve (helpers/loops.c, the TA method's solve of Lambda lambda = rhs) against numpy: a full-rank
    18 x 18 SPD system (numpy.linalg.solve, 1e-10 relative), and rank-deficient PSD systems with a consistent
    right-hand side (rank = numpy's matrix_rank, A x = b to 1e-10, the rows beyond the rank get x = 0 so that
    x is a basic solution); the strict upper triangle is NaN, which the solve must not read."""
    import numpy as np

    main = r"""
#include <stdio.h>
int main(void) {
    int n, i, piv[SG_LOOP_MAX_NC];
    double A[SG_LOOP_MAX_NC * SG_LOOP_MAX_NC], b[SG_LOOP_MAX_NC], x[SG_LOOP_MAX_NC];
    while (scanf("%d", &n) == 1) {
        for (i = 0; i < n * n; ++i) if (scanf("%lf", &A[i]) != 1) return 1;
        for (i = 0; i < n; ++i) if (scanf("%lf", &b[i]) != 1) return 1;
        printf("%d", sg_psd_solve(n, A, b, 1e-10, x, piv));
        for (i = 0; i < n; ++i) printf(" %.17g", x[i]);
        printf("\n");
    }
    return 0;
}
"""
    src = "#include <math.h>\n#define SG_LOOP_MAX_NC 32\n" + (templates_dir() / "helpers" / "loops.c").read_text() + main
    (tmp_path / "psd.c").write_text(src)
    subprocess.run(["cc", *STRICT[:-2], "-Wno-unused-function", "-O2", str(tmp_path / "psd.c"), "-o",
                    str(tmp_path / "psd"), "-lm"], check=True)
    rng = np.random.default_rng(5)
    cases = []
    for n, r in ((18, 18), (9, 5), (5, 2), (6, 6), (1, 1)):
        B = rng.normal(size=(n, r))
        A = B @ B.T + (np.eye(n) if r == n else 0.0)
        b = A @ rng.normal(size=n)                      # consistent
        cases.append((A, b))
    text = ""
    for A, b in cases:
        An = A.copy()
        An[np.triu_indices(len(b), 1)] = np.nan
        text += f"{len(b)}\n" + " ".join(map(repr, An.ravel().tolist())) + "\n" + " ".join(map(repr, b.tolist())) + "\n"
    out = subprocess.run([str(tmp_path / "psd")], input=text.replace("nan", "NAN"), capture_output=True, text=True,
                         check=True).stdout.split("\n")
    for (A, b), line in zip(cases, out):
        vals = line.split()
        rank, x = int(vals[0]), np.array([float(v) for v in vals[1:]])
        n = len(b)
        assert rank == np.linalg.matrix_rank(A), (n, rank)
        assert np.max(np.abs(A @ x - b)) <= 1e-10 * max(1.0, np.max(np.abs(b))), (n, A @ x - b)
        if rank == n:
            assert np.max(np.abs(x - np.linalg.solve(A, b))) <= 1e-10 * max(1.0, np.max(np.abs(x)))
        else:
            assert np.count_nonzero(x) <= rank                # a basic solution: the redundant rows get 0
