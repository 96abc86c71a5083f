"""Karana-style hinge parameter helpers.

``HingeParams(i2onode_q, j2pnode_q, axes)``: the onode orientation in the inboard body frame i, the pnode
orientation in the outboard body frame j (unit quaternions ``(x, y, z, w)``), and the 3 x m matrix of
subhinge axes expressed in the subhinges' own frames (a zero column for subhinges without an axis).

``ij_q`` is the orientation of the outboard frame j in the inboard frame i in the reference configuration
(``R_ij = R(ij_q)`` maps j coordinates to i coordinates).  The helpers place the onode on i's axes and
choose the pnode so that onode and pnode coincide at ``Q = 0``; the second axis is then the constrained
outboard axis expressed in the pnode.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..numeric import np_quat_to_matrix

IDENTITY_Q = (0.0, 0.0, 0.0, 1.0)
#: default ``ij_q`` of PERPENDICULAR: outboard frame turned 90 deg about inboard Y (outboard Z = inboard X)
QUARTER_TURN_Y = (0.0, 0.7071067811865476, 0.0, 0.7071067811865476)
_EX, _EY, _EZ = np.eye(3)
_ORTHO_TOL = 1e-9


@dataclass(frozen=True)
class HingeParams:
    """Karana hinge parameters: ``i2onode_q``, the onode's orientation in the inboard body frame, and ``j2pnode_q``,
    the pnode's in the outboard body frame (unit quaternions ``(x, y, z, w)``); ``axes``, the 3 x m subhinge axes
    in the subhinges' own frames, as a tuple of rows (a zero column for a subhinge without an axis)."""
    i2onode_q: tuple
    j2pnode_q: tuple
    axes: tuple  # 3 x m, as a tuple of rows

    @property
    def axes_matrix(self) -> np.ndarray:
        """``axes`` as a 3 x m float array (column k: subhinge k's axis)."""
        return np.array(self.axes, dtype=float).reshape(3, -1)


def unit_quaternion(q, where: str) -> np.ndarray:
    """Validate a unit quaternion ``(x, y, z, w)``; ``where`` names the hinge and parameter in errors."""
    try:
        arr = np.asarray(q, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"{where}: expected a quaternion (x, y, z, w) of 4 numbers, got {q!r}") from None
    if arr.shape != (4,) or not np.all(np.isfinite(arr)):
        raise ValueError(f"{where}: expected a quaternion (x, y, z, w) of 4 finite numbers, got {q!r}")
    if abs(np.linalg.norm(arr) - 1.0) > 1e-9:
        raise ValueError(f"{where}: quaternion {arr.tolist()} is not unit (|q| = {np.linalg.norm(arr):.6g}); "
                         "normalize it first")
    return arr


def _conj(q: np.ndarray) -> tuple:
    return (-q[0], -q[1], -q[2], q[3])


def _clean(v: np.ndarray) -> tuple:
    """Round away float noise (|x| < 1e-15 -> 0, near +-1 -> +-1) so axes stay exact where they can."""
    out = []
    for x in np.asarray(v, dtype=float).ravel():
        for exact in (0.0, 1.0, -1.0):
            if abs(x - exact) < 1e-15:
                x = exact
        out.append(float(x))
    return tuple(out)


def _params(i2o, j2p, columns) -> HingeParams:
    axes = np.column_stack([np.asarray(c, dtype=float) for c in columns])
    return HingeParams(_clean(i2o), _clean(j2p), tuple(_clean(row) for row in axes))


def hooke_hinge_params(ij_q=IDENTITY_Q) -> HingeParams:
    """HOOKE: PIN about inboard X, then PIN about the outboard Y axis; outboard Y stays perpendicular to
    inboard X.  Requires ``R_ij e_y`` perpendicular to ``e_x`` in the reference configuration."""
    q = unit_quaternion(ij_q, "hooke_hinge_params: ij_q")
    Rij = np_quat_to_matrix(q)
    b = Rij @ _EY
    if abs(b @ _EX) > _ORTHO_TOL:
        raise ValueError("hooke_hinge_params: ij_q puts the outboard Y axis at "
                         f"{np.degrees(np.arccos(np.clip(b @ _EX, -1, 1))):.6g} deg to the inboard X axis; "
                         "a Hooke joint needs them perpendicular")
    return _params(IDENTITY_Q, _conj(q), [_EX, b])


def inline_hinge_params() -> HingeParams:
    """INLINE: LINEAR along inboard Z then SPHERICAL; the outboard origin moves along inboard Z."""
    return _params(IDENTITY_Q, IDENTITY_Q, [_EZ, np.zeros(3)])


def inplane_hinge_params() -> HingeParams:
    """INPLANE: LINEAR X, LINEAR Y then SPHERICAL; the outboard origin moves in the inboard XY plane."""
    return _params(IDENTITY_Q, IDENTITY_Q, [_EX, _EY, np.zeros(3)])


def perpendicular_hinge_params(ij_q=QUARTER_TURN_Y) -> HingeParams:
    """PERPENDICULAR: LINEAR3, PIN about inboard Z, PIN about outboard Z; outboard Z stays perpendicular
    to inboard Z.  Requires ``R_ij e_z`` perpendicular to ``e_z`` in the reference configuration."""
    q = unit_quaternion(ij_q, "perpendicular_hinge_params: ij_q")
    b = np_quat_to_matrix(q) @ _EZ
    if abs(b @ _EZ) > _ORTHO_TOL:
        raise ValueError("perpendicular_hinge_params: ij_q puts the outboard Z axis at "
                         f"{np.degrees(np.arccos(np.clip(b @ _EZ, -1, 1))):.6g} deg to the inboard Z axis; "
                         "it must be perpendicular")
    return _params(IDENTITY_Q, _conj(q), [np.zeros(3), _EZ, b])


def parallel_hinge_params(ij_q=IDENTITY_Q) -> HingeParams:
    """PARALLEL: LINEAR3 then PIN about Z; outboard Z stays parallel to inboard Z.  Requires
    ``R_ij e_z = +-e_z`` in the reference configuration."""
    q = unit_quaternion(ij_q, "parallel_hinge_params: ij_q")
    b = np_quat_to_matrix(q) @ _EZ
    if abs(abs(b @ _EZ) - 1.0) > _ORTHO_TOL:
        raise ValueError("parallel_hinge_params: ij_q tilts the outboard Z axis "
                         f"{np.degrees(np.arccos(np.clip(abs(b @ _EZ), -1, 1))):.6g} deg away from the "
                         "inboard Z axis; it must be parallel")
    return _params(IDENTITY_Q, _conj(q), [np.zeros(3), _EZ])
