"""The subhinge catalogue (DESIGN.md §3).

A subhinge type is one small definition: its coordinate counts, whether it takes an axis / pitch, and a
function giving, for its own symbols, the relative rotation ``R_op``, translation ``l_op``, the constant
pframe coord map ``H`` (6 x nU), the qdot map ``N`` (nQ x nU) and, where the coordinates need it, a
``sanitize`` expression.  Every catalogue subhinge has a *constant* pframe coord map: its motion subspace
is invariant under its own motion.  That is what lets :mod:`symgen.derive` build the hinge coord map,
its time derivative and the bias term in closed form.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Optional

if TYPE_CHECKING:  # annotations only
    import sympy as sp

# sympy is imported inside the kinematics functions: binding parameters (and so validating a model file)
# does not need it.


@dataclass(frozen=True)
class SubhingeKinematics:
    R: sp.Matrix            # 3x3, R_op(Q)
    l: sp.Matrix            # 3x1, l_op(Q) in the oframe
    H: sp.Matrix            # 6 x nU, constant pframe coord map
    N: sp.Matrix            # nQ x nU, Qdot = N U
    sanitize: Optional[sp.Matrix] = None  # nQ x 1 replacement for Q, or None
    rotational: int = 0     # number of rotational directions (0, 1 or 3)
    translational: int = 0  # number of pure translation directions (0, 1 or 3)


@dataclass(frozen=True)
class SubhingeType:
    name: str
    nq: int
    nu: int
    has_axis: bool
    has_pitch: bool
    q_meaning: str
    kinematics: Callable[..., SubhingeKinematics] = field(repr=False)


SUBHINGE_TYPES: dict[str, SubhingeType] = {}


def _register(name, nq, nu, has_axis, has_pitch, q_meaning):
    def deco(fn):
        SUBHINGE_TYPES[name] = SubhingeType(name, nq, nu, has_axis, has_pitch, q_meaning, fn)
        return fn
    return deco


def _sym():
    import sympy as sp

    from .. import spatial as S

    return sp, S


def _axis_col(axis):
    sp, _ = _sym()
    return sp.Matrix(axis)


@_register("LOCKED", 0, 0, False, False, "-")
def _locked(q, axis=None, pitch=None):
    sp, S = _sym()
    return SubhingeKinematics(sp.eye(3), sp.zeros(3, 1), sp.zeros(6, 0), sp.zeros(0, 0))


@_register("PIN", 1, 1, True, False, "angle")
def _pin(q, axis, pitch=None):
    sp, S = _sym()
    a = _axis_col(axis)
    return SubhingeKinematics(S.rot_axis(a, q[0]), sp.zeros(3, 1), a.col_join(sp.zeros(3, 1)), sp.eye(1),
                              rotational=1)


@_register("LINEAR", 1, 1, True, False, "distance")
def _linear(q, axis, pitch=None):
    sp, S = _sym()
    a = _axis_col(axis)
    return SubhingeKinematics(sp.eye(3), a * q[0], sp.zeros(3, 1).col_join(a), sp.eye(1), translational=1)


@_register("SCREW", 1, 1, True, True, "angle (translation = pitch * angle)")
def _screw(q, axis, pitch):
    sp, S = _sym()
    a = _axis_col(axis)
    return SubhingeKinematics(S.rot_axis(a, q[0]), a * (pitch * q[0]), a.col_join(pitch * a), sp.eye(1))


@_register("LINEAR3", 3, 3, False, False, "position x, y, z")
def _linear3(q, axis=None, pitch=None):
    sp, S = _sym()
    return SubhingeKinematics(sp.eye(3), sp.Matrix(q), sp.zeros(3).col_join(sp.eye(3)), sp.eye(3),
                              translational=3)


@_register("SPHERICAL", 3, 3, False, False, "rotation vector r (U = w in pframe)")
def _spherical(q, axis=None, pitch=None):
    sp, S = _sym()
    r = sp.Matrix(q)
    theta = sp.sqrt((r.T * r)[0])
    # |r| > pi: r -> r (1 - 2 pi k / |r|), k = round(|r| / 2 pi): same rotation, |r| <= pi.
    k = sp.floor(theta / (2 * sp.pi) + sp.Rational(1, 2))
    factor = sp.Piecewise((1 - 2 * sp.pi * k / theta, theta > sp.pi), (1, True))
    return SubhingeKinematics(S.rotvec_exp(r), sp.zeros(3, 1), sp.eye(3).col_join(sp.zeros(3)),
                              S.rotvec_jr_inv(r), sanitize=r * factor, rotational=3)


@_register("SPHERICAL_QUAT", 4, 3, False, False, "unit quaternion (x, y, z, w) (U = w in pframe)")
def _spherical_quat(q, axis=None, pitch=None):
    sp, S = _sym()
    qq = sp.Matrix(q)
    norm = sp.sqrt((qq.T * qq)[0])
    return SubhingeKinematics(S.quat_to_matrix(q), sp.zeros(3, 1), sp.eye(3).col_join(sp.zeros(3)),
                              S.quat_xi(q) / 2, sanitize=qq / norm, rotational=3)
