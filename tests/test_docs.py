"""The documentation site: ``python -m symgen docs`` builds it, strictly, and a real browser reads it offline.

The site is built once per session (``built_site``), by the command line, into a temporary folder, with the
session's build cache (``SYMGEN_CACHE_DIR`` of tests/conftest.py); the command sets the kernels' matplotlib backend
to the inline one, so the figures are PNG outputs on the pages.  The build executes every example notebook
(myst-nb, a fresh kernel each, in ``examples/notebooks/``): this is the notebooks' execution test, which
tests/test_notebooks.py no longer repeats (it checks that they are committed without outputs); a raising cell
fails the build with the cell's traceback.

A broken cross-reference failing the build is checked on a tiny variant of the site (the real ``conf.py``, one
page), so it costs a few seconds, not a second full build.

The browser tests drive Debian's Chromium (``apt-get install chromium``) headless with Playwright for Python:
its wheel carries the driver, and ``executable_path`` points it at the system browser (no ``playwright
install``, no download).  Playwright rather than Selenium: one pip package and no chromedriver to keep in step
with the browser, and it reports every request a page makes (``context.on("request")``), which is how "nothing
left the machine" is checked.  Without Chromium the browser tests skip, except in CI (``CI=true``), where they fail.
"""
from __future__ import annotations

import html
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

import symgen
from conftest import TIMINGS

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
NB_DIR = ROOT / "examples" / "notebooks"
NOTEBOOKS = sorted(NB_DIR.glob("*.ipynb"))
README_COMMANDS = ["pip install -e . && python -m symgen build", 'pip install -e ".[test]" && python -m pytest']
FD_ANCHOR = "symgen.runtime.model.MultibodyModel.forward_dynamics"
BUILD_TIMEOUT = 1800
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]


def _files(*dirs):
    return {p for d in dirs for p in d.rglob("*") if p.is_file() and "__pycache__" not in p.parts
            and ".ipynb_checkpoints" not in p.parts}


def _docs(out: Path, *extra, source: Path | None = None):
    cmd = [sys.executable, "-m", "symgen", "docs", "--out", str(out), "-q", *extra]
    if source is not None:
        cmd += ["--source", str(source)]
    return subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=BUILD_TIMEOUT)


@pytest.fixture(scope="session")
def built_site(tmp_path_factory):
    """``python -m symgen docs --out TMP/html``: (completed process, output folder, seconds, files the build
    wrote into examples/)."""
    out = tmp_path_factory.mktemp("docs") / "html"
    watched = (NB_DIR, ROOT / "examples" / "models")
    before = _files(*watched)
    t0 = time.perf_counter()
    res = _docs(out)
    seconds = time.perf_counter() - t0
    TIMINGS["docs build (python -m symgen docs, notebooks executed)"] = seconds
    created = sorted(str(p.relative_to(ROOT)) for p in _files(*watched) - before)
    return res, out, seconds, created


def _site(built_site) -> Path:
    res, out, _, _ = built_site
    if not (out / "index.html").is_file():
        pytest.fail(f"the docs build wrote no site (status {res.returncode}):\n{res.stderr[-6000:]}", pytrace=False)
    return out


def _warnings(stderr: str) -> list:
    """Sphinx's warnings and errors (``path:line: WARNING: ...``) and symgen's error line."""
    return [ln for ln in stderr.splitlines() if re.search(r"(^|: )(WARNING|ERROR|CRITICAL):", ln)
            or ln.startswith("symgen: error:") or ln.startswith("  symgen.")]


def test_docs_build_succeeds_with_warnings_as_errors(built_site):
    res, out, seconds, created = built_site
    assert res.returncode == 0, (f"python -m symgen docs failed (status {res.returncode}) in {seconds:.0f} s; "
                                 "warnings are errors:\n" + "\n".join(_warnings(res.stderr))[-8000:]
                                 + "\n----- stderr tail -----\n" + res.stderr[-3000:])
    assert (out / "index.html").is_file() and f"docs: {out / 'index.html'}" in res.stdout
    assert not created, f"the notebooks wrote into the repository: {created}"


def test_public_api_docstring_coverage(built_site):
    """interrogate's coverage of every object the API reference documents is at least the threshold (95 %)."""
    site = _site(built_site)
    cov = json.loads((site / "_symgen" / "docstring-coverage.json").read_text())
    assert cov["total"] > 150 and cov["threshold"] >= 95
    assert cov["percent"] >= cov["threshold"], (
        f"docstring coverage {cov['percent']:.1f}% < {cov['threshold']}% ({cov['covered']} of {cov['total']}); "
        "without a docstring:\n  " + "\n  ".join(cov["missing"]))


def test_every_notebook_rendered_with_outputs(built_site):
    site = _site(built_site)
    for nb in NOTEBOOKS:
        page = site / "notebooks" / f"{nb.stem}.html"
        assert page.is_file(), f"{nb.name} is not on the site"
        text = page.read_text()
        assert text.count('class="cell_output') >= 1, f"{nb.name}: rendered without outputs"
    plots = sum(len(re.findall(r'<img[^>]+src="[^"]*\.png"', (site / "notebooks" / f"{nb.stem}.html").read_text()))
                for nb in NOTEBOOKS)
    assert plots >= len(NOTEBOOKS) // 2, f"only {plots} plots on the notebook pages"


def _code_blocks(page: str) -> list:
    """The text of each highlighted code block of an HTML page."""
    return [html.unescape(re.sub(r"<[^>]+>", "", b))
            for b in re.findall(r'<div class="highlight"><pre>(.*?)</pre>', page, re.S)]


def test_hinge_catalogue_from_the_registry(built_site):
    """One page per registered hinge type, listed on the index; each page's C is what ``symgen show --c``
    prints, and its LaTeX is sympy's of the derived matrices."""
    import sympy as sp

    from symgen.pipeline.sources import hinge_sources

    site = _site(built_site)
    index = (site / "hinges" / "index.html").read_text()
    for name in symgen.HINGE_TYPES:
        assert (site / "hinges" / f"{name}.html").is_file(), f"no catalogue page for {name}"
        assert f'href="{name}.html"' in index
    page = (site / "hinges" / "GIMBAL.html").read_text()
    h = symgen.hinge("GIMBAL")
    files, manifest = hinge_sources(h)
    blocks = [b.rstrip("\n") for b in _code_blocks(page)]
    for fname, text in files.items():
        assert text.rstrip("\n") in blocks, f"GIMBAL's page does not show {fname} as generated"
    shown = run_show("GIMBAL")
    assert all(text.rstrip("\n") in shown for text in files.values())
    assert html.escape(sp.latex(h.coord_map), quote=False) in page
    for kernel, info in manifest["kernels"].items():
        assert re.search(rf"<code[^>]*><span class=\"pre\">{kernel}</span></code></p></td>\s*<td><p>[^<]+</p></td>\s*"
                         rf"<td><p>{info['flops']}</p></td>", page), f"no operation count of {kernel}"


def run_show(name: str) -> str:
    return subprocess.run([sys.executable, "-m", "symgen", "show", name, "--c"], capture_output=True, text=True,
                          cwd=ROOT, check=True).stdout


def test_broken_cross_reference_fails_the_build(tmp_path):
    """The real conf.py on a one-page site: a reference to a re-exported spelling resolves to the documented
    method, a reference to a method that does not exist fails the build (nitpicky, -W)."""
    src = tmp_path / "src"
    src.mkdir()
    (src / "conf.py").write_text(
        "from pathlib import Path\n"
        f"_real = Path({str(DOCS / 'conf.py')!r})\n"
        "exec(compile(_real.read_text(), str(_real), 'exec'), {**globals(), '__file__': str(_real)}, _ns := {})\n"
        "globals().update({k: v for k, v in _ns.items() if not k.startswith('__')})\n"
        "extensions = [e for e in extensions if e != 'hinge_catalogue']\n"
        "html_static_path, html_css_files = [], []\n"
        "symgen_docstring_threshold = 0\n")
    (src / "index.md").write_text(
        "# Tiny\n\n"
        "Good: {py:meth}`symgen.MultibodyModel.forward_dynamics`.\n\n"
        "Broken: {py:meth}`symgen.runtime.model.MultibodyModel.forward_dynamcs`.\n\n"
        "```{eval-rst}\n.. autoclass:: symgen.runtime.model.MultibodyModel\n   :members: forward_dynamics\n```\n")
    res = _docs(tmp_path / "out", source=src)
    assert res.returncode != 0, "a broken cross-reference did not fail the build"
    on_page = [ln for ln in _warnings(res.stderr) if "index.md" in ln]
    assert len(on_page) == 1 and "reference target not found" in on_page[0] and "forward_dynamcs" in on_page[0], \
        res.stderr[-3000:]
    page = (tmp_path / "out" / "index.html").read_text()          # --keep-going: written all the same
    assert f'href="#{FD_ANCHOR}"' in page


# ------------------------------------------------------------------------------------------------ in a browser
def _chromium() -> str:
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    reason = None
    if path is None:
        reason = "Chromium is not installed (apt-get install chromium)"
    else:
        try:
            import playwright.sync_api  # noqa: F401
        except ImportError:
            reason = "playwright is not installed (pip install -e \".[test]\")"
    if reason:
        if os.environ.get("CI", "").lower() in ("true", "1"):
            pytest.fail(f"{reason}; in CI the browser test must run", pytrace=False)
        pytest.skip(reason)
    return path


@pytest.fixture(scope="module")
def browser_context(built_site):
    """A headless Chromium context on the built site that records every request its pages make."""
    from playwright.sync_api import sync_playwright

    exe = _chromium()
    _site(built_site)
    requests = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=exe, headless=True, args=CHROMIUM_ARGS)
        context = browser.new_context(viewport={"width": 1280, "height": 900})
        context.on("request", lambda r: requests.append(r.url))
        context.on("websocket", lambda ws: requests.append(ws.url))
        try:
            yield context, requests
        finally:
            context.close()
            browser.close()


def _open(context, path: Path):
    page = context.new_page()
    page.goto(path.as_uri(), wait_until="load")
    return page


def _wait_for_math(page) -> None:
    """Wait until MathJax (on pages with math) has typeset the page."""
    if not page.locator('script[src*="mathjax"]').count():
        return
    page.wait_for_function("() => window.MathJax && MathJax.startup && MathJax.startup.promise", timeout=30000)
    page.evaluate("() => MathJax.startup.promise")


def _assert_png(path: Path, min_bytes: int = 20000, min_size: int = 300) -> None:
    """A PNG of at least ``min_bytes`` and ``min_size`` pixels a side, not blank: its pixels vary and it has more
    than a few colours."""
    import numpy as np
    from matplotlib import image

    assert path.stat().st_size > min_bytes, f"{path.name}: {path.stat().st_size} bytes"
    img = image.imread(str(path))
    rgb = img[..., :3].reshape(-1, 3)
    assert img.shape[0] >= min_size and img.shape[1] >= min_size, img.shape
    assert float(rgb.std()) > 0.05, f"{path.name} is blank"
    assert len(np.unique((rgb * 255).astype(np.uint8), axis=0)) > 16, f"{path.name} has almost no colours"


def test_landing_page_shows_the_two_commands(browser_context, built_site, tmp_path_factory):
    context, _ = browser_context
    site = _site(built_site)
    page = _open(context, site / "index.html")
    blocks = [t.strip() for t in page.locator("div.highlight-bash pre").all_inner_texts()]
    assert [b for b in blocks if b in README_COMMANDS] == README_COMMANDS, blocks
    shot = tmp_path_factory.mktemp("screenshots") / "index.png"
    page.screenshot(path=str(shot), full_page=True)
    _assert_png(shot)
    page.close()


def test_gimbal_page_shows_rendered_math(browser_context, built_site, tmp_path_factory):
    context, _ = browser_context
    site = _site(built_site)
    page = _open(context, site / "hinges" / "GIMBAL.html")
    _wait_for_math(page)
    section = page.locator("section#coordinate-map")
    assert section.locator("mjx-container").count() >= 1, "the coordinate map is not typeset by MathJax"
    assert page.locator("mjx-container").count() >= 5
    assert page.locator("mjx-merror").count() == 0, "MathJax could not typeset some of GIMBAL's LaTeX"
    visible = page.inner_text("article")
    for raw in (r"\begin{", r"\left[", r"\frac{", "\\cos"):
        assert raw not in visible, f"raw LaTeX {raw!r} visible on GIMBAL's page"
    box = section.locator("mjx-container").first.bounding_box()
    assert box and box["width"] > 100 and box["height"] > 40, box
    shot = tmp_path_factory.mktemp("screenshots") / "gimbal.png"
    section.screenshot(path=str(shot))
    _assert_png(shot, min_bytes=5000, min_size=60)
    page.close()


def test_getting_started_links_to_forward_dynamics(browser_context, built_site):
    context, _ = browser_context
    site = _site(built_site)
    page = _open(context, site / "getting-started.html")
    link = page.locator(f'article a[href$="#{FD_ANCHOR}"]').first
    assert link.count() == 1, "the Getting-started page does not link to MultibodyModel.forward_dynamics"
    link.click()
    page.wait_for_load_state("load")
    assert page.url == (site / "api" / "runtime.html").as_uri() + f"#{FD_ANCHOR}"
    target = page.locator(f'[id="{FD_ANCHOR}"]')
    assert target.count() == 1 and "forward_dynamics" in target.inner_text()
    assert page.locator(f'[id="{FD_ANCHOR}"] + dd').inner_text().strip(), "forward_dynamics has no docstring"
    page.close()


def test_no_request_left_the_machine(browser_context, built_site):
    """Every page opened here (and the search page) loaded only local files: no CDN script, style or font."""
    context, requests = browser_context
    site = _site(built_site)
    for rel in ("index.html", "hinges/GIMBAL.html", "notebooks/hinges.html", "api/runtime.html", "search.html"):
        page = _open(context, site / rel)
        _wait_for_math(page)
        page.wait_for_load_state("networkidle")
        page.close()
    assert len(requests) > 20
    remote = [u for u in requests if not re.match(r"(file|data|blob|about):|https?://(localhost|127\.0\.0\.1)[:/]", u)]
    assert not remote, f"requests that left the machine: {remote[:20]}"
    for f in site.rglob("*.html"):
        tags = re.findall(r"<(?:script|link)\b[^>]*>", f.read_text())
        external = [t for t in tags if re.search(r'(src|href)="(https?:)?//', t)]
        assert not external, f"{f.relative_to(site)} loads {external[:3]}"
    for f in (site / "_static").rglob("*.css"):
        css = f.read_text(errors="replace")
        assert not re.search(r"url\(\s*['\"]?(https?:)?//", css), f"{f.relative_to(site)} loads a remote file"
