"""Hinge registry: the subhinge catalogue and the hinge-type table.

This package is the one place a hinge type is added (see :mod:`symgen.hinges.types`).  Everything else —
derivation, generated C, tests, the README table — iterates over :data:`HINGE_TYPES`.
"""
from __future__ import annotations

from .params import (HingeParams, hooke_hinge_params, inline_hinge_params, inplane_hinge_params,
                     parallel_hinge_params, perpendicular_hinge_params)
from .subhinges import SUBHINGE_TYPES, SubhingeKinematics, SubhingeType
from .types import (DEFAULT_PITCH, HINGE_TYPE_TABLE, PLANNED_HINGE_TYPES, BoundSubhinge, HingeSpec,
                    HingeType)

#: Names of the implemented hinge types, in table order.
HINGE_TYPES: tuple = tuple(HINGE_TYPE_TABLE)

__all__ = [
    "HINGE_TYPES", "HINGE_TYPE_TABLE", "SUBHINGE_TYPES", "PLANNED_HINGE_TYPES", "DEFAULT_PITCH",
    "HingeParams", "HingeSpec", "HingeType", "BoundSubhinge", "SubhingeType", "SubhingeKinematics",
    "bind", "hinge_type", "subhinge_types", "hinge_type_string",
    "hooke_hinge_params", "inline_hinge_params", "inplane_hinge_params", "perpendicular_hinge_params",
    "parallel_hinge_params",
]


def hinge_type(name) -> HingeType:
    """The registry entry of a hinge type (case-insensitive name); ``ValueError`` if unknown."""
    key = str(name).upper() if isinstance(name, str) else None
    if key in HINGE_TYPE_TABLE:
        return HINGE_TYPE_TABLE[key]
    if key in PLANNED_HINGE_TYPES:
        raise ValueError(f"hinge type {key!r} is not implemented yet: {PLANNED_HINGE_TYPES[key]}")
    raise ValueError(f"unknown hinge type {name!r} (known: {', '.join(HINGE_TYPES)})")


def bind(name, **params) -> HingeSpec:
    """Bind a hinge type's parameters: ``bind("PIN", axis=(0, 1, 0))`` -> :class:`HingeSpec`."""
    return hinge_type(name).bind(**params)


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
