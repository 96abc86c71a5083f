"""Parameters of a parametric build at run time (:mod:`symgen.model.parameters` says which): their model-file
values, and the ``theta`` block of the dynamics' p from the values a call gives.  ``mb`` is the model's
:class:`~symgen.runtime.binding.ModelBinding` (its ``manifest``, ``gravity``, ``layout``, ``param_nominal``,
``body_props``)."""
from __future__ import annotations

import numpy as np


def nominal(mb) -> dict:
    """``{name: value}`` of every parameter as the model file gives it (mass a float, com (3,), inertia (3, 3)
    about the CoM, armature (nU_h,), gravity (3,))."""
    bodies = mb.manifest["bodies"]
    out = {}
    for name in mb.manifest.get("parameters", {}).get("names", []):
        if name == "gravity":
            out[name] = mb.gravity.copy()
            continue
        owner, _, what = name.rpartition(".")
        if what == "armature":
            h = mb.manifest["hinges"][owner]
            out[name] = np.array(h["armature"], dtype=float)
        else:
            b = next(b for b in bodies if b["name"] == owner)
            out[name] = float(b["mass"]) if what == "mass" else np.array(b[what], dtype=float)
    return out


def theta(mb, n: int, params) -> np.ndarray:
    """(n, n_theta): the theta block for n states, the model-file values where ``params`` (``{name: value or
    per-state values}``) says nothing.  Computed once and broadcast when no value is per state."""
    values = dict(mb.param_nominal)
    for name, v in (params or {}).items():
        if name not in values:
            raise KeyError(f"{mb.name}: no parameter {name!r} in this build (parameters: "
                           f"{', '.join(values) or 'none; build with parameters=[...]'})")
        values[name] = v
    single = all(_one_value(np.shape(v), np.shape(mb.param_nominal[k])) for k, v in (params or {}).items())
    if single and n != 1:
        return np.broadcast_to(theta(mb, 1, params), (n, mb.layout.params.size - mb.layout.params["theta"]))
    return _theta(mb, n, values)


def _theta(mb, n, values) -> np.ndarray:
    blocks = mb.layout.theta_blocks
    out = np.empty((n, sum(b["size"] for b in blocks)))
    o = 0
    for blk in blocks:
        if blk["kind"] == "inertia":
            body = mb.body_names[blk["body"]]
            m = _per_state(mb, values[f"{body}.mass"] if f"{body}.mass" in values else mb.body_props[body][0],
                           n, (), f"{body}.mass")
            c = _per_state(mb, values.get(f"{body}.com", mb.body_props[body][1]), n, (3,), f"{body}.com")
            J = _per_state(mb, values.get(f"{body}.inertia", mb.body_props[body][2]), n, (3, 3), f"{body}.inertia")
            cc = np.einsum("ni,ni->n", c, c)
            Jo = J + m[:, None, None] * (cc[:, None, None] * np.eye(3) - np.einsum("ni,nj->nij", c, c))
            out[:, o] = m
            out[:, o + 1:o + 4] = m[:, None] * c
            out[:, o + 4:o + 10] = Jo[:, [0, 0, 0, 1, 1, 2], [0, 1, 2, 1, 2, 2]]
        else:
            out[:, o:o + blk["size"]] = _per_state(mb, values[f"{blk['hinge']}.armature"], n, (blk["size"],),
                                                   f"{blk['hinge']}.armature")
        o += blk["size"]
    return out


def _one_value(got: tuple, shape: tuple) -> bool:
    """A value of this shape is one value for every state: the parameter's shape, or a plain number for a
    parameter of one number (a one-dof hinge's armature (1,))."""
    return got == shape or (got == () and shape == (1,))


def _per_state(mb, v, n, shape, name) -> np.ndarray:
    """(n, *shape) from one value (the parameter's shape; a number for a one-number parameter; lists as
    arrays) or one per state ((n, *shape); (n,) for a one-number parameter)."""
    try:
        a = np.asarray(v, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"{mb.name}: parameter {name!r} must be numbers, got {v!r}") from None
    if _one_value(a.shape, shape):
        return np.broadcast_to(a.reshape(shape), (n, *shape))
    if a.shape == (n, *shape):
        return a
    if shape == (1,) and a.shape == (n,):
        return a.reshape(n, 1)
    one = f"have shape {shape}" + (" or be a number" if shape == (1,) else "")
    per = f"({n},) or ({n}, 1)" if shape == (1,) else f"({n}, {', '.join(map(str, shape))})"
    raise ValueError(f"{mb.name}: parameter {name!r} must {one} (one value for every state) or {per} "
                     f"(one per state) for {n} states, got shape {a.shape}")
