"""The hinge-type table (DESIGN.md §4) and parameter binding.

A hinge type is one registry entry: its subhinge sequence (onode -> pnode), its parameters with their
defaults, and a ``bind`` function turning user parameters into a :class:`HingeSpec` — the hinge type with
every constant bound (axes, pitch, coordinate order).  Adding a hinge type means adding one
:func:`register_hinge_type` (or, for a custom binder, :func:`register`) call; derivation, code generation,
tests and the README table find it in :data:`HINGE_TYPE_TABLE`.

Parameter rules (errors are ``ValueError`` naming the hinge and the parameter):

* axes are 3-vectors of finite numbers of unit length (``| |a| - 1 | <= 1e-9``); zero or non-unit axes
  are rejected, never normalized silently;
* consecutive subhinges of the same kind must not share an axis (their coord map would never have full
  rank);
* unknown parameter names are rejected.
"""
from __future__ import annotations

import inspect
import json
import math
import re
from dataclasses import dataclass, field
from typing import Callable, Optional

import numpy as np

from .params import (IDENTITY_Q, HingeParams, hooke_hinge_params, inline_hinge_params, inplane_hinge_params,
                     parallel_hinge_params, perpendicular_hinge_params)
from .subhinges import SUBHINGE_TYPES

X, Y, Z = (1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0)
DEFAULT_PITCH = 0.1  # length per radian, for HELICAL and CUSTOM SCREW subhinges


@dataclass(frozen=True)
class BoundSubhinge:
    """One subhinge of a bound hinge.  ``anchor`` (a point in the subhinge's oframe, None = the origin) and
    ``ref`` (a coordinate offset, None = 0) are the compound hinge's (SERIAL) per-subhinge constants: the
    subhinge moves as ``T(anchor) X(Q - ref) T(-anchor)`` (a turn about the line through the anchor, MuJoCo's
    joint ``pos`` and ``ref``)."""

    type: str
    axis: Optional[tuple] = None
    pitch: Optional[float] = None
    anchor: Optional[tuple] = None
    ref: Optional[float] = None

    @property
    def info(self):
        """The subhinge type's catalogue entry, ``SUBHINGE_TYPES[type]``."""
        return SUBHINGE_TYPES[self.type]

    @property
    def neutral_q(self) -> tuple:
        """The subhinge's Q of the reference pose (its type's neutral Q, plus ``ref``)."""
        q = self.info.neutral_q
        return (q[0] + self.ref,) if self.ref else tuple(q)

    def key(self) -> list:
        """What the derivation depends on, JSON-ready: type, axis, pitch, the type's fingerprint, and anchor and ref
        when either is set (one entry of :meth:`HingeSpec.key`)."""
        out = [self.type, self.axis, self.pitch, self.info.fingerprint]
        return out + [self.anchor, self.ref] if (self.anchor is not None or self.ref is not None) else out


@dataclass(frozen=True)
class HingeSpec:
    """A hinge type with its constant parameters bound (what a C kernel is specialized on)."""

    hinge_type: str
    subhinges: tuple
    q_order: tuple   # hinge Q index of each coordinate in subhinge order
    u_order: tuple   # hinge U index of each speed in subhinge order
    params: HingeParams
    bound: tuple = field(default=())  # (name, value) pairs as the user gave them, for display
    reversed: bool = False   # Simbody Direction::Reverse: Q and U describe the onode's motion in the pnode

    @property
    def nq(self) -> int:
        """Number of generalized coordinates Q (the subhinges' nQ summed)."""
        return sum(s.info.nq for s in self.subhinges)

    @property
    def nu(self) -> int:
        """Number of generalized speeds U, the degrees of freedom (the subhinges' nU summed)."""
        return sum(s.info.nu for s in self.subhinges)

    @property
    def subhinge_types(self) -> tuple:
        """The subhinge type names, onode -> pnode."""
        return tuple(s.type for s in self.subhinges)

    @property
    def has_sanitize(self) -> bool:
        """Whether some subhinge's Q needs sanitizing (then the hinge has a ``sanitize`` kernel)."""
        return any(s.info.sanitize is not None for s in self.subhinges)

    def to_hinge_order(self, q_sub) -> list:
        """Q values in subhinge order -> hinge order (BUSHING lists its rotations first)."""
        out = [None] * len(q_sub)
        for j, i in enumerate(self.q_order):
            out[i] = q_sub[j]
        return out

    def neutral_q(self) -> list:
        """Q of the reference pose (zeros, identity quaternions), hinge order."""
        return self.to_hinge_order([x for s in self.subhinges for x in s.neutral_q])

    def random_q(self, rng, max_angle: float = 2.5) -> np.ndarray:
        """A random valid Q (hinge order) from each subhinge's ``random_q``: angles in (-max_angle,
        max_angle), distances in (-1, 1), rotation vectors of norm < max_angle, unit quaternions."""
        parts = [np.asarray(s.info.random_q(rng, max_angle), float).reshape(s.info.nq) + (s.ref or 0.0)
                 for s in self.subhinges]
        return np.array(self.to_hinge_order(list(np.concatenate(parts))) if parts else [], float)

    def key(self) -> str:
        """Canonical text of everything the derivation depends on (with each subhinge type's fingerprint,
        so a re-defined subhinge type never meets a cached derivation of the old one)."""
        return json.dumps({
            "type": self.hinge_type,
            "subhinges": [s.key() for s in self.subhinges],
            "q_order": self.q_order, "u_order": self.u_order,
            **({"reversed": True} if self.reversed else {}),
        }, sort_keys=True)

    def label(self) -> str:
        """Display name: ``TYPE(name=value, ...)`` with the parameters as the user gave them."""
        args = ", ".join(f"{k}={v!r}" for k, v in self.bound)
        return f"{self.hinge_type}({args})"


@dataclass(frozen=True)
class HingeType:
    """One entry of :data:`HINGE_TYPE_TABLE`: ``name``, ``subhinges`` (the subhinge type names, onode -> pnode;
    None when the binder chooses them, as CUSTOM and SERIAL), a one-line ``summary``, the parameters with their
    ``defaults``, and ``bind(**params) -> HingeSpec``."""
    name: str
    subhinges: Optional[tuple]          # None for CUSTOM (user list)
    summary: str
    defaults: dict = field(default_factory=dict)
    bind: Callable[..., HingeSpec] = field(default=None, repr=False)

    @property
    def dof(self):
        """Degrees of freedom (the subhinges' nU summed); None for CUSTOM and SERIAL, whose subhinges are parameters."""
        if self.subhinges is None:
            return None
        return sum(SUBHINGE_TYPES[s].nu for s in self.subhinges)


HINGE_TYPE_TABLE: dict[str, HingeType] = {}


def _check_new(name, subhinges) -> None:
    if not re.fullmatch(r"[A-Z][A-Z0-9_]*", str(name)):
        raise ValueError(f"hinge type name {name!r}: use an upper-case identifier (it names C functions)")
    if name in HINGE_TYPE_TABLE:
        raise ValueError(f"hinge type {name!r} is already registered")
    unknown = [s for s in subhinges or () if s not in SUBHINGE_TYPES]
    if unknown:
        raise ValueError(f"hinge type {name!r}: unknown subhinge type(s) {', '.join(unknown)} "
                         f"(known: {', '.join(SUBHINGE_TYPES)})")


def register(name, subhinges, summary, defaults, bind) -> HingeType:
    """Add a hinge type with its own binder: ``bind(**params) -> HingeSpec``, ``defaults`` its parameters
    and their defaults (``subhinges`` None when the binder chooses them, as CUSTOM).  ``ValueError`` if the
    name is taken, not an upper-case identifier, or names an unknown subhinge type."""
    _check_new(name, subhinges)
    ht = HingeType(name, tuple(subhinges) if subhinges is not None else None, summary, dict(defaults), bind)
    HINGE_TYPE_TABLE[name] = ht
    return ht


def register_hinge_type(name, subhinges, summary, axes=(), pitch=None, q_order=None, u_order=None) -> HingeType:
    """Add a hinge type made of a fixed subhinge sequence (onode -> pnode).  ``axes``: the default axis of
    each axis-bearing subhinge (the parameter is ``axis`` when they are all equal, else ``axes``); ``pitch``:
    the default pitch when a subhinge takes one; ``q_order`` / ``u_order``: hinge index of each coordinate /
    speed in subhinge order (default: subhinge order)."""
    _check_new(name, subhinges)
    n_axes = sum(SUBHINGE_TYPES[s].has_axis for s in subhinges)
    if len(axes) != n_axes:
        raise ValueError(f"hinge type {name!r}: {n_axes} axis-bearing subhinge(s) need {n_axes} default axes, "
                         f"got {len(axes)}")
    if pitch is None and any(SUBHINGE_TYPES[s].has_pitch for s in subhinges):
        raise ValueError(f"hinge type {name!r}: a subhinge takes a pitch; give its default pitch")
    allowed, bind = _fixed(name, tuple(subhinges), tuple(axes), pitch=pitch, q_order=q_order, u_order=u_order)
    return register(name, subhinges, summary, allowed, bind)


# --------------------------------------------------------------------------------------------------
# validation helpers
# --------------------------------------------------------------------------------------------------

def check_axis(value, where: str) -> tuple:
    try:
        a = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"{where}: expected 3 numbers, got {value!r}") from None
    if a.shape != (3,):
        raise ValueError(f"{where}: expected a 3-vector, got shape {a.shape} ({value!r})")
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{where}: axis has non-finite entries {a.tolist()}")
    n = float(np.linalg.norm(a))
    if n == 0.0:
        raise ValueError(f"{where}: axis is zero")
    if abs(n - 1.0) > 1e-9:
        raise ValueError(f"{where}: axis {a.tolist()} is not unit (|a| = {n:.12g}); pass a / |a|")
    return tuple(float(x) for x in a)


def check_pitch(value, where: str) -> float:
    try:
        p = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{where}: expected a number, got {value!r}") from None
    if not math.isfinite(p):
        raise ValueError(f"{where}: pitch must be finite, got {p}")
    return p


def _check_no_repeated_axes(name: str, subs: list) -> None:
    for k in range(1, len(subs)):
        a, b = subs[k - 1], subs[k]
        if a.type == b.type and a.axis is not None and b.axis is not None and a.anchor == b.anchor:
            if np.linalg.norm(np.cross(a.axis, b.axis)) < 1e-9:
                raise ValueError(f"{name}: axes of subhinges {k - 1} and {k} ({a.type}) are parallel "
                                 f"({a.axis}, {b.axis}); the hinge would never have full rank")


def _take(name: str, given: dict, allowed: dict) -> dict:
    unknown = sorted(set(given) - set(allowed))
    if unknown:
        ok = ", ".join(allowed) or "none"
        raise ValueError(f"{name}: unknown parameter(s) {', '.join(unknown)} (accepted: {ok})")
    return {k: given.get(k, v) for k, v in allowed.items()}


def _spec(name, subs, params=None, q_order=None, u_order=None, bound=()) -> HingeSpec:
    _check_no_repeated_axes(name, subs)
    nq = sum(s.info.nq for s in subs)
    nu = sum(s.info.nu for s in subs)
    if params is None:
        axes = np.column_stack([np.asarray(s.axis if s.axis is not None else (0.0, 0.0, 0.0)) for s in subs]) \
            if subs else np.zeros((3, 0))
        params = HingeParams(IDENTITY_Q, IDENTITY_Q, tuple(tuple(float(x) for x in row) for row in axes))
    return HingeSpec(name, tuple(subs), tuple(q_order or range(nq)), tuple(u_order or range(nu)), params,
                     tuple(bound))


def _bound_items(given: dict) -> tuple:
    return tuple(sorted((k, v if not isinstance(v, np.ndarray) else v.tolist()) for k, v in given.items()))


# --------------------------------------------------------------------------------------------------
# binders
# --------------------------------------------------------------------------------------------------

def _fixed(name: str, subhinges: tuple, axes: tuple, pitch=None, params_fn=None, q_order=None, u_order=None):
    """Binder for a hinge with a fixed subhinge list: parameters ``axis`` (one axis, shared by every
    axis-bearing subhinge) or ``axes`` (one per axis-bearing subhinge), ``pitch`` for a SCREW."""
    n_axes = sum(SUBHINGE_TYPES[s].has_axis for s in subhinges)
    allowed = {}
    if n_axes == 1 or (n_axes > 1 and len(set(axes)) == 1):
        allowed["axis"] = axes[0]
    elif n_axes > 1:
        allowed["axes"] = axes
    if pitch is not None:
        allowed["pitch"] = pitch

    def bind(**given):
        p = _take(name, given, allowed)
        if "axis" in p:
            ax = [check_axis(p["axis"], f"{name}: parameter 'axis'")] * n_axes
        elif "axes" in p:
            raw = p["axes"]
            try:
                raw = list(raw)
            except TypeError:
                raise ValueError(f"{name}: parameter 'axes' must be a list of {n_axes} axes") from None
            if len(raw) != n_axes:
                raise ValueError(f"{name}: parameter 'axes' needs {n_axes} axes, got {len(raw)}")
            ax = [check_axis(a, f"{name}: parameter 'axes'[{i}]") for i, a in enumerate(raw)]
        else:
            ax = []
        pit = check_pitch(p["pitch"], f"{name}: parameter 'pitch'") if "pitch" in p else None
        subs, it = [], iter(ax)
        for s in subhinges:
            info = SUBHINGE_TYPES[s]
            subs.append(BoundSubhinge(s, next(it) if info.has_axis else None, pit if info.has_pitch else None))
        return _spec(name, subs, q_order=q_order, u_order=u_order, bound=_bound_items(given))

    return allowed, bind


def _with_params(name: str, subhinges: tuple, params_fn, takes_ij_q: bool):
    allowed = {"ij_q": inspect.signature(params_fn).parameters["ij_q"].default} if takes_ij_q else {}

    def bind(**given):
        p = _take(name, given, allowed)
        try:
            params = params_fn(p["ij_q"]) if takes_ij_q else params_fn()
        except ValueError as e:
            raise ValueError(f"{name}: parameter 'ij_q': {e}") from None
        cols = params.axes_matrix.T
        subs = []
        for s, col in zip(subhinges, cols):
            info = SUBHINGE_TYPES[s]
            subs.append(BoundSubhinge(s, tuple(float(x) for x in col) if info.has_axis else None))
        return _spec(name, subs, params=params, bound=_bound_items(given))

    return allowed, bind


_CUSTOM_DEFAULT = ("LINEAR", "LINEAR", "PIN")


def _bind_custom(**given):
    name = "CUSTOM"
    p = _take(name, given, {"subhinges": _CUSTOM_DEFAULT, "axes": None, "pitch": DEFAULT_PITCH})
    raw = p["subhinges"]
    if isinstance(raw, str) or not hasattr(raw, "__iter__"):
        raise ValueError(f"{name}: parameter 'subhinges' must be a list of subhinge type names, got {raw!r}")
    types = []
    for i, s in enumerate(raw):
        key = str(s).upper() if isinstance(s, str) else None
        if key not in SUBHINGE_TYPES:
            raise ValueError(f"{name}: parameter 'subhinges'[{i}]: unknown subhinge type {s!r} "
                             f"(known: {', '.join(SUBHINGE_TYPES)})")
        types.append(key)
    axis_idx = [i for i, t in enumerate(types) if SUBHINGE_TYPES[t].has_axis]
    if p["axes"] is None:
        axes = {i: (X, Y, Z)[j % 3] for j, i in enumerate(axis_idx)}
    else:
        raw_axes = list(p["axes"])
        if len(raw_axes) != len(types):
            raise ValueError(f"{name}: parameter 'axes' needs one entry per subhinge ({len(types)}; None for "
                             f"subhinges without an axis), got {len(raw_axes)}")
        axes = {}
        for i, t in enumerate(types):
            if SUBHINGE_TYPES[t].has_axis:
                if raw_axes[i] is None:
                    raise ValueError(f"{name}: parameter 'axes'[{i}]: {t} needs an axis")
                axes[i] = check_axis(raw_axes[i], f"{name}: parameter 'axes'[{i}]")
            elif raw_axes[i] is not None:
                raise ValueError(f"{name}: parameter 'axes'[{i}]: {t} takes no axis (use None)")
    pitch = p["pitch"]
    pitches = list(pitch) if isinstance(pitch, (list, tuple)) else [pitch] * len(types)
    if len(pitches) != len(types):
        raise ValueError(f"{name}: parameter 'pitch' needs one entry per subhinge or a single number")
    subs = []
    for i, t in enumerate(types):
        info = SUBHINGE_TYPES[t]
        pit = check_pitch(pitches[i], f"{name}: parameter 'pitch'[{i}]") if info.has_pitch else None
        subs.append(BoundSubhinge(t, axes.get(i), pit))
    return _spec(name, subs, bound=_bound_items(given))


#: MuJoCo's joint type names, accepted for a compound hinge's subhinges
JOINT_ALIASES = {"HINGE": "PIN", "SLIDE": "LINEAR", "BALL": "SPHERICAL_QUAT"}
_SERIAL_KEYS = ("type", "axis", "anchor", "ref", "pitch", "name")
#: the compound hinge's default: two turns about different lines (anchors) and a slide, two with a ref
_SERIAL_DEFAULT = ({"type": "PIN", "axis": X, "anchor": (0.0, 0.0, 0.1), "ref": 0.2},
                   {"type": "PIN", "axis": Y, "anchor": (0.1, 0.0, 0.0)},
                   {"type": "LINEAR", "axis": Z, "ref": 0.05})


def _bind_serial(**given):
    """The compound hinge: one hinge made of several subhinges in series (MuJoCo's several joints in one body,
    Karana's compound hinge), each about its own anchor and axis.  ``joints``: a list of mappings
    ``{type, axis, anchor, ref, pitch, name}`` in order, onode -> pnode: ``type`` a subhinge type (or MuJoCo's
    ``hinge``, ``slide``, ``ball``); ``axis`` for the axis-bearing ones (default z); ``anchor`` the point the
    subhinge turns about, in the body frame at the reference pose (default the origin; it has no effect on a
    subhinge that does not rotate, and is dropped there); ``ref`` the coordinate of the reference pose for a
    one-coordinate subhinge (MuJoCo's joint ``ref``: the subhinge moves by ``Q - ref``); ``pitch`` for a SCREW;
    ``name`` a label only.  The subhinge moves as ``T(anchor) X(Q - ref) T(-anchor)``."""
    name = "SERIAL"
    p = _take(name, given, {"joints": _SERIAL_DEFAULT})
    raw = p["joints"]
    if isinstance(raw, (str, dict)) or not hasattr(raw, "__iter__") or not list(raw):
        raise ValueError(f"{name}: parameter 'joints' must be a non-empty list of mappings {{type, axis, anchor, "
                         f"ref, pitch}}, got {raw!r}")
    subs = []
    for i, j in enumerate(raw):
        where = f"{name}: parameter 'joints'[{i}]"
        if not isinstance(j, dict) or "type" not in j:
            raise ValueError(f"{where}: expected a mapping with 'type' (and axis, anchor, ref, pitch), got {j!r}")
        unknown = sorted(str(k) for k in j if k not in _SERIAL_KEYS)
        if unknown:
            raise ValueError(f"{where}: unknown key(s) {', '.join(unknown)} (accepted: {', '.join(_SERIAL_KEYS)})")
        key = str(j["type"]).upper() if isinstance(j["type"], str) else None
        key = JOINT_ALIASES.get(key, key)
        if key not in SUBHINGE_TYPES:
            raise ValueError(f"{where}: unknown subhinge type {j['type']!r} (known: {', '.join(SUBHINGE_TYPES)}, "
                             f"or MuJoCo's hinge, slide, ball)")
        info = SUBHINGE_TYPES[key]
        axis = None
        if info.has_axis:
            axis = check_axis(j.get("axis", Z), f"{where}: 'axis'")
        elif j.get("axis") is not None:
            raise ValueError(f"{where}: {key} takes no axis")
        pitch = check_pitch(j.get("pitch", DEFAULT_PITCH), f"{where}: 'pitch'") if info.has_pitch else None
        anchor = None
        if j.get("anchor") is not None:
            a = np.asarray(j["anchor"], dtype=float) if not isinstance(j["anchor"], str) else None
            if a is None or a.shape != (3,) or not np.all(np.isfinite(a)):
                raise ValueError(f"{where}: 'anchor' must be 3 finite numbers, got {j['anchor']!r}")
            if info.rotation is not None and np.any(a != 0):
                anchor = tuple(float(x) for x in a)
        ref = None
        if j.get("ref") is not None:
            if info.nq != 1:
                raise ValueError(f"{where}: 'ref' needs a one-coordinate subhinge, {key} has {info.nq}")
            r = check_pitch(j["ref"], f"{where}: 'ref'")
            ref = r if r != 0.0 else None
        subs.append(BoundSubhinge(key, axis, pitch, anchor, ref))
    return _spec(name, subs, bound=_bound_items(given))


# --------------------------------------------------------------------------------------------------
# the table
# --------------------------------------------------------------------------------------------------

_simple = register_hinge_type


def _karana(name, subhinges, summary, params_fn, takes_ij_q):
    allowed, bind = _with_params(name, tuple(subhinges), params_fn, takes_ij_q)
    register(name, subhinges, summary, allowed, bind)


_simple("LOCKED", ["LOCKED"], "no relative motion")
_simple("PIN", ["PIN"], "rotation about one axis", [Z])
_simple("UJOINT", ["PIN", "PIN"], "two successive rotations", [X, Y])
_simple("GIMBAL", ["PIN", "PIN", "PIN"], "body-fixed X-Y-Z rotations", [X, Y, Z])
_simple("BALL", ["SPHERICAL"], "rotation vector coordinates, U = w in pframe")
_simple("BALL_QUAT", ["SPHERICAL_QUAT"], "unit quaternion coordinates, U = w in pframe")
_simple("SLIDER", ["LINEAR"], "translation along one axis", [Z])
_simple("PLANAR", ["LINEAR", "LINEAR"], "translation in a plane", [X, Y])
_simple("TRANSLATIONAL", ["LINEAR", "LINEAR", "LINEAR"], "translation along three axes", [X, Y, Z])
_simple("FULL6DOF", ["LINEAR3", "SPHERICAL_QUAT"], "Q = [x y z qx qy qz qw], U = [p_dot in oframe; w in pframe]")
_simple("CYLINDRICAL", ["LINEAR", "PIN"], "translation along and rotation about the same axis", [Z, Z])
_simple("HELICAL", ["SCREW"], "screw motion: translation = pitch * angle", [Z], pitch=DEFAULT_PITCH)
_karana("HOOKE", ["PIN", "PIN"], "outboard Y stays perpendicular to inboard X", hooke_hinge_params, True)
_karana("INLINE", ["LINEAR", "SPHERICAL"], "outboard origin moves along inboard Z", inline_hinge_params, False)
_karana("INPLANE", ["LINEAR", "LINEAR", "SPHERICAL"], "outboard origin moves in inboard XY plane",
        inplane_hinge_params, False)
_karana("PERPENDICULAR", ["LINEAR3", "PIN", "PIN"], "outboard Z stays perpendicular to inboard Z",
        perpendicular_hinge_params, True)
_karana("PARALLEL", ["LINEAR3", "PIN"], "outboard Z stays parallel to inboard Z", parallel_hinge_params, True)
register("CUSTOM", None, "user list of subhinge types and axes",
         {"subhinges": _CUSTOM_DEFAULT, "axes": None, "pitch": DEFAULT_PITCH}, _bind_custom)
register("SERIAL", None, "compound hinge: subhinges in series, each about its own anchor and axis, with a ref "
         "(MuJoCo's several joints in one body)", {"joints": _SERIAL_DEFAULT}, _bind_serial)
# Simbody Bushing: Q = (qx, qy, qz, px, py, pz), U = Q_dot; translate by p in the inboard frame, then
# body-fixed X-Y-Z rotations.  Subhinge order is LINEAR3, PIN x, PIN y, PIN z, so the hinge's Q index of
# subhinge-ordered coordinate j is (3, 4, 5, 0, 1, 2)[j].
_simple("BUSHING", ["LINEAR3", "PIN", "PIN", "PIN"],
        "Simbody Bushing: Q = (qx, qy, qz, px, py, pz); translate by p, then body-fixed X-Y-Z; U = Q_dot",
        [X, Y, Z], q_order=(3, 4, 5, 0, 1, 2), u_order=(3, 4, 5, 0, 1, 2))

#: hinge types that are named in DESIGN.md but not implemented yet
PLANNED_HINGE_TYPES = {"COMPOUND": "constraint-embedded compound bodies (planned)"}
