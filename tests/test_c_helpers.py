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
