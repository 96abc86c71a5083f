"""The subhinge catalogue (DESIGN.md §3).

A subhinge type is one small definition, :class:`SubhingeType`: its coordinate counts, whether it takes an
axis / pitch, the facts the rest of symgen needs about its motion and coordinates (does it rotate, about its
axis only or freely; does it translate; does Q need sanitizing and how; the neutral Q; how to draw a random
valid Q), and a ``kinematics`` function giving, for its own symbols, the relative rotation ``R_op``,
translation ``l_op``, the constant pframe coord map ``H`` (6 x nU) and the qdot map ``N`` (nQ x nU).
Every catalogue subhinge has a *constant* pframe coord map: its motion subspace is invariant under its own
motion.  That is what lets :mod:`symgen.hinges.derive` build the hinge coord map, its time derivative and the bias
term in closed form.

:func:`register_subhinge` adds one (see :func:`symgen.hinges.temporary_types` to add one for a while).
"""
from __future__ import annotations

import hashlib
import inspect
import json
import re
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Callable, Optional

import numpy as np

if TYPE_CHECKING:  # annotations only
    import sympy as sp

# sympy is imported inside the kinematics functions: binding parameters (and so validating a model file)
# does not need it.

#: values of :attr:`SubhingeType.rotation`
ROTATION_KINDS = (None, "axis", "free")


@dataclass(frozen=True)
class SubhingeKinematics:
    """What a subhinge's ``kinematics(q, axis, pitch)`` returns (sympy, in the subhinge's own symbols)."""

    R: sp.Matrix            # 3x3, R_op(Q)
    l: sp.Matrix            # 3x1, l_op(Q) in the oframe
    H: sp.Matrix            # 6 x nU, constant pframe coord map
    N: sp.Matrix            # nQ x nU, Qdot = N U


def _uniform_q(nq):
    def draw(rng, max_angle):
        return rng.uniform(-1, 1, nq)
    return draw


@dataclass(frozen=True)
class SubhingeType:
    """One subhinge type of the catalogue.

    * ``kinematics(q, axis, pitch) -> SubhingeKinematics``: ``q`` its nQ symbols, ``axis`` a sympy 3-vector
      (None unless ``has_axis``), ``pitch`` a sympy number (None unless ``has_pitch``);
    * ``rotation``: None (``R_op = I``), ``"axis"`` (``R_op`` turns about the bound axis only, so
      ``log R_op`` stays parallel to it: PIN, SCREW) or ``"free"`` (any rotation: SPHERICAL);
    * ``translates``: ``l_op`` depends on Q.  Pure translations (``rotation`` None) and pure rotations
      (``translates`` False) give the hinge's ortho complement its structural form;
    * ``sanitize(q) -> sympy nQ x 1``: equivalent coordinates (same pose, U unchanged), or None when every
      Q is already canonical;
    * ``neutral_q``: the Q of the reference pose (``R_op = I``, ``l_op = 0``);
    * ``random_q(rng, max_angle) -> numpy (nQ,)``: a random valid Q, rotation angles below ``max_angle``
      (what tests and samplers draw).
    """

    name: str
    nq: int
    nu: int
    has_axis: bool
    has_pitch: bool
    q_meaning: str
    kinematics: Callable[..., SubhingeKinematics] = field(repr=False)
    rotation: Optional[str] = None
    translates: bool = False
    sanitize: Optional[Callable] = field(default=None, repr=False)
    neutral_q: tuple = None
    random_q: Callable = field(default=None, repr=False)

    def __post_init__(self):
        if self.neutral_q is None:
            object.__setattr__(self, "neutral_q", (0.0,) * self.nq)
        if self.random_q is None:
            object.__setattr__(self, "random_q", _uniform_q(self.nq))

    @property
    def pure_rotation(self) -> bool:
        """Whether the subhinge rotates and never translates (``rotation`` set, ``l_op = 0``)."""
        return self.rotation is not None and not self.translates

    @property
    def pure_translation(self) -> bool:
        """Whether the subhinge translates and never rotates (``R_op = I``, ``l_op`` depends on Q)."""
        return self.rotation is None and self.translates

    @cached_property
    def fingerprint(self) -> str:
        """Hash of the whole definition (facts and the functions' source): part of every cache key of a
        hinge using this type, so two definitions under one name never share a cached derivation."""
        facts = [self.name, self.nq, self.nu, self.has_axis, self.has_pitch, self.rotation, self.translates,
                 list(self.neutral_q)]
        text = json.dumps(facts) + "".join(_definition_text(f) for f in (self.kinematics, self.sanitize))
        return hashlib.sha256(text.encode()).hexdigest()[:16]


def _definition_text(fn, depth=0) -> str:
    """A function's source (or code), defaults and closure values: what its result depends on besides
    module globals."""
    if fn is None:
        return "None"
    if not callable(fn) or depth > 3:
        return repr(fn)
    try:
        src = inspect.getsource(fn)
    except (OSError, TypeError):
        code = getattr(fn, "__code__", None)
        src = code.co_code.hex() + repr(code.co_consts) if code else repr(fn)
    cells = []
    for c in getattr(fn, "__closure__", None) or ():
        try:
            cells.append(_definition_text(c.cell_contents, depth + 1))
        except ValueError:  # an empty cell
            cells.append("<empty>")
    return src + repr(getattr(fn, "__defaults__", None)) + "".join(cells)


SUBHINGE_TYPES: dict[str, SubhingeType] = {}


def register_subhinge(name: str, nq: int, nu: int, kinematics: Callable, *, has_axis: bool = False,
                      has_pitch: bool = False, q_meaning: str = "", rotation: Optional[str] = None,
                      translates: bool = False, sanitize: Optional[Callable] = None, neutral_q=None,
                      random_q: Optional[Callable] = None) -> SubhingeType:
    """Add a subhinge type to :data:`SUBHINGE_TYPES` (see :class:`SubhingeType` for the arguments).

    ``neutral_q`` defaults to zeros and ``random_q`` to uniform in (-1, 1): give them when not every Q in
    R^nQ is valid.  ``ValueError`` if the name is taken or not an upper-case identifier, or if ``rotation``
    is ``"axis"`` without an axis."""
    if not re.fullmatch(r"[A-Z][A-Z0-9_]*", str(name)):
        raise ValueError(f"subhinge type name {name!r}: use an upper-case identifier")
    if name in SUBHINGE_TYPES:
        raise ValueError(f"subhinge type {name!r} is already registered")
    if rotation not in ROTATION_KINDS:
        raise ValueError(f"subhinge type {name!r}: rotation must be one of {ROTATION_KINDS}, got {rotation!r}")
    if rotation == "axis" and not has_axis:
        raise ValueError(f"subhinge type {name!r}: rotation 'axis' needs has_axis=True")
    neutral = None if neutral_q is None else tuple(float(x) for x in neutral_q)
    if neutral is not None and len(neutral) != nq:
        raise ValueError(f"subhinge type {name!r}: neutral_q needs {nq} entries, got {len(neutral)}")
    info = SubhingeType(name, nq, nu, has_axis, has_pitch, q_meaning, kinematics, rotation, translates,
                        sanitize, neutral, random_q)
    SUBHINGE_TYPES[name] = info
    return info


def _subhinge(name, nq, nu, **facts):
    """Decorator form of :func:`register_subhinge` for the catalogue below."""
    def deco(fn):
        register_subhinge(name, nq, nu, fn, **facts)
        return fn
    return deco


def _sym():
    import sympy as sp

    from ..symbolic import spatial as S

    return sp, S


def _axis_col(axis):
    sp, _ = _sym()
    return sp.Matrix(axis)


# ---- random valid coordinates (what tests draw)

def _angle(rng, max_angle):
    return rng.uniform(-max_angle, max_angle, 1)


def _rotation_vector(rng, max_angle):
    v = rng.normal(size=3)
    return v / np.linalg.norm(v) * rng.uniform(0.05, max_angle)


def _unit_quaternion(rng, max_angle):
    v = rng.normal(size=4)
    return v / np.linalg.norm(v)


# ---- sanitizing

def _rotation_vector_sanitize(q):
    """|r| > pi: r -> r (1 - 2 pi k / |r|), k = round(|r| / 2 pi): same rotation, |r| <= pi."""
    sp, _ = _sym()
    r = sp.Matrix(q)
    theta = sp.sqrt((r.T * r)[0])
    k = sp.floor(theta / (2 * sp.pi) + sp.Rational(1, 2))
    return r * sp.Piecewise((1 - 2 * sp.pi * k / theta, theta > sp.pi), (1, True))


def _normalize(q):
    sp, _ = _sym()
    qq = sp.Matrix(q)
    return qq / sp.sqrt((qq.T * qq)[0])


# ---- the catalogue

@_subhinge("LOCKED", 0, 0, q_meaning="-", random_q=lambda rng, max_angle: np.zeros(0))
def _locked(q, axis=None, pitch=None):
    sp, S = _sym()
    return SubhingeKinematics(sp.eye(3), sp.zeros(3, 1), sp.zeros(6, 0), sp.zeros(0, 0))


@_subhinge("PIN", 1, 1, has_axis=True, q_meaning="angle", rotation="axis", random_q=_angle)
def _pin(q, axis, pitch=None):
    sp, S = _sym()
    a = _axis_col(axis)
    return SubhingeKinematics(S.rot_axis(a, q[0]), sp.zeros(3, 1), a.col_join(sp.zeros(3, 1)), sp.eye(1))


@_subhinge("LINEAR", 1, 1, has_axis=True, q_meaning="distance", translates=True)
def _linear(q, axis, pitch=None):
    sp, S = _sym()
    a = _axis_col(axis)
    return SubhingeKinematics(sp.eye(3), a * q[0], sp.zeros(3, 1).col_join(a), sp.eye(1))


@_subhinge("SCREW", 1, 1, has_axis=True, has_pitch=True, q_meaning="angle (translation = pitch * angle)",
           rotation="axis", translates=True, random_q=_angle)
def _screw(q, axis, pitch):
    sp, S = _sym()
    a = _axis_col(axis)
    return SubhingeKinematics(S.rot_axis(a, q[0]), a * (pitch * q[0]), a.col_join(pitch * a), sp.eye(1))


@_subhinge("LINEAR3", 3, 3, q_meaning="position x, y, z", translates=True)
def _linear3(q, axis=None, pitch=None):
    sp, S = _sym()
    return SubhingeKinematics(sp.eye(3), sp.Matrix(q), sp.zeros(3).col_join(sp.eye(3)), sp.eye(3))


@_subhinge("SPHERICAL", 3, 3, q_meaning="rotation vector r (U = w in pframe)", rotation="free",
           sanitize=_rotation_vector_sanitize, random_q=_rotation_vector)
def _spherical(q, axis=None, pitch=None):
    sp, S = _sym()
    r = sp.Matrix(q)
    return SubhingeKinematics(S.rotvec_exp(r), sp.zeros(3, 1), sp.eye(3).col_join(sp.zeros(3)),
                              S.rotvec_jr_inv(r))


@_subhinge("SPHERICAL_QUAT", 4, 3, q_meaning="unit quaternion (x, y, z, w) (U = w in pframe)", rotation="free",
           sanitize=_normalize, neutral_q=(0.0, 0.0, 0.0, 1.0), random_q=_unit_quaternion)
def _spherical_quat(q, axis=None, pitch=None):
    sp, S = _sym()
    return SubhingeKinematics(S.quat_to_matrix(q), sp.zeros(3, 1), sp.eye(3).col_join(sp.zeros(3)),
                              S.quat_xi(q) / 2)
