"""The command line, the README's generated table, and LaTeX display of every derived kernel."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import sympy as sp

import symgen
from helpers import CASES, case_id, get_hinge
from symgen.derive import KERNELS
from symgen.hinges import hinge_table_markdown

ROOT = Path(__file__).resolve().parents[1]


def run(*args):
    return subprocess.run([sys.executable, "-m", "symgen", *args], capture_output=True, text=True, cwd=ROOT)


def test_readme_table_is_generated_from_the_registry():
    text = (ROOT / "README.md").read_text()
    begin, end = "<!-- hinge-table:begin -->\n", "\n<!-- hinge-table:end -->"
    assert text[text.index(begin) + len(begin):text.index(end)] == hinge_table_markdown()
    for name in symgen.HINGE_TYPES:
        assert f"| {name} |" in text


def test_readme_has_the_two_commands_and_ci_runs_the_second():
    text = (ROOT / "README.md").read_text()
    assert "pip install -e . && python -m symgen build" in text
    assert 'pip install -e ".[test]" && python -m pytest' in text
    assert 'pip install -e ".[test]" && python -m pytest' in (ROOT / ".ci" / "run").read_text()


@pytest.mark.parametrize("case", CASES, ids=[case_id(c) for c in CASES])
def test_every_kernel_renders_as_latex(case):
    h = get_hinge(case)
    for k in KERNELS:
        tex = getattr(h, k)._repr_latex_()
        assert tex.startswith("$") and "stumpff" not in tex
    assert "X_{op}" in h._repr_latex_()


def test_cli_hinges_and_show():
    out = run("hinges")
    assert out.returncode == 0
    for name in symgen.HINGE_TYPES:
        assert name in out.stdout
    out = run("show", "GIMBAL", "--kernel", "coord_map")
    assert out.returncode == 0 and "cos(q₁)" in out.stdout
    out = run("show", "HELICAL", "--axis", "0", "1", "0", "--pitch", "0.2", "--latex", "--kernel", "transform")
    assert out.returncode == 0 and r"0.2 q_{0}" in out.stdout
    out = run("show", "CUSTOM", "--subhinges", "LINEAR3", "SPHERICAL", "--kernel", "qdot_map")
    assert out.returncode == 0 and "c₄⎝q₃" in out.stdout and "stumpff" not in out.stdout


@pytest.mark.parametrize("args,words", [
    (("show", "PIN", "--axis", "1", "1", "0"), ["PIN", "axis", "not unit"]),
    (("show", "WOBBLE"), ["unknown hinge type", "WOBBLE"]),
    (("show", "PIN", "--kernel", "teleport"), ["unknown kernel"]),
    (("build", "no/such/model.urdf"), ["no/such/model.urdf", "no such file"]),
    (("build", "whatever"), ["don't know how to build"]),
])
def test_cli_errors_are_one_line(args, words):
    out = run(*args)
    assert out.returncode == 2
    assert "Traceback" not in out.stderr
    assert out.stderr.startswith("symgen: error:") and out.stderr.count("\n") == 1
    for w in words:
        assert w in out.stderr


@pytest.mark.parametrize("cmd", [(), ("hinges",), ("show",), ("build",)])
def test_help(cmd):
    out = run(*cmd, "--help")
    assert out.returncode == 0 and "usage: python -m symgen" in out.stdout
