"""Model description: a tree of rigid bodies joined by hinges (DESIGN.md §6).

Frames and poses follow DESIGN.md §2: a body's frame is where its mass properties are given (CoM and
inertia about the CoM, in body axes).  A body hangs from its parent through its hinge: the *onode* is a
frame fixed on the parent (pose ``onode`` in the parent body frame), the *pnode* a frame fixed on the body
(pose ``pnode`` in the body frame), and the hinge gives ``X_op(Q)``, so
``X_parent,body = onode * X_op(Q) * pnode^-1``.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

NEWTONIAN = "newtonian"


class ModelError(ValueError):
    """Bad model input; the message names the file, the body/joint and the field."""


@dataclass(frozen=True)
class Pose:
    """``(R, xyz)``: rotation matrix (3x3) and translation (3)."""

    R: tuple = ((1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0))
    xyz: tuple = (0.0, 0.0, 0.0)

    @property
    def matrix(self) -> np.ndarray:
        """The 4x4 homogeneous transform ``[[R, xyz], [0, 1]]``."""
        T = np.eye(4)
        T[:3, :3], T[:3, 3] = np.array(self.R), np.array(self.xyz)
        return T

    def inverse(self) -> "Pose":
        """The inverse pose, ``(R^T, -R^T xyz)``."""
        R = np.array(self.R)
        return Pose(_tup(R.T), tuple(float(x) for x in -R.T @ np.array(self.xyz)))

    def is_identity(self) -> bool:
        """Whether R is exactly the identity and xyz exactly zero (no tolerance)."""
        return np.allclose(self.R, np.eye(3), atol=0, rtol=0) and not any(self.xyz)

    @staticmethod
    def from_matrix(T) -> "Pose":
        """The pose of a 4x4 homogeneous transform: its rotation block and translation column (the last row is not
        checked)."""
        T = np.asarray(T, dtype=float)
        return Pose(_tup(T[:3, :3]), tuple(float(x) for x in T[:3, 3]))


def _tup(M) -> tuple:
    return tuple(tuple(float(x) for x in row) for row in np.asarray(M))


def rpy_matrix(rpy) -> np.ndarray:
    """URDF roll-pitch-yaw: ``R = Rz(yaw) Ry(pitch) Rx(roll)`` (fixed axes x, y, z).

    A sine or cosine within 1e-15 of 0 or +-1 is taken as exactly that: ``rpy="1.5707963267948966 0 0"``
    means a quarter turn, and ``cos`` of the decimal is 6e-17, not 0.  The exact zeros matter downstream: the
    generated code drops every term they multiply."""
    r, p, y = (float(a) for a in rpy)

    def snap(x):
        for exact in (0.0, 1.0, -1.0):
            if abs(x - exact) < 1e-15:
                return exact
        return float(x)

    cr, sr, cp, sp_, cy, sy = (snap(f(a)) for a in (r, p, y) for f in (np.cos, np.sin))
    Rx = np.array([[1, 0, 0], [0, cr, -sr], [0, sr, cr]])
    Ry = np.array([[cp, 0, sp_], [0, 1, 0], [-sp_, 0, cp]])
    Rz = np.array([[cy, -sy, 0], [sy, cy, 0], [0, 0, 1]])
    return Rz @ Ry @ Rx


@dataclass(frozen=True)
class Frame:
    """A named frame fixed on ``body`` (a body name, or ``"newtonian"``): ``pose`` is its pose in that body's frame."""
    name: str
    body: str
    pose: Pose = Pose()


@dataclass(frozen=True)
class FlexNode:
    """A lumped-mass node of a flexible body: a particle of ``mass`` at ``pos`` (body frame, undeformed)."""
    name: str
    pos: tuple
    mass: float


@dataclass(frozen=True)
class FlexMode:
    """One assumed mode of a flexible body: natural frequency (Hz), damping ratio, and its shape: the
    translation of each node (body axes) per unit modal coordinate, one 3-vector per node in ``nodes`` order."""
    frequency: float
    damping: float
    shape: tuple


@dataclass(frozen=True)
class Flex:
    """A body's flexibility (assumed modes): lumped-mass nodes on the undeformed body and its modes.  Node i
    sits at ``d_i = s_i + sum_k Phi_ik eta_k`` in the body frame (first order in the modal coordinates eta);
    mode k has stiffness ``(2 pi f_k)^2 m_k`` and damping ``2 zeta_k (2 pi f_k) m_k`` with the modal mass
    ``m_k = sum_i m_i |Phi_ik|^2``."""
    nodes: tuple
    modes: tuple = ()

    def modal_mass_matrix(self) -> list:
        """M_ee = sum_i m_i Phi_i^T Phi_i (n_modes x n_modes): the nodes' modal mass matrix."""
        return [[float(sum(n.mass * sum(a * b for a, b in zip(sa, sb))
                           for n, sa, sb in zip(self.nodes, mj.shape, ml.shape))) for ml in self.modes] for mj in self.modes]

    def modal_mass(self, k: int) -> float:
        return float(sum(n.mass * sum(x * x for x in sh) for n, sh in zip(self.nodes, self.modes[k].shape)))

    def stiffness(self, k: int) -> float:
        w = 2.0 * math.pi * self.modes[k].frequency
        return w * w * self.modal_mass(k)

    def damping(self, k: int) -> float:
        return 2.0 * self.modes[k].damping * 2.0 * math.pi * self.modes[k].frequency * self.modal_mass(k)


@dataclass(frozen=True)
class Body:
    """A body and its hinge to ``parent`` (a body name, or ``"newtonian"``): mass properties (``com`` in the body
    frame, ``inertia`` about the CoM in body axes), the hinge's name, type and parameters, the onode (in the
    parent's frame) and pnode (in this body's frame) poses; optionally ``armature``, a default Q (``q0`` or
    ``default_transform``) and ``flex`` (assumed modes)."""
    name: str
    parent: str
    mass: float
    com: tuple
    inertia: tuple              # 3x3 about the CoM, body axes
    hinge_name: str
    hinge_type: str
    hinge_params: tuple = ()    # (name, value) pairs for symgen.hinge(...)
    onode: Pose = Pose()        # onode pose in the parent body frame
    pnode: Pose = Pose()        # pnode pose in this body frame
    armature: tuple = ()        # rotor inertia added to D (and to M's diagonal), one per hinge U; () = none
    q0: tuple = ()              # the hinge's default Q (mb.default_q()); () = its neutral Q
    default_transform: Pose = None   # Simbody setDefaultTransform: the X_op whose Q (fit_q at build) is q0
    flex: Flex = None           # flexible body: lumped nodes and assumed modes (None: rigid)

    @property
    def n_modes(self) -> int:
        """Number of assumed modes of a flexible body (0 for a rigid one)."""
        return len(self.flex.modes) if self.flex else 0

    def hinge_kwargs(self) -> dict:
        """``hinge_params`` as keyword arguments of ``symgen.hinge(hinge_type, ...)`` (a tuple of tuples, such as
        ``axes``, becomes a list)."""
        return {k: (list(v) if isinstance(v, tuple) and v and isinstance(v[0], tuple) else v)
                for k, v in self.hinge_params}


@dataclass(frozen=True)
class LoopConstraint:
    """A cut joint: the hinge ``hinge_type`` (with ``hinge_params``) runs from the ``source`` frame (its
    oframe); the loop is closed when its pframe coincides with the ``target`` frame (Karana's
    LoopConstraintCutJoint)."""
    name: str
    source: str
    target: str
    hinge_type: str
    hinge_params: tuple = ()    # (name, value) pairs for symgen.hinge(...), as Body.hinge_params

    def hinge_kwargs(self) -> dict:
        """``hinge_params`` as keyword arguments of ``symgen.hinge(hinge_type, ...)``, as :meth:`Body.hinge_kwargs`."""
        return {k: (list(v) if isinstance(v, tuple) and v and isinstance(v[0], tuple) else v)
                for k, v in self.hinge_params}


@dataclass
class Model:
    """A model description: ``bodies`` (parent before child), named body-fixed ``frames``, loop constraints
    (``loops``), ``gravity`` in the newtonian frame, the ``source`` it was read from (named in errors) and the
    loader's ``warnings``."""
    name: str
    bodies: list                            # parent before child
    frames: list = field(default_factory=list)   # named body-fixed frames (beyond the bodies' own)
    loops: list = field(default_factory=list)
    gravity: tuple = (0.0, 0.0, -9.81)
    source: str = ""
    warnings: list = field(default_factory=list)
    #: names kept as runtime inputs of the dynamics instead of folded literals (symgen.model.parameters)
    parameters: list = field(default_factory=list)
    #: a model read from MJCF: MuJoCo's sizes and where its quaternions sit in qpos (``mb.from_mujoco``)
    mujoco: dict = None

    def body(self, name: str) -> Body:
        """The body named ``name`` (``KeyError`` if there is none)."""
        for b in self.bodies:
            if b.name == name:
                return b
        raise KeyError(name)
