"""Where symgen keeps its caches (no heavy imports here)."""
from __future__ import annotations

import os
from pathlib import Path


def cache_dir() -> Path:
    """Derivations, rendered sources and compiled modules: ``$SYMGEN_CACHE_DIR``, else
    ``$XDG_CACHE_HOME/symgen``, else ``~/.cache/symgen``."""
    env = os.environ.get("SYMGEN_CACHE_DIR")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "symgen"


def package_dir() -> Path:
    """The ``symgen/`` package folder (its modules are hashed into the build caches' keys)."""
    return Path(__file__).resolve().parent


def templates_dir() -> Path:
    """The jinja2 templates of the C printer: ``symgen/codegen/templates/`` (package data of ``symgen.codegen``)."""
    return package_dir() / "codegen" / "templates"
