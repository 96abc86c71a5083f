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


def templates_dir() -> Path:
    """``templates/`` of the source tree (installed as the ``symgen.templates`` package)."""
    from importlib import resources

    return Path(str(resources.files("symgen.templates")))
