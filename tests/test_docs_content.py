"""The documentation's content: a short README, links that resolve, the Performance page's tables generated from
the benchmarks' result files, the history kept in CHANGELOG.md, and the Getting started page's code running."""
from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"

#: the content pages (the site's own pages, docs/index.md, docs/api/ and the generated hinge catalogue, are tested
#: with the site)
PAGES = ["getting-started.md", "cli.md", "performance.md", "changelog.md",
         "users/pinocchio.md", "users/mujoco.md", "users/simbody.md", "users/karana.md",
         "howto/urdf.md", "howto/mjcf.md", "howto/closed-chains.md", "howto/flexible.md", "howto/derivatives.md",
         "howto/rollouts-and-sweeps.md", "howto/shipping-c.md",
         "concepts/conventions.md", "concepts/frames-and-coordinates.md", "concepts/atbi.md",
         "concepts/architecture.md"]
FILES = [ROOT / "README.md", ROOT / "CHANGELOG.md"] + [DOCS / p for p in PAGES]


def prose(text: str) -> str:
    """Markdown without its fenced code blocks and inline code (where a link is not a link)."""
    text = re.sub(r"^(```|~~~).*?^\1\s*$", "", text, flags=re.S | re.M)
    return re.sub(r"`[^`\n]*`", "", text)


def test_readme_is_short():
    assert len((ROOT / "README.md").read_text().splitlines()) <= 200


def test_every_page_exists_with_one_title():
    for path in FILES[1:]:
        assert path.exists(), path
        titles = [ln for ln in prose(path.read_text()).splitlines() if ln.startswith("# ")]
        assert len(titles) == 1 and path.read_text().startswith("# "), (path, titles)


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_resolve(path):
    """Every relative link points at a file of the repository (so the pages work on GitHub as on the site);
    no page names a path of one machine."""
    text = path.read_text()
    for target in re.findall(r"\]\(([^)\s]+)\)", prose(text)):
        if re.match(r"[a-z]+:", target) or target.startswith("#"):
            continue
        file = (path.parent / target.split("#")[0]).resolve()
        assert file.is_file(), f"{path.relative_to(ROOT)}: link to {target}, which does not exist"
    for include in re.findall(r"```\{include\} (\S+)", text):
        assert (path.parent / include).is_file(), (path, include)
    assert not re.search(r"(?<![\w.])/(work|home|tmp|root|Users)/", text), f"{path}: an absolute path"


def _docs_tables():
    spec = importlib.util.spec_from_file_location("docs_tables", ROOT / "benchmarks" / "docs_tables.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_performance_tables_are_generated_from_the_result_files():
    """docs/performance.md's tables are what benchmarks/docs_tables.py makes of benchmarks/*_latest.md now."""
    dt = _docs_tables()
    page = (DOCS / "performance.md").read_text()
    assert dt.render(page) == page, "docs/performance.md is out of date: run python benchmarks/docs_tables.py"
    for result in sorted((ROOT / "benchmarks").glob("*_latest.md")):
        assert f"`benchmarks/{result.name}`" in page
        table_row = next(ln for ln in result.read_text().splitlines() if ln.startswith("| ") and "---" not in ln)
        assert dt.escape(table_row) in page


def test_changelog_holds_the_history():
    """The dated measurements that were the README's history, newest first."""
    text = (ROOT / "CHANGELOG.md").read_text()
    dates = re.findall(r"^## (\d{4}-\d{2}-\d{2})", text, re.M)
    assert dates == sorted(dates, reverse=True) and {"2026-11-22", "2026-11-23", "2026-11-24", "2026-11-26",
                                                    "2026-11-27"} <= set(dates)
    for kept in [
        "| arm7 | FD | 0.10 | 1.49 | **0.07** | 0.81 / 2.11 → **0.38** |",          # vs Pinocchio, 2026-11-26
        "| humanoid, floating (37) | 2.21 | 8.69 | 5.43 | **0.41** |",                 # plain C, 2026-11-23
        "| arm7 | 8.79 → 0.99 / 0.82 (10.6 → 1.16) |",                                 # frame queries before/after
        "| arm6 | 0.21 / 1.00 | **0.21** |",                                          # -march=native
        "| tiago_dual (per-kind) | 101 | fd_d | 635.87 | 664.11 |",                     # derivatives, 2026-11-27
        "| symgen `mb.rollout`, one call, 1 core | 5,747 | 2,388 |",                    # sweeps, 2026-11-27
        "| icub | 38 | 27.9 s |",                                                      # corpus cold builds
        "| chain of 1000 (per-kind form) | 1,523 kB, 21,763 lines | 14.6 s |",         # build cost, 2026-11-26
        "Before (2026-11-24): arm7 3.8 s, quadruped 7.0 s, humanoid 13.9 s",
        "| every body's mass, CoM and inertia | 1.49 | 1.68 | 2.24 |",                 # parametric, 2026-11-23
        "median 0.25 over the 136 variants",
        "1,907 → 2,069 cases/s",
    ]:
        assert kept.split(" |")[0] in text and kept in text, kept
    assert "changelog:start" in text and "{include} ../CHANGELOG.md" in (DOCS / "changelog.md").read_text()


@pytest.mark.slow
def test_getting_started_code_runs(tmp_path):
    """Each Python block of the Getting started page runs as written, from the repository root (the derivative
    block compiles arm7's derivative functions once per cache)."""
    blocks = re.findall(r"```python\n(.*?)```", (DOCS / "getting-started.md").read_text(), re.S)
    assert len(blocks) >= 4
    for i, block in enumerate(blocks):
        out = subprocess.run([sys.executable, "-c", block], cwd=ROOT, capture_output=True, text=True)
        assert out.returncode == 0, f"block {i}:\n{block}\n{out.stderr[-2000:]}"
