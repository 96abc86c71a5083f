"""Hinge registry: the subhinge catalogue and the hinge-type table.

This package is the one place a hinge type is added: :func:`register_subhinge` (a new kind of relative
motion, with every fact the rest of symgen needs about it) and :func:`register_hinge_type` (a sequence of
subhinges with default axes).  Everything else — derivation, generated C, tests, the README table —
iterates over :data:`HINGE_TYPES` and reads the facts of :data:`SUBHINGE_TYPES`.
:func:`temporary_types` adds types for the length of a ``with`` block.
"""
from __future__ import annotations

import contextlib
from collections.abc import Sequence

from .params import (HingeParams, hooke_hinge_params, inline_hinge_params, inplane_hinge_params,
                     parallel_hinge_params, perpendicular_hinge_params)
from .subhinges import SUBHINGE_TYPES, SubhingeKinematics, SubhingeType, register_subhinge
from .types import (DEFAULT_PITCH, HINGE_TYPE_TABLE, PLANNED_HINGE_TYPES, BoundSubhinge, HingeSpec,
                    HingeType, register, register_hinge_type)


class _Names(Sequence):
    """The names of the registered hinge types, in table order: a read-only tuple-like view that follows
    registrations."""

    def __getitem__(self, i):
        return tuple(HINGE_TYPE_TABLE)[i]

    def __len__(self):
        return len(HINGE_TYPE_TABLE)

    def __contains__(self, name):
        return name in HINGE_TYPE_TABLE

    def __eq__(self, other):
        return isinstance(other, Sequence) and tuple(self) == tuple(other)

    __hash__ = None

    def __repr__(self):
        return repr(tuple(HINGE_TYPE_TABLE))


#: Names of the implemented hinge types, in table order (follows :func:`register_hinge_type`).
HINGE_TYPES = _Names()

__all__ = [
    "HINGE_TYPES", "HINGE_TYPE_TABLE", "SUBHINGE_TYPES", "PLANNED_HINGE_TYPES", "DEFAULT_PITCH",
    "HingeParams", "HingeSpec", "HingeType", "BoundSubhinge", "SubhingeType", "SubhingeKinematics",
    "bind", "hinge_type", "subhinge_types", "hinge_type_string", "register", "register_hinge_type",
    "register_subhinge", "temporary_types", "hinge_table_markdown",
    "hooke_hinge_params", "inline_hinge_params", "inplane_hinge_params", "perpendicular_hinge_params",
    "parallel_hinge_params",
]


@contextlib.contextmanager
def temporary_types():
    """Within the block, types registered (``register_subhinge``, ``register_hinge_type``) are usable like
    the built-in ones; on exit the registry is back as it was.  Cache keys carry each subhinge type's
    definition (:attr:`SubhingeType.fingerprint`), so a temporary type never meets another's cached
    derivation or model sources."""
    saved = dict(SUBHINGE_TYPES), dict(HINGE_TYPE_TABLE)
    try:
        yield
    finally:
        for table, before in zip((SUBHINGE_TYPES, HINGE_TYPE_TABLE), saved):
            table.clear()
            table.update(before)


def hinge_type(name) -> HingeType:
    """The registry entry of a hinge type (case-insensitive name); ``ValueError`` if unknown."""
    key = str(name).upper() if isinstance(name, str) else None
    if key in HINGE_TYPE_TABLE:
        return HINGE_TYPE_TABLE[key]
    if key in PLANNED_HINGE_TYPES:
        raise ValueError(f"hinge type {key!r} is not implemented yet: {PLANNED_HINGE_TYPES[key]}")
    raise ValueError(f"unknown hinge type {name!r} (known: {', '.join(HINGE_TYPES)})")


def bind(name, **params) -> HingeSpec:
    """Bind a hinge type's parameters: ``bind("PIN", axis=(0, 1, 0))`` -> :class:`HingeSpec`.

    ``reverse=True`` (every type; Simbody's ``Direction::Reverse``) defines the hinge's motion from the
    pnode's frame to the onode's: Q and U are the type's own, but they place and move the onode in the pnode,
    so ``X_op(Q)`` is the inverse of the forward hinge's and its coord map is the pnode's velocity that this
    reversed motion implies (:func:`symgen.hinges.derive.derive`)."""
    reverse = params.pop("reverse", False)
    if not isinstance(reverse, bool):
        raise ValueError(f"{name}: parameter 'reverse' must be true or false, got {reverse!r}")
    spec = hinge_type(name).bind(**params)
    if reverse:
        import dataclasses

        spec = dataclasses.replace(spec, reversed=True, bound=tuple(spec.bound) + (("reverse", True),))
    return spec


def subhinge_types(name) -> tuple:
    """Subhinge type names of a hinge type, onode -> pnode (Karana ``getSubhingeTypes``).

    For CUSTOM this is the default sequence; a bound CUSTOM hinge reports its own.
    """
    ht = hinge_type(name)
    return ht.subhinges if ht.subhinges is not None else bind(name).subhinge_types


def hinge_type_string(name) -> str:
    """Canonical name of a hinge type (Karana ``hingeTypeString``)."""
    return hinge_type(name).name


def _fmt_default(v) -> str:
    if isinstance(v, tuple) and v and isinstance(v[0], dict):   # SERIAL's joints
        return ", ".join(_fmt_joint(j) for j in v)
    if v is None:
        return "x, y, z, x, … over the axis-bearing subhinges"
    if isinstance(v, tuple) and len(v) == 3 and all(isinstance(x, float) for x in v):
        return {(1.0, 0.0, 0.0): "x", (0.0, 1.0, 0.0): "y", (0.0, 0.0, 1.0): "z"}.get(v, str(v))
    if isinstance(v, tuple) and v and isinstance(v[0], tuple) and len(v[0]) == 3:
        return ", ".join(_fmt_default(a) for a in v)
    if isinstance(v, tuple) and len(v) == 4:
        return "(" + ", ".join(f"{x:.4g}" for x in v) + ")"
    if isinstance(v, tuple):
        return "[" + ", ".join(map(str, v)) + "]"
    return str(v)


def _fmt_joint(j: dict) -> str:
    extra = "".join(f" {k} ({', '.join(f'{x:g}' for x in j[k])})" if k == "anchor" else f" {k} {j[k]:g}"
                    for k in ("anchor", "ref") if k in j)
    return f"{j['type']} {_fmt_default(j.get('axis'))}{extra}"


def hinge_table_markdown() -> str:
    """The hinge-type table of the README, generated from the registry."""
    rows = ["| hinge type | nQ | nU | subhinges (onode → pnode) | parameters (defaults) | motion |",
            "|---|---|---|---|---|---|"]
    for name in HINGE_TYPES:
        ht = HINGE_TYPE_TABLE[name]
        spec = ht.bind()
        subs = " → ".join(spec.subhinge_types) + (" (default)" if ht.subhinges is None else "")
        params = "; ".join(f"`{k}` = {_fmt_default(v)}" for k, v in ht.defaults.items()) or "–"
        rows.append(f"| {name} | {spec.nq} | {spec.nu} | {subs} | {params} | {ht.summary} |")
    for name, what in PLANNED_HINGE_TYPES.items():
        rows.append(f"| {name} | – | – | – | – | {what} |")
    return "\n".join(rows)
