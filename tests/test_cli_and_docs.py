"""The command line, the README's generated table, and LaTeX display of every derived kernel."""
from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import sympy as sp

import symgen
import symgen.cli
import symgen.pipeline.sources
from helpers import CASES, case_id, get_hinge
from symgen.hinges.derive import KERNELS
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


README_COMMANDS = ["pip install -e . && python -m symgen build", 'pip install -e ".[test]" && python -m pytest']


def test_readme_has_the_two_commands_and_ci_runs_both_in_a_fresh_venv():
    """The README's set-up section has exactly two commands; .ci/run runs both, verbatim and in that order, after
    creating and activating a fresh virtual environment (so a missing install step fails CI)."""
    text = (ROOT / "README.md").read_text()
    setup = text[text.index("## Set up"):]
    setup = setup[:setup.index("\n## ", 4)]
    assert re.findall(r"```bash\n(.*?)\n```", setup, re.S) == README_COMMANDS
    run_lines = [ln.strip() for ln in (ROOT / ".ci" / "run").read_text().splitlines()
                 if ln.strip() and not ln.lstrip().startswith("#")]
    venv = next(i for i, ln in enumerate(run_lines) if "-m venv --clear" in ln)
    activate = next(i for i, ln in enumerate(run_lines) if ln.startswith(". .ci/venv/bin/activate"))
    first = next(i for i, ln in enumerate(run_lines) if ln.startswith(README_COMMANDS[0]))
    second = next(i for i, ln in enumerate(run_lines) if ln.startswith(README_COMMANDS[1]))
    assert venv < activate < first < second
    assert ".ci/venv/" in (ROOT / ".gitignore").read_text().splitlines()


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


def one_paragraph_error(out, status):
    """The CLI's error contract: the status, one paragraph on stderr starting 'symgen: error:', no traceback."""
    assert out.returncode == status, (out.returncode, out.stderr)
    assert "Traceback" not in out.stderr and out.stderr.count("symgen: error:") == 1, out.stderr
    err = out.stderr[out.stderr.index("symgen: error:"):].strip()  # after any progress lines of a build
    assert out.stderr.startswith("symgen: error:") or out.stderr[out.stderr.index("symgen: error:") - 1] == "\n"
    assert "\n\n" not in err, err
    return err


@pytest.mark.parametrize("args,words", [
    (("show", "PIN", "--axis", "1", "1", "0"), ["PIN", "axis", "not unit"]),
    (("show", "WOBBLE"), ["unknown hinge type", "WOBBLE"]),
    (("show", "PIN", "--kernel", "teleport"), ["unknown kernel"]),
    (("show", "PIN", "--c", "--kernel", "teleport"), ["no generated kernel", "teleport"]),
    (("build", "whatever"), ["don't know how to build", "whatever", ".urdf"]),
    (("build", "x.urdf", "--armature", "joint1"), ["--armature", "HINGE=VALUE"]),
])
def test_cli_usage_errors_exit_2(args, words):
    err = one_paragraph_error(run(*args), 2)
    assert err.count("\n") == 0
    for w in words:
        assert w in err


def test_cli_argparse_usage_exits_2():
    for args in [("frobnicate",), ("build", "--no-such-flag"), ("bench",), ("info",), ("build", "-q", "-v")]:
        out = run(*args)
        assert out.returncode == 2 and "usage: python -m symgen" in out.stderr, args


@pytest.mark.parametrize("cmd", ["build", "info", "bench"])
def test_cli_bad_model_path_exits_1(cmd):
    err = one_paragraph_error(run(cmd, "no/such/model.urdf"), 1)
    assert "no/such/model.urdf" in err and "no such file" in err


@pytest.mark.parametrize("name,text,words", [
    ("broken.yaml", "name: x\nbodies:\n  - name: a\n    mass: [1\n", ["broken.yaml", "malformed YAML", "line 5"]),
    ("broken.json", '{"name": "x", "bodies": [}', ["broken.json", "malformed JSON", "line 1, column 26"]),
    ("orphan.yaml", "name: x\nbodies:\n  - {name: a, parent: nowhere, mass: 1, com: [0, 0, 0],\n"
                    "     inertia: [1, 1, 1, 0, 0, 0], hinge: {type: PIN}}\n", ["orphan.yaml", "'a'", "nowhere"]),
    ("bad_hinge.yaml", "name: x\nbodies:\n  - {name: a, parent: newtonian, mass: 1, com: [0, 0, 0],\n"
                       "     inertia: [1, 1, 1, 0, 0, 0], hinge: {type: WOBBLE}}\n", ["bad_hinge.yaml", "WOBBLE"]),
])
@pytest.mark.parametrize("cmd", ["build", "info"])
def test_cli_malformed_model_exits_1(tmp_path, cmd, name, text, words):
    (tmp_path / name).write_text(text)
    out = subprocess.run([sys.executable, "-m", "symgen", cmd, name, "--out", "gen"] if cmd == "build" else
                         [sys.executable, "-m", "symgen", cmd, name], capture_output=True, text=True, cwd=tmp_path)
    err = one_paragraph_error(out, 1)
    for w in words:
        assert w in err, (w, err)
    assert not (tmp_path / "gen").exists()  # nothing half-written


def test_cli_compile_failure_exits_1(tmp_path):
    """A compiler that fails (a script standing in for $CC) with an empty cache: one paragraph naming the file
    that did not compile, the compiler's own message and what to try; no package written."""
    fake = tmp_path / "fakecc"
    fake.write_text(f"#!{sys.executable}\nimport sys\nsys.stderr.write('fakecc: error: refusing to compile\\n')\n"
                    "sys.exit(1)\n")
    fake.chmod(0o755)
    env = {**os.environ, "CC": str(fake), "SYMGEN_CACHE_DIR": str(tmp_path / "cache")}
    out = subprocess.run([sys.executable, "-m", "symgen", "build", str(ROOT / "examples/models/double_pendulum.yaml"),
                          "--out", str(tmp_path / "gen")], capture_output=True, text=True, env=env, cwd=tmp_path)
    err = one_paragraph_error(out, 1)
    assert "double_pendulum.c does not compile" in err and "fakecc: error: refusing to compile" in err
    assert "CC" in err
    assert not (tmp_path / "gen").exists()


def test_cli_build_reports_every_stage(tmp_path):
    """Per-stage lines with times on stderr (cold: work done; warm: cache hits), the result on stdout; -q keeps
    only the result, -v adds one line per step."""
    model = str(ROOT / "examples/models/double_pendulum.yaml")
    cmd = [sys.executable, "-m", "symgen", "build", model, "--out", str(tmp_path / "gen")]
    env = {**os.environ, "SYMGEN_CACHE_DIR": str(tmp_path / "cache")}
    cold = subprocess.run(cmd, capture_output=True, text=True, env=env)
    warm = subprocess.run(cmd, capture_output=True, text=True, env=env)
    for out in (cold, warm):
        assert out.returncode == 0, out.stderr
        lines = out.stderr.splitlines()
        assert [ln.split()[0] for ln in lines] == ["load", "derive", "emit", "render", "compile", "install"]
        for ln in lines:
            assert re.search(r" \d+\.\d\d s$", ln), ln
        assert out.stdout.startswith("built double_pendulum: nQ = 2, nU = 2, 2 bodies")
    assert "1 hinge spec " in cold.stderr and "cache hit" not in cold.stderr
    assert "derive    cached (model sources)" in warm.stderr and "(cache hit)" in warm.stderr
    assert (tmp_path / "gen" / "double_pendulum" / "manifest.json").exists()
    quiet = subprocess.run(cmd + ["-q"], capture_output=True, text=True, env=env)
    assert quiet.returncode == 0 and quiet.stderr == "" and quiet.stdout.startswith("built double_pendulum")
    verbose = subprocess.run(cmd + ["-v"], capture_output=True, text=True, env=env)
    assert verbose.returncode == 0 and "  compile  double_pendulum_" in verbose.stderr
    assert "  load     " in verbose.stderr


def _depth_in_file(bodies: list) -> dict:
    parent = {b["name"]: b["parent"] for b in bodies}
    depth = {}
    for name in parent:
        d, p = 0, name
        while p != "newtonian":
            d, p = d + 1, parent[p]
        depth[name] = d
    return depth


@pytest.mark.parametrize("model,nq,nu", [("spacecraft.yaml", 7 + 3 + 4 + 1 + 6 + 1, 6 + 3 + 3 + 1 + 6 + 1),
                                         ("fourbar.yaml", 3, 3), ("delta_robot.yaml", None, None)])
def test_cli_info_prints_the_tree(model, nq, nu):
    """Every body of the YAML at its depth below newtonian (read with pyyaml, not symgen), sizes from the hinge
    types' definitions (FULL6DOF 7/6, GIMBAL 3/3, BALL_QUAT 4/3, SLIDER and HELICAL 1/1, BUSHING 6/6, PIN 1/1),
    every loop with its cut hinge and rows (6 - nU of the cut hinge: PIN 5, BALL 3)."""
    import yaml

    data = yaml.safe_load((ROOT / "examples" / "models" / model).read_text())
    out = run("info", f"examples/models/{model}")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    if nq is not None:
        assert f"nQ = {nq}, nU = {nu}" in lines[0]
    assert lines[1] == "newtonian"
    depth = _depth_in_file(data["bodies"])
    for b in data["bodies"]:
        line = next(ln for ln in lines if re.search(rf"[├└]── {re.escape(b['name'])}  hinge ", ln))
        assert line.index(b["name"]) == 4 * depth[b["name"]], line
        assert f" {b['hinge']['type']}(" in line
        for f in b.get("frames", []):
            assert f["name"] in line
    for lp in data.get("loops", []):
        hinge_type = lp["hinge"] if isinstance(lp["hinge"], str) else lp["hinge"]["type"]
        rows = {"PIN": 5, "BALL": 3}[hinge_type]
        assert any(ln.startswith(f"loop '{lp['name']}': {lp['source']} -> {lp['target']}, cut hinge {hinge_type}(")
                   and ln.endswith(f"({rows} constraint rows)") for ln in lines), lp


def test_cli_show_c_of_one_kernel():
    """`show GIMBAL --c --kernel coord_map` prints that one function (not its batch twin) with the operation
    count of the hinge's kernel table."""
    out = run("show", "GIMBAL", "--c", "--kernel", "coord_map")
    assert out.returncode == 0, out.stderr
    text = out.stdout
    assert text.count("sg_gimbal_coord_map(") == 1 and "_batch" not in text
    ops = int(re.search(r"coord_map: (\d+) operations", text).group(1))
    assert ops == symgen.pipeline.sources.hinge_sources(symgen.hinge("GIMBAL"))[1]["kernels"]["coord_map"]["flops"]
    assert text.rstrip().endswith("}")


@pytest.mark.parametrize("model,extra,pin_column", [("double_pendulum.yaml", ["--no-pinocchio"], False),
                                                    ("arm7.urdf", [], True)])
def test_cli_bench(model, extra, pin_column):
    out = run("bench", f"examples/models/{model}", "--n", "20", "--calls", "20", "-q", *extra)
    assert out.returncode == 0, out.stderr
    rows = [ln for ln in out.stdout.splitlines()
            if ln.startswith(("forward dynamics", "inverse dynamics", "mass matrix"))]
    assert len(rows) == 3
    for ln in rows:
        numbers = [float(x) for x in re.findall(r"\d+\.\d+", ln)]
        assert len(numbers) == (3 if pin_column else 2) and all(x > 0 for x in numbers), ln
    assert ("Pinocchio Python call" in out.stdout) == pin_column


def _subcommands():
    parser = symgen.cli.make_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return sub.choices


COMMANDS = ("build", "info", "show", "hinges", "bench", "sweep", "docs")


@pytest.mark.parametrize("cmd", [(), *[(c,) for c in COMMANDS]])
def test_help(cmd):
    """--help of the program and of every command (the list is checked against the parser's own): status 0,
    the usage line, every option the parser defines, and the exit statuses; the program's --help names every
    command."""
    assert set(_subcommands()) == set(COMMANDS)
    out = run(*cmd, "--help")
    assert out.returncode == 0 and out.stdout.startswith("usage: python -m symgen")
    parser = _subcommands()[cmd[0]] if cmd else symgen.cli.make_parser()
    for action in parser._actions:
        for flag in action.option_strings:
            assert flag in out.stdout, flag
    if not cmd:
        listed = {line.split()[0] for line in out.stdout.splitlines() if line.startswith("    ") and line.split()}
        assert set(COMMANDS) <= listed, set(COMMANDS) - listed
    assert "exit status: 0 success, 1 model or build error, 2 usage error." in " ".join(out.stdout.split())


def test_progress_bars_on_a_cold_build(tmp_path, monkeypatch):
    """A cold build shows a bar over the hinge kernels and one over the compiler runs (tqdm, on a terminal);
    the stage times of the report add up to the wall time of the build."""
    import time

    from symgen.hinges import derive
    from symgen.progress import listening

    monkeypatch.setenv("SYMGEN_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    derive.clear_memory_cache()
    ui = symgen.cli.UI()
    report = ui.report()
    bars = []

    def make_bar(stage, total, label):
        bar = ui._bar(stage, total, label)
        bars.append((stage, total, type(bar).__module__))
        return bar
    report.make_bar = make_bar
    t0 = time.perf_counter()
    with listening(report):
        symgen.build(ROOT / "examples/models/double_pendulum.yaml")
    wall = time.perf_counter() - t0
    derive.clear_memory_cache()
    assert ("derive", 2, "tqdm.std") in bars
    assert any(stage == "compile" and total >= 2 and mod == "tqdm.std" for stage, total, mod in bars)
    total = sum(s.seconds for s in report.stages.values())
    assert 0.9 * wall < total <= wall, (total, wall)
    assert report.stages["compile"].items == 1 and report.stages["compile"].hits == 0


def test_cli_build_reports_a_singular_hinge_as_a_warning(tmp_path):
    """build_model's stages reach the CLI as data: a singular-hinge warning is printed as a warning (it once
    crashed the stage callback), and the build still succeeds."""
    import subprocess
    import sys

    (tmp_path / "massless.yaml").write_text(
        "name: massless\nbodies:\n"
        "  - {name: a, parent: newtonian, hinge: {type: PIN}, mass: 1.0, inertia: [0.1, 0.1, 0.1, 0, 0, 0]}\n"
        "  - {name: b, parent: a, hinge: {type: PIN}, mass: 0.0, inertia: [0, 0, 0, 0, 0, 0]}\n")
    out = subprocess.run([sys.executable, "-m", "symgen", "build", str(tmp_path / "massless.yaml"), "--out",
                          str(tmp_path / "gen")], capture_output=True, text=True, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert "warning" in out.stderr and "'b'" in out.stderr, out.stderr
