"""Sphinx configuration of the symgen documentation site (``python -m symgen docs``).

Extensions in ``docs/_ext/``:

* ``hinge_catalogue``: one page per registered hinge type under ``hinges/``, written from the registry (the same
  sympy objects and the same rendered C that ``python -m symgen show`` prints) before the sources are read;
* ``symgen_api``: the API reference's helpers: an ``symgen-exports`` directive that lists a module's ``__all__``,
  re-exported spellings (``symgen.MultibodyModel``) resolved to the documented object, references into the
  undocumented internal layers checked to exist and printed as code, and the docstring coverage of the documented
  public API (interrogate), which fails the build below ``symgen_docstring_threshold``.

The build is strict: ``python -m symgen docs`` runs sphinx-build with ``-W --keep-going`` and ``nitpicky`` is on,
so a broken cross-reference, a notebook cell that raises or too few docstrings fail it.
"""
from __future__ import annotations

import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
sys.path.insert(0, str(DOCS / "_ext"))
sys.path.insert(0, str(ROOT))

import symgen  # noqa: E402

project = "symgen"
author = "the symgen authors"
copyright = "the symgen authors"
release = version = symgen.__version__

extensions = [
    "myst_nb",                    # Markdown (MyST) pages and executed notebooks
    "sphinx.ext.autodoc",         # the API reference, from the docstrings
    "sphinx.ext.mathjax",
    "sphinx-mathjax-offline",     # MathJax 3 copied into _static: math renders without a CDN
    "hinge_catalogue",
    "symgen_api",
]

root_doc = "index"
exclude_patterns = ["_build", "CONTRIBUTING-DOCS.md", "**/.ipynb_checkpoints", ".*"]
html_static_path = ["_static"]
html_css_files = ["symgen.css"]

# ---- math: MathJax 3 from the sphinx-mathjax-offline wheel, copied to _static/mathjax/ (no CDN)
mathjax_path = "mathjax/tex-chtml.js"

# ---- theme: furo (self-contained: no web fonts, no CDN)
html_theme = "furo"
html_title = f"symgen {release}"
html_theme_options = {"source_repository": "", "navigation_with_keys": True}
html_show_sourcelink = False
html_copy_source = False
pygments_style = "sphinx"
pygments_dark_style = "monokai"

# ---- strictness: every cross-reference must resolve (docs/_ext/symgen_api.py resolves re-exported names)
nitpicky = True
symgen_docstring_threshold = 95       # percent of the documented public API with a docstring (interrogate)

# ---- MyST
myst_enable_extensions = ["dollarmath", "amsmath", "colon_fence", "deflist"]
myst_heading_anchors = 3
myst_dmath_double_inline = True

# ---- notebooks (myst-nb): executed by every build, a raising cell fails it
nb_execution_mode = "force"
nb_execution_raise_on_error = True
nb_execution_show_tb = True
nb_execution_timeout = 600            # per cell: a cold cache compiles a model inside one cell
nb_execution_excludepatterns: list = []
nb_merge_streams = True
nb_ipywidgets_js: dict = {}           # no require.js / widget manager from a CDN (the notebooks have no widgets)
nb_mime_priority_overrides = [("html", "text/latex", 5)]   # sympy output as math, rendered by the bundled MathJax

# ---- API reference (autodoc)
autodoc_default_options = {"members": True, "undoc-members": True, "member-order": "bysource"}
autodoc_typehints = "signature"
autodoc_preserve_defaults = True
add_module_names = False
python_display_short_literal_types = True
