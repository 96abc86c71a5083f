"""Checks shared by the model readers (YAML/JSON in :mod:`.load`, URDF in :mod:`.urdf`): an error context
that names the file and the place, and the format-independent field checks.  Imports nothing of
``symgen.model`` but :mod:`.spec`, so both readers import it and not each other's internals."""
from __future__ import annotations

import math

import numpy as np

from .spec import ModelError


class Ctx:
    """Where a reader is: ``ctx.err(where, msg)`` is a :class:`ModelError` ``"<path>: <where>: <msg>"``."""

    def __init__(self, path: str):
        self.path = path

    def err(self, where: str, msg: str) -> ModelError:
        return ModelError(f"{self.path}: {where}: {msg}")


def check_keys(ctx, where, d, allowed, required=()):
    """``d`` is a mapping with keys in ``allowed`` only, and every key of ``required``."""
    if not isinstance(d, dict):
        raise ctx.err(where, f"expected a mapping, got {type(d).__name__}")
    unknown = sorted(str(k) for k in d if k not in allowed)
    if unknown:
        raise ctx.err(where, f"unknown key(s) {', '.join(unknown)} (allowed: {', '.join(sorted(allowed))})")
    for k in required:
        if k not in d:
            raise ctx.err(where, f"missing required key '{k}'")


def check_name(ctx, where, v, field_="name"):
    """``v``, a non-empty string."""
    if not isinstance(v, str) or not v.strip():
        raise ctx.err(where, f"field '{field_}' must be a non-empty string, got {v!r}")
    return v


def as_floats(ctx, where, v, not_a_list: str, not_numbers: str) -> np.ndarray:
    """``v`` (a list, nested lists or an array) as a float array; the messages say what was expected."""
    if isinstance(v, (str, bytes, dict)) or not hasattr(v, "__len__"):
        raise ctx.err(where, not_a_list)
    try:
        return np.array(v, dtype=float)
    except (TypeError, ValueError):
        raise ctx.err(where, not_numbers) from None


def check_vector(ctx, where, field_, v, n):
    """``v`` as an array of ``n`` finite floats."""
    msg = f"field '{field_}' must be a list of {n} numbers, got {v!r}"
    a = as_floats(ctx, where, v, msg, msg)
    if a.shape != (n,) or not np.all(np.isfinite(a)):
        raise ctx.err(where, f"field '{field_}' must be {n} finite numbers, got {v!r}")
    return a


def check_number(ctx, where, field_, v):
    """``v`` as a finite float (booleans refused)."""
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        raise ctx.err(where, f"field '{field_}' must be a finite number, got {v!r}")
    return float(v)
