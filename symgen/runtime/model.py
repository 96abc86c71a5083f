"""A built model: names instead of indices, numpy in / numpy out (no sympy, no jinja2).

This module holds :class:`MultibodyModel`'s calls into the compiled module: state handling, the one-state
fast paths (one C call each) and the batched paths.  The other jobs live in their own modules, reached
through thin methods of the model: integration (``simulate``) in :mod:`.integrate`, fitting (``fit_q``,
``fit_u``) in :mod:`.fit`, frame-to-frame queries and their numerical-difference twins (``f2f``) in
:mod:`.f2f`.

The compiled ``kinematics`` kernel returns, per body, its pose in newtonian, its Jacobian ``J_b`` (U -> the
body's inertial spatial velocity ``[w; v]`` in body axes) and ``Jdot_b``.  Everything here follows from those
with batched numpy (no Python loop over states):

* frame f on body b at ``X_bf``: ``J_f = phi^T(b, f) J_b``, ``V_f = J_f U``;
* ``frame_acceleration`` is classical: ``J_f Udot + Jdot_f U + [0; w_f x v_f]``.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from . import fit as _fit
from . import integrate as _integrate
from . import loops as _loops
from . import parameters as _parameters
from ..abi.layout import ModelLayout
from .f2f import FrameToFrame
from .hinge_kernels import HingeKernels, load_generated
from ..numeric import np_skew

_F64 = np.dtype(np.float64)
_ND = np.ndarray
_empty = np.empty


def _phiT_apply(R, l, M):
    """phi^T(A, B) M for X_AB = (R, l), M of shape (..., 6, k): [R^T M_w; R^T (M_v - l x M_w)]."""
    Mw, Mv = M[..., :3, :], M[..., 3:, :]
    RT = np.swapaxes(R, -1, -2)
    return np.concatenate([RT @ Mw, RT @ (Mv - np_skew(l) @ Mw)], axis=-2)


class FrameHandle(int):
    """A frame of one model, resolved once (:meth:`MultibodyModel.frame_handle`): its index in the model's
    ``frame_names``.  Accepted wherever a frame name is; it skips the name lookup.  Each model has its own
    handle type, so a handle of another model is refused (unless that model has the same frames)."""

    __slots__ = ()
    _model, _names = "", ()

    @property
    def name(self) -> str:
        return self._names[self]

    def __repr__(self):
        return f"<frame {self._names[self]!r} of {self._model} (index {int(self)})>"


class MultibodyModel:
    """Loaded, compiled model.  Every method takes one state or a batch (leading axis N)."""

    def __init__(self, module, manifest: dict, path=None, fastcall=None):
        self._lib, self._ffi = module.lib, module.ffi
        self.manifest = manifest
        self.name = manifest["name"]
        self.nq, self.nu, self.nb = manifest["nq"], manifest["nu"], manifest["nb"]
        self.path = path
        self._gravity = np.array(manifest["gravity"], dtype=np.float64)
        self.hinge_names = tuple(manifest["hinges"])
        self.body_names = tuple(b["name"] for b in manifest["bodies"])
        self.frame_names = tuple(manifest["frames"])
        self.warnings = tuple(manifest.get("warnings", ()))
        #: which form each dynamics entry point was built in: "straight" (straight-line) or "per_kind"
        self.forms = dict(manifest.get("forms", {}))
        #: moving hinges whose outboard subtree has no mass or inertia in their directions (D singular)
        self.singular_hinges = tuple(manifest.get("singular_hinges", ()))
        self._frames = {k: (v["body"], np.array(v["R"], float), np.array(v["p"], float))
                        for k, v in manifest["frames"].items()}
        self._hk = {}
        #: where every number lives in the arrays exchanged with the C (symgen.abi.layout, shared with the generator)
        self.layout = ModelLayout.from_manifest(manifest)
        self._block = self.layout.kinematics.size
        self._dummy = self._ffi.from_buffer("double[]", np.zeros(1))
        self._dbl, self._fb = self._ffi.typeof("double[]"), self._ffi.from_buffer
        self._zero_p1 = np.zeros((1, 1))  # the batched mass matrix's p of a build without parameters (unread)
        self._g_buf = self._ffi.from_buffer("double[]", self._gravity)  # sees in-place changes; the setter renews it
        # the single-state fast path needs nQ, nU > 0 (a shape that never matches turns it off)
        self._shape_q, self._shape_u = ((self.nq,), (self.nu,)) if self.nq and self.nu else ((-1,), (-1,))
        self._single_fn = {k: getattr(self._lib, f"sg_{self.name}_{k}_single")
                           for k in ("forward_dynamics", "inverse_dynamics")}
        self._single_fn["mass_matrix"] = getattr(self._lib, f"sg_{self.name}_mass_matrix")
        # frames by index (frame_names order) and the one-state C entry points that take one
        self._frame_list = tuple(self._frames[n] for n in self.frame_names)
        self._frame_index = {n: i for i, n in enumerate(self.frame_names)}
        self._Handle = type("FrameHandle", (FrameHandle,), {"__slots__": (), "_model": self.name,
                                                           "_names": self.frame_names})
        lib, nm = self._lib, self.name
        self._fd1, self._id1 = self._single_fn["forward_dynamics"], self._single_fn["inverse_dynamics"]
        self._m1 = self._single_fn["mass_matrix"]
        self._pose1, self._poses1 = getattr(lib, f"sg_{nm}_frame_pose"), getattr(lib, f"sg_{nm}_frame_poses")
        self._jac1, self._vel1 = getattr(lib, f"sg_{nm}_frame_jacobian"), getattr(lib, f"sg_{nm}_frame_velocity")
        self._shape_J, self._shape_M = (6, self.nu), (self.nu, self.nu)
        self._shape_poses = (len(self.frame_names), 4, 4)
        #: closed chains: the loop constraints (cut joints), in the manifest's order
        self.loops = tuple(_loops.LoopConstraint(self, i, info) for i, info in enumerate(manifest.get("loops", [])))
        self.loop_names = tuple(c.name for c in self.loops)
        self._ta1 = getattr(lib, f"sg_{nm}_ta_forward_dynamics_single") if self.loops else None
        #: parametric builds: the model file's mass properties, the parameters' values there, and a p with them
        self._body_props = {b["name"]: (float(b["mass"]), np.array(b["com"], float), np.array(b["inertia"], float))
                            for b in manifest["bodies"]}
        self._param_nominal = _parameters.nominal(self)
        self._p1 = np.zeros(1)      # the mass matrix's one-state p: unread, or a parametric build's nominal p
        if self.layout.theta_blocks:
            self._p1 = np.ascontiguousarray(self._p(1, np.zeros(self.nu), None, None)[0])
            self._p_nominal = self._fb(self._dbl, self._p1)
            self._dummy = self._p_nominal  # the mass matrix's one-state path reads the parameters from p
        self._u1 = np.zeros(max(self.nu, 1))
        self._zero_u = self._fb(self._dbl, self._u1)
        self._calls = ()
        if fastcall is not None:
            self._calls = _fast_calls(self, fastcall)
            for call in self._calls:               # instance attributes: they shadow the methods (their fallbacks)
                setattr(self, call.__name__, call)

    @property
    def parameters(self) -> dict:
        """``{name: value in the model file}`` of the quantities this build keeps as runtime inputs
        (``symgen.build(..., parameters=[...])``): ``"<body>.mass"``, ``"<body>.com"``, ``"<body>.inertia"``
        (about the CoM, body axes), ``"<hinge>.armature"``, ``"gravity"``.  The dynamics methods and
        :meth:`rollout` take ``params={name: value}`` (one value, or one per state / case)."""
        return {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in self._param_nominal.items()}

    @property
    def gravity(self) -> np.ndarray:
        """Gravity in newtonian axes (3,), used when a call gives no ``gravity=``; assign or edit in place."""
        return self._gravity

    @gravity.setter
    def gravity(self, g):
        self._gravity = np.array(self._gravity_vector(g))
        self._g_buf = self._ffi.from_buffer("double[]", self._gravity)
        for call in self._calls:
            if call.__name__ in ("forward_dynamics", "inverse_dynamics"):
                call.set_gravity(self._gravity)

    def __repr__(self):
        return f"<symgen.MultibodyModel {self.name}: nq={self.nq} nu={self.nu} bodies={self.nb}>"

    # ---- layout
    def _hinge(self, name):
        try:
            return self.manifest["hinges"][name]
        except KeyError:
            raise KeyError(f"{self.name}: no hinge named {name!r} (hinges: {', '.join(self.hinge_names)})") from None

    def _joint(self, name):
        """A MuJoCo joint of a model read from MJCF: [q start, q end, u start, u end], or None."""
        return (self.manifest.get("mujoco") or {}).get("joints", {}).get(name) if name not in self.hinge_names \
            else None

    def q_slice(self, hinge: str) -> slice:
        """Where a hinge's Q lives (a model read from MJCF: also each MuJoCo joint, e.g. one of a compound hinge)."""
        j = self._joint(hinge)
        return slice(j[0], j[1]) if j else slice(*self._hinge(hinge)["q"])

    def u_slice(self, hinge: str) -> slice:
        """Where a hinge's U lives (a model read from MJCF: also each MuJoCo joint)."""
        j = self._joint(hinge)
        return slice(j[2], j[3]) if j else slice(*self._hinge(hinge)["u"])

    def neutral_q(self) -> np.ndarray:
        """The reference pose: identity quaternions, each coordinate's ref (a compound hinge's), zero elsewhere."""
        q = np.zeros(self.nq)
        for h in self.manifest["hinges"].values():
            q[slice(*h["q"])] = h["neutral_q"]
        return q

    # ---- MuJoCo's coordinates (a model read from MJCF)
    def _mujoco(self) -> dict:
        info = self.manifest.get("mujoco")
        if info is None:
            raise ValueError(f"{self.name}: from_mujoco / to_mujoco need a model built from an MJCF file (with no "
                             "hinge locked); this one was not")
        return info

    def from_mujoco(self, qpos, qvel=None):
        """``(q, u)`` from MuJoCo's ``qpos`` and ``qvel`` (one state or a batch): Q is qpos with each quaternion
        turned from MuJoCo's ``(w, x, y, z)`` to symgen's ``(x, y, z, w)``; U is qvel.  ``qvel=None``: only q."""
        info = self._mujoco()
        q = np.array(qpos, dtype=np.float64)
        if q.shape[-1:] != (self.nq,) or q.ndim not in (1, 2):
            raise ValueError(f"{self.name}: qpos must have shape ({self.nq},) or (N, {self.nq}), got {q.shape}")
        for a in info["quat_adr"]:
            q[..., a:a + 4] = np.asarray(qpos, np.float64)[..., [a + 1, a + 2, a + 3, a]]
        if qvel is None:
            return q
        u = np.array(qvel, dtype=np.float64)
        if u.shape[-1:] != (self.nu,) or u.shape[:-1] != q.shape[:-1]:
            raise ValueError(f"{self.name}: qvel must have shape ({self.nu},) or (N, {self.nu}) matching qpos, "
                             f"got {u.shape}")
        return q, u

    def to_mujoco(self, q, u=None):
        """MuJoCo's ``(qpos, qvel)`` from ``(q, u)`` (one state or a batch); the converse of :meth:`from_mujoco`."""
        info = self._mujoco()
        qpos = np.array(q, dtype=np.float64)
        if qpos.shape[-1:] != (self.nq,) or qpos.ndim not in (1, 2):
            raise ValueError(f"{self.name}: q must have shape ({self.nq},) or (N, {self.nq}), got {qpos.shape}")
        for a in info["quat_adr"]:
            qpos[..., a:a + 4] = np.asarray(q, np.float64)[..., [a + 3, a, a + 1, a + 2]]
        if u is None:
            return qpos
        qvel = np.array(u, dtype=np.float64)
        if qvel.shape[-1:] != (self.nu,) or qvel.shape[:-1] != qpos.shape[:-1]:
            raise ValueError(f"{self.name}: u must have shape ({self.nu},) or (N, {self.nu}) matching q, "
                             f"got {qvel.shape}")
        return qpos, qvel

    def hinge_kernels(self, hinge: str) -> HingeKernels:
        """The compiled kernels of one hinge (transform, coord_map, pose_gradient, ...)."""
        info = self._hinge(hinge)
        if hinge not in self._hk:
            spec = self.manifest["hinge_specs"][info["slug"]]
            self._hk[hinge] = HingeKernels(_Module(self._lib, self._ffi), spec)
        return self._hk[hinge]

    # ---- C calls
    def _states(self, q, u=None):
        q = np.ascontiguousarray(q, dtype=np.float64)
        if q.ndim not in (1, 2) or q.shape[-1] != self.nq:
            raise ValueError(f"{self.name}: q must have shape ({self.nq},) or (N, {self.nq}), got {q.shape}")
        single = q.ndim == 1
        n = 1 if single else q.shape[0]
        Q = q.reshape(n, self.nq)
        if u is None:
            U = np.zeros((Q.shape[0], self.nu))
        else:
            u = np.ascontiguousarray(u, dtype=np.float64)
            if u.ndim != q.ndim or u.shape[-1] != self.nu or (not single and u.shape[0] != Q.shape[0]):
                raise ValueError(f"{self.name}: u must have shape ({self.nu},) or (N, {self.nu}) matching q, got {u.shape}")
            U = u.reshape(n, self.nu)
        return single, Q, U

    def _buf(self, a):
        return self._ffi.from_buffer("double[]", a) if a.size else self._ffi.from_buffer("double[]", np.zeros(1))

    def _run(self, kernel, Q, U, size):
        out = np.empty((Q.shape[0], size))
        getattr(self._lib, f"sg_{self.name}_{kernel}_batch")(
            Q.shape[0], self._buf(Q), self._buf(U), self._ffi.NULL,
            self._ffi.from_buffer("double[]", out, require_writable=True) if out.size else self._ffi.NULL)
        return out

    def _bodies(self, Q, U):
        raw = self._run("kinematics", Q, U, self.nb * self._block).reshape(Q.shape[0], self.nb, self._block)
        K = self.layout.kinematics
        R = raw[:, :, K.span("R")].reshape(-1, self.nb, 3, 3)
        p = raw[:, :, K.span("p")]
        J = raw[:, :, K.span("J")].reshape(Q.shape[0], self.nb, 6, self.nu)
        Jd = raw[:, :, K.span("Jdot")].reshape(Q.shape[0], self.nb, 6, self.nu)
        return R, p, J, Jd

    def _poses(self, Q):
        """(R, p) of every body for every state, from the pose-only kernel."""
        X = self.layout.poses
        raw = self._run("poses", Q, np.zeros((Q.shape[0], self.nu)), self.nb * X.size).reshape(Q.shape[0], self.nb, X.size)
        return raw[:, :, X.span("R")].reshape(-1, self.nb, 3, 3), raw[:, :, X.span("p")]

    def _frame(self, name):
        """(body index, R, p) of a frame given by name or handle."""
        return self._frame_list[self._fidx(name)]

    def _fidx(self, frame) -> int:
        """Index of a frame given by name or handle (KeyError: no such name; ValueError: another model's handle)."""
        if type(frame) is self._Handle:
            return frame
        if isinstance(frame, str):
            i = self._frame_index.get(frame)
            if i is not None:
                return i
        elif isinstance(frame, FrameHandle):
            if frame._names == self.frame_names:       # a handle of a twin of this model (same frames)
                return int(frame)
            raise ValueError(f"{self.name}: {frame!r} is a frame handle of another model; get one from this "
                             f"model's frame_handle()")
        raise KeyError(f"{self.name}: no frame named {frame!r} (frames: {', '.join(self.frame_names)})")

    def frame_handle(self, frame) -> FrameHandle:
        """A handle of the frame (name or handle): its index in ``frame_names``, accepted wherever a frame name
        is; it skips the name lookup on every call."""
        return self._Handle(self._fidx(frame))

    def _outp(self, out, shape, what):
        """cffi pointer to the caller's ``out=`` array, checked (float64, C-contiguous, writable, exact shape)."""
        if type(out) is _ND and out.dtype is _F64 and out.shape == shape and out.flags.writeable:
            try:
                return self._fb(self._dbl, out)
            except ValueError:                          # not C-contiguous
                pass
        self._out_buffer(out, shape, what)              # raises, naming what is wrong
        raise AssertionError("unreachable")

    def _frame_data(self, Q, U, name):
        """(R, p, J, Jdot) of a frame for every state (batched arrays)."""
        b, Rbf, lbf = self._frame(name)
        n = Q.shape[0]
        if b < 0:  # newtonian
            z = np.zeros((n, 6, self.nu))
            return np.broadcast_to(np.eye(3), (n, 3, 3)).copy(), np.zeros((n, 3)), z, z.copy()
        R, p, J, Jd = self._bodies(Q, U)
        R, p, J, Jd = R[:, b], p[:, b], J[:, b], Jd[:, b]
        Rf = R @ Rbf
        pf = p + R @ lbf
        return Rf, pf, _phiT_apply(Rbf, lbf, J), _phiT_apply(Rbf, lbf, Jd)

    @staticmethod
    def _out(single, a):
        return a[0] if single else a

    # ---- one state
    # One state (q, u, ...: C-contiguous float64 vectors) takes a lean path: one C call on the arrays' memory
    # (sg_<model>_frame_* with the frame's index, the single-state dynamics), allocating only the result.
    # Built models (symgen.build, load_model) put the compiled twin of this path in front of each method
    # (symgen/runtime/fastcall.c: the same C call without Python in between, for calls without keywords);
    # its fallback is the method, which tries _one and then the general path.  Anything else (lists, strided
    # arrays, batches) is converted and checked, then one C loop over the states calls the same per-state
    # function: the same numbers either way.
    def _one(self, what, vecs, shape, out, call):
        """``call(*pointers of vecs, pointer of out)`` for one state: ``vecs`` = (q[, u[, x]]) C-contiguous
        float64 of shapes (nQ,), (nU,), (nU,); ``out`` the caller's (checked) or a new array of ``shape``.
        Returns ``(out, what call returned)``, or None when the inputs are not such vectors (the caller then
        takes the general path)."""
        fb, dbl = self._fb, self._dbl
        try:
            q = vecs[0]
            if q.dtype is not _F64 or q.shape != self._shape_q:
                return None
            for v in vecs[1:]:
                if v.dtype is not _F64 or v.shape != self._shape_u:
                    return None
            ptrs = [fb(dbl, v) for v in vecs]
        except (AttributeError, ValueError):           # not arrays; from_buffer refuses non-contiguous ones
            return None
        if out is None:
            out = _empty(shape)
            po = fb(dbl, out)
        else:
            po = self._outp(out, shape, what)
        return out, call(*ptrs, po)

    # ---- frame queries
    def frame_pose(self, q, frame, out=None) -> np.ndarray:
        """4x4 pose of the frame (name or :meth:`frame_handle`) in newtonian; ``out``: a preallocated float64
        array of the result's shape, filled and returned."""
        f = frame if type(frame) is self._Handle else self._fidx(frame)
        r = self._one("frame_pose", (q,), (4, 4), out, lambda pq, po: self._pose1(pq, f, po))
        return r[0] if r is not None else self._frame_batch("frame_pose", (4, 4), q, None, frame, out)

    def frame_poses(self, q, out=None) -> np.ndarray:
        """Poses (4x4, in newtonian) of all frames, in ``frame_names`` order: (n_frames, 4, 4), or
        (N, n_frames, 4, 4) for a batch; ``out`` as in :meth:`frame_pose`."""
        r = self._one("frame_poses", (q,), self._shape_poses, out, self._poses1)
        return r[0] if r is not None else self._frame_batch("frame_poses", self._shape_poses, q, None, None, out)

    def jacobian(self, q, frame, out=None) -> np.ndarray:
        """6 x nU map from U to the frame's inertial spatial velocity [w; v] in frame axes (walks only the
        frame's ancestors); ``out`` as in :meth:`frame_pose`."""
        f = frame if type(frame) is self._Handle else self._fidx(frame)
        r = self._one("jacobian", (q,), self._shape_J, out, lambda pq, po: self._jac1(pq, f, po))
        return r[0] if r is not None else self._frame_batch("frame_jacobian", self._shape_J, q, None, frame, out)

    def _frame_batch(self, kernel, shape, q, u, frame, out):
        """The general path of the frame queries: ``sg_<model>_<kernel>_batch`` over the states."""
        f = None if frame is None else self._fidx(frame)
        single, Q, U = self._states(q, u)
        n = Q.shape[0]
        full = (n,) + shape
        what = "jacobian" if kernel == "frame_jacobian" else kernel
        res = np.empty(full) if out is None else self._out_buffer(out, shape if single else full, what).reshape(full)
        if res.size:
            args = (n, self._buf(Q)) + (() if u is None else (self._buf(U),)) + (() if f is None else (f,))
            getattr(self._lib, f"sg_{self.name}_{kernel}_batch")(*args, self._buf(res))
        return out if out is not None else self._out(single, res)

    def jacobian_dot(self, q, u, frame: str) -> np.ndarray:
        """Time derivative of :meth:`jacobian` along Qdot = N U."""
        single, Q, U = self._states(q, u)
        return self._out(single, self._frame_data(Q, U, frame)[3])

    def frame_velocity(self, q, u, frame, out=None) -> np.ndarray:
        """Inertial spatial velocity [w; v] of the frame, in frame axes; ``out`` as in :meth:`frame_pose`."""
        f = frame if type(frame) is self._Handle else self._fidx(frame)
        r = self._one("frame_velocity", (q, u), (6,), out, lambda pq, pu, po: self._vel1(pq, pu, f, po))
        return r[0] if r is not None else self._frame_batch("frame_velocity", (6,), q, u, frame, out)

    def frame_acceleration(self, q, u, udot, frame: str) -> np.ndarray:
        """Classical acceleration [w_dot; a] of the frame origin, in frame axes (gravity not added)."""
        single, Q, U = self._states(q, u)
        _, _, Ud = self._states(q, udot)
        _, _, J, Jd = self._frame_data(Q, U, frame)
        V = np.einsum("nij,nj->ni", J, U)
        A = np.einsum("nij,nj->ni", J, Ud) + np.einsum("nij,nj->ni", Jd, U)
        A[:, 3:] += np.cross(V[:, :3], V[:, 3:])
        return self._out(single, A)

    def qdot(self, q, u) -> np.ndarray:
        """Qdot = N(Q) U for the whole model."""
        single, Q, U = self._states(q, u)
        return self._out(single, self._run("qdot", Q, U, self.nq))

    def sanitize(self, q) -> np.ndarray:
        """Equivalent Q: SPHERICAL rotation vectors with |r| <= pi, unit quaternions."""
        single, Q, U = self._states(q)
        return self._out(single, self._run("sanitize", Q, U, self.nq))

    def f2f(self, oframe, pframe) -> FrameToFrame:
        """Relative kinematics of ``pframe`` with respect to ``oframe`` (names or handles): a
        :class:`~symgen.runtime.f2f.FrameToFrame` (``rel_transform``, ``rel_sp_vel``, ``rel_sp_accel``,
        ``jacobian``, ``pose_gradient`` and the ``*_num_diff`` twins)."""
        names = self.frame_names
        return FrameToFrame(self, names[self._fidx(oframe)], names[self._fidx(pframe)])

    # ---- dynamics
    def _p(self, n, middle, f_ext, gravity, params=None):
        """p = [g (3), middle (nU), f_ext in body frames (6 per body), theta] for n states (theta: the
        parameters of a parametric build, from ``params`` or the model file)."""
        if params and "gravity" in params:
            if gravity is not None:
                raise ValueError(f"{self.name}: give gravity= or params={{'gravity': ...}}, not both")
            gravity = params["gravity"]
        g = self.gravity if gravity is None else np.asarray(gravity, dtype=float)
        if g.shape not in ((3,), (n, 3)):
            raise ValueError(f"{self.name}: gravity must be 3 numbers (or one row per state), got {g.shape}")
        L = self.layout.params
        P = np.zeros((n, L.size))
        P[:, L.span("gravity")] = g
        P[:, L.span("tau")] = middle
        if f_ext is not None:
            P[:, L.span("f_ext")] = self._fext(n, f_ext).reshape(n, -1)
        if self.layout.theta_blocks:
            P[:, L.span("theta")] = _parameters.theta(self, n, params)
        elif params and set(params) - {"gravity"}:
            _parameters.theta(self, n, params)  # raises: names no parameter of this build
        return P

    def _fext(self, n, f_ext):
        """External forces as body-frame wrenches at the body origins, shape (n, nb, 6)."""
        F = np.zeros((n, self.nb, 6))
        if f_ext is None:
            return F
        if not isinstance(f_ext, dict):
            a = np.asarray(f_ext, dtype=float)
            if a.shape not in ((self.nb, 6), (n, self.nb, 6)):
                raise ValueError(f"{self.name}: f_ext array must have shape ({self.nb}, 6) or (N, {self.nb}, 6) "
                                 f"(one [N; F] per body, body frame, bodies in order {list(self.body_names)})")
            return F + a
        for name, f in f_ext.items():
            b, R, l = self._frame(name)
            if b < 0:
                raise ValueError(f"{self.name}: f_ext on 'newtonian' acts on nothing")
            f = np.broadcast_to(np.asarray(f, dtype=float), (n, 6))
            RN, RF = f[:, :3] @ R.T, f[:, 3:] @ R.T   # phi(b, f) f: [R N + l x R F; R F]
            F[:, b, :3] += RN + np.cross(l, RF)
            F[:, b, 3:] += RF
        return F

    def _loop_gains(self, baumgarte) -> np.ndarray:
        """Baumgarte's (omega_n, zeta) checked, or zeros (no stabilization)."""
        return np.zeros(2) if baumgarte is None else _loops.gains(self, baumgarte)

    def _check_status(self, status, what):
        if status:
            i, k = divmod(int(status), self.nb + 1)
            body = self.body_names[k - 1]
            hinge = self.manifest['bodies'][k - 1]['hinge']
            raise np.linalg.LinAlgError(f"{self.name}: {what}: D = H P H* of body '{body}' (hinge '{hinge}') is not "
                                        f"positive definite (state {i}): its outboard subtree has no mass or "
                                        f"inertia in the hinge's directions; give the hinge armature "
                                        f"(armature={{'{hinge}': value}}) or lock it (lock=['{hinge}'])")

    def _call(self, kernel, Q, U, P, size, out=None):
        out = np.empty((Q.shape[0], size)) if out is None else out
        fn = getattr(self._lib, f"sg_{self.name}_{kernel}_batch")
        status = fn(Q.shape[0], self._buf(Q), self._buf(U), self._buf(np.ascontiguousarray(P)),
                    self._ffi.from_buffer("double[]", out, require_writable=True) if out.size else self._ffi.NULL)
        return out, status

    def _out_buffer(self, out, shape, what):
        """The caller's preallocated output, checked (float64, C-contiguous, writable, exact shape)."""
        if (type(out) is not np.ndarray or out.dtype is not _F64 or out.shape != shape
                or not (out.flags.c_contiguous and out.flags.writeable)):
            got = f"{type(out).__name__} {getattr(out, 'dtype', '')} {getattr(out, 'shape', '')}".strip()
            raise ValueError(f"{self.name}: {what}: out= must be a writable C-contiguous float64 array of shape "
                             f"{shape}, got {got}")
        return out

    def _gravity_pointer(self, g):
        """The one-state calls' gravity: the model's, or ``g`` (3 numbers) checked."""
        return self._g_buf if g is None else self._fb(self._dbl, self._gravity_vector(g))

    def _gravity_vector(self, g):
        g = np.ascontiguousarray(g, dtype=np.float64)
        if g.shape != (3,):
            raise ValueError(f"{self.name}: gravity must be 3 numbers, got {g.shape}")
        return g

    def _dynamics(self, kernel, q, u, middle, f_ext, gravity, out=None, params=None) -> np.ndarray:
        """One dynamics kernel whose p is [g, middle (nU), f_ext, theta], batched and checked (the methods try
        their one-state path first)."""
        single, Q, U = self._states(q, u)
        _, _, M = self._states(q, middle)
        if out is not None:
            out = self._out_buffer(out, (self.nu,) if single else (Q.shape[0], self.nu), kernel)
        res, status = self._call(kernel, Q, U, self._p(Q.shape[0], M, f_ext, gravity, params), self.nu,
                                 None if out is None else out.reshape(Q.shape[0], self.nu))
        if status:
            self._check_status(status, kernel)
        return out if out is not None else self._out(single, res)

    def forward_dynamics(self, q, u, T, f_ext=None, gravity=None, out=None, baumgarte=None,
                         tree: bool = False, params=None) -> np.ndarray:
        """Udot by the ATBI recursion.  ``T``: generalized forces (nU); ``f_ext``: ``{frame: [N; F] in that
        frame}`` or an array of body-frame wrenches ``(nb, 6)``; ``gravity`` overrides the model's;
        ``out``: a preallocated float64 array of the result's shape, filled and returned.

        A model with loop constraints runs the tree-augmented (TA) method (free ATBI accelerations, the
        compliance of the constraints from O(n) passes on the same factorization, multipliers by a
        rank-revealing solve, an O(n) correction; :mod:`symgen.algorithms.loops`), one C call per state;
        ``baumgarte=(omega_n, zeta)`` adds Baumgarte stabilization, ``e'' + 2 zeta omega_n e' + omega_n^2 e
        = 0`` for the constrained errors e.  ``tree=True`` ignores the loops (the cut tree's dynamics).
        ``params``: values of a parametric build's parameters (:attr:`parameters`), one or one per state."""
        loops = bool(self.loops) and not tree
        if loops and params is not None:  # a model with loops has no theta: only gravity can be a parameter
            self._p(1, np.zeros(self.nu), None, gravity, params)  # checks the names
            gravity, params = params.get("gravity", gravity), None
        if baumgarte is not None and not loops:
            raise ValueError(f"{self.name}: baumgarte= stabilizes loop constraints; this call has none"
                             + (" (tree=True)" if self.loops else ""))
        # one state without external forces: one C call (sg_<name>_forward_dynamics_single, or
        # _ta_forward_dynamics_single with loops, assembles p on the C stack)
        if f_ext is None and params is None:
            gp = self._gravity_pointer
            if loops:
                k = self._ffi.NULL if baumgarte is None else self._fb(self._dbl, _loops.gains(self, baumgarte))
                r = self._one("forward_dynamics", (q, u, T), self._shape_u, out,
                              lambda pq, pu, pt, po: self._ta1(pq, pu, gp(gravity), pt, k, po))
            else:
                r = self._one("forward_dynamics", (q, u, T), self._shape_u, out,
                              lambda pq, pu, pt, po: self._fd1(pq, pu, gp(gravity), pt, po))
            if r is not None:
                if r[1]:
                    self._check_status(r[1], "forward_dynamics")
                return r[0]
        if loops:
            udot = _loops.ta_forward_dynamics(self, q, u, T, f_ext, gravity, baumgarte)["udot"]
            if out is not None:
                self._out_buffer(out, udot.shape, "forward_dynamics")[...] = udot
                return out
            return udot
        return self._dynamics("forward_dynamics", q, u, T, f_ext, gravity, out, params)

    def inverse_dynamics(self, q, u, udot, f_ext=None, gravity=None, out=None, actuated=None,
                         tree: bool = False, params=None) -> np.ndarray:
        """T by Newton-Euler (gravity included).  ``out`` as in :meth:`forward_dynamics`.

        On a model with loops, without ``actuated`` this is the cut tree's T (the loops carry no force).
        ``actuated=[hinge, ...]`` solves the closed chain instead: given a motion consistent with the loops,
        returns ``(T, {loop: lambda})`` with T nonzero only on the actuated hinges, the least-squares (and
        minimum-norm where redundant) solution of ``ID_tree = S T_a + G_c^T lambda``."""
        if actuated is not None:
            return _loops.closed_inverse_dynamics(self, q, u, udot, actuated, f_ext=f_ext, gravity=gravity)
        if f_ext is None and params is None:        # one state: as forward_dynamics
            gp = self._gravity_pointer
            r = self._one("inverse_dynamics", (q, u, udot), self._shape_u, out,
                          lambda pq, pu, pa, po: self._id1(pq, pu, gp(gravity), pa, po))
            if r is not None:
                return r[0]
        return self._dynamics("inverse_dynamics", q, u, udot, f_ext, gravity, out, params)

    def mass_matrix(self, q, out=None, params=None) -> np.ndarray:
        """Composite-body mass matrix (nU x nU, symmetric).  ``out``: a preallocated float64 array of shape
        (nU, nU), or (N, nU, nU) for a batch, filled and returned.  ``params`` as in :meth:`forward_dynamics`."""
        if params is None:
            r = self._one("mass_matrix", (q,), self._shape_M, out,
                          lambda pq, po: self._m1(pq, self._zero_u, self._dummy, po))
            if r is not None:
                return r[0]
        nu = self.nu
        single, Q, U = self._states(q)
        if out is not None:
            out = self._out_buffer(out, (nu, nu) if single else (Q.shape[0], nu, nu), "mass_matrix")
        # M reads p only for a parametric build's theta (one p per state); else one shared p, never read
        P = (self._p(Q.shape[0], np.zeros(nu), None, None, params) if self.layout.theta_blocks or params
             else self._zero_p1)
        res, _ = self._call("mass_matrix", Q, U, P, nu * nu,
                            None if out is None else out.reshape(Q.shape[0], nu * nu))
        return out if out is not None else self._out(single, res.reshape(Q.shape[0], nu, nu))

    def minv_times(self, q, v) -> np.ndarray:
        """M(Q)^-1 v by the ATBI factorization (forward dynamics with U = 0, no gravity, T = v)."""
        single, Q, _ = self._states(q)
        _, _, V = self._states(q, v)
        out, status = self._call("forward_dynamics", Q, np.zeros_like(V), self._p(Q.shape[0], V, None, np.zeros(3)),
                                 self.nu)
        self._check_status(status, "minv_times")
        return self._out(single, out)

    def atbi_matrices(self, q, body: str) -> dict:
        """P, D, Dinv, G, tauper (= I - G H), psi (= phi(parent, body) tauper) at a body's hinge; H is the
        hinge map in the body frame.  D, Dinv are nU_h x nU_h, G is 6 x nU_h."""
        if body not in self.body_names:
            raise KeyError(f"{self.name}: no body named {body!r} (bodies: {', '.join(self.body_names)})")
        k = self.body_names.index(body)
        single, Q, U = self._states(q)
        B = self.layout.mats
        out, status = self._call("atbi_matrices", Q, U, self._p(Q.shape[0], np.zeros((Q.shape[0], self.nu)), None, None),
                                 B.size * self.nb)
        self._check_status(status, "atbi_matrices")
        blk = out.reshape(-1, self.nb, B.size)[:, k]
        nh, m = self.layout.nuh[k], blk.shape[0]
        shapes = {"P": (6, 6), "D": (nh, nh), "Dinv": (nh, nh), "G": (6, nh), "tauper": (6, 6), "psi": (6, 6)}
        res = {f: blk[:, B[f]:B[f] + r * c].reshape(m, r, c) for f, (r, c) in shapes.items()}
        return {k2: self._out(single, v) for k2, v in res.items()}

    # ---- closed chains (symgen.runtime.loops)
    def loop(self, name: str) -> "_loops.LoopConstraint":
        """The loop constraint (cut joint) named ``name``."""
        for c in self.loops:
            if c.name == name:
                return c
        raise KeyError(f"{self.name}: no loop named {name!r} (loops: {', '.join(self.loop_names) or 'none'})")

    def ta_forward_dynamics(self, q, u, T, f_ext=None, gravity=None, baumgarte=None) -> dict:
        return _loops.ta_forward_dynamics(self, q, u, T, f_ext=f_ext, gravity=gravity, baumgarte=baumgarte)

    ta_forward_dynamics.__doc__ = _loops.ta_forward_dynamics.__doc__

    def constraint_forces(self, q, u, T, f_ext=None, gravity=None, baumgarte=None) -> dict:
        """The multipliers of every loop after TA forward dynamics, ``{loop: lambda}`` (n_residuals each):
        the constrained components of the constraint force on the target node, in the target frame
        (``f_T = OC lambda``; the source node gets ``-f_T``).  Redundant rows get 0."""
        lam = _loops.ta_forward_dynamics(self, q, u, T, f_ext, gravity, baumgarte)["lambda"]
        return {c.name: lam[..., c.rows] for c in self.loops}

    def interbody_forces(self, q, u, T, f_ext=None, gravity=None, baumgarte=None, T_cut=None) -> dict:
        """Karana's ``getInterBodyForceTAFwdDyn``: per loop the spatial constraint force ``[N; F]`` (6, target
        frame, at its origin) with the sign of a force acting on the target node, including the cut joint's
        own generalized forces ``T_cut`` ({loop: T}, applied through :meth:`LoopConstraint.sp_external_force_from_t`)."""
        fx = None
        if T_cut:
            fx = sum(self.loop(k).sp_external_force_from_t(v, q=q, as_f_ext=True) for k, v in T_cut.items())
            fx = fx + (self._fext(1, f_ext)[0] if f_ext is not None else 0.0)
        res = _loops.ta_forward_dynamics(self, q, u, T, fx if fx is not None else f_ext, gravity, baumgarte)
        out = {c.name: res["f_target"][..., c.index, :] for c in self.loops}
        for k, v in (T_cut or {}).items():
            out[k] = out[k] + self.loop(k).sp_external_force_from_t(v, q=q)[1]
        return out

    def constraint_jacobian(self, q, u=None):
        return _loops.constraint_jacobian(self, q, u)

    constraint_jacobian.__doc__ = _loops.constraint_jacobian.__doc__

    def project(self, q, u=None, fixed=None, tol: float = 1e-12, max_iter: int = 50):
        return _loops.project(self, q, u, fixed=fixed, tol=tol, max_iter=max_iter)

    project.__doc__ = _loops.project.__doc__

    # ---- the other rooms: integration, fitting (thin delegations; the docstrings are the rooms')
    def simulate(self, q0, u0, t_span, dt: float, T=None, f_ext=None, gravity=None, baumgarte=None,
                 project: bool = False):
        return _integrate.simulate(self, q0, u0, t_span, dt, T=T, f_ext=f_ext, gravity=gravity,
                                   baumgarte=baumgarte, project=project)

    simulate.__doc__ = _integrate.simulate.__doc__

    def rollout(self, q0, u0, dt: float, n_steps: int, T=None, every: int = 1, method: str = "rk4", f_ext=None,
                gravity=None, baumgarte=None, params=None) -> dict:
        return _integrate.rollout(self, q0, u0, dt, n_steps, T=T, every=every, method=method, f_ext=f_ext,
                                  gravity=gravity, baumgarte=baumgarte, params=params)

    rollout.__doc__ = _integrate.rollout.__doc__

    def fit_q(self, hinge: str, transform, q0=None, tol: float = 1e-12, max_iter: int = 50) -> np.ndarray:
        return _fit.fit_q(self, hinge, transform, q0=q0, tol=tol, max_iter=max_iter)

    fit_q.__doc__ = _fit.fit_q.__doc__

    def fit_u(self, hinge: str, spatial_velocity, q=None) -> np.ndarray:
        return _fit.fit_u(self, hinge, spatial_velocity, q=q)

    fit_u.__doc__ = _fit.fit_u.__doc__


class _Module:
    def __init__(self, lib, ffi):
        self.lib, self.ffi = lib, ffi


#: the kinds of one-state C functions in symgen/runtime/fastcall.c (their argument lists)
_K_Q_F, _K_Q_U_F, _K_Q, _K_Q_FIXED, _K_DYN, _K_TA = range(6)


def _fast_calls(mb: MultibodyModel, ext) -> tuple:
    """The compiled one-state calls of a model (``ext``: the module built from symgen/runtime/fastcall.c),
    each in front of its method, which it calls for anything but one state of plain float64 vectors without
    keywords.  None for a model without Q or U (the methods' general paths serve it)."""
    if not (mb.nq and mb.nu):
        return ()
    cls, ffi = type(mb), mb._ffi

    def call(name, kind, fn, shape, aux=None, aux2=None, on_status=None):
        method = getattr(cls, name).__get__(mb)
        return ext.Call(kind, int(ffi.cast("uintptr_t", fn)), mb.nq, mb.nu, tuple(shape), method, name,
                        method.__doc__ or "", mb._Handle, mb._frame_index, len(mb.frame_names), aux, aux2,
                        on_status)

    def fd_status(status):
        mb._check_status(status, "forward_dynamics")

    fd = (call("forward_dynamics", _K_TA, mb._ta1, mb._shape_u, mb._gravity, on_status=fd_status) if mb.loops
          else call("forward_dynamics", _K_DYN, mb._fd1, mb._shape_u, mb._gravity, on_status=fd_status))
    return (call("frame_pose", _K_Q_F, mb._pose1, (4, 4)),
            call("jacobian", _K_Q_F, mb._jac1, mb._shape_J),
            call("frame_velocity", _K_Q_U_F, mb._vel1, (6,)),
            call("frame_poses", _K_Q, mb._poses1, mb._shape_poses),
            call("mass_matrix", _K_Q_FIXED, mb._m1, mb._shape_M, mb._u1, mb._p1),
            call("inverse_dynamics", _K_DYN, mb._id1, mb._shape_u, mb._gravity),
            fd)


def _load_fastcall(path: Path, manifest: dict):
    """The one-state extension a generated package ships (``manifest["fastcall"]``), or None (an older
    package, or one that cannot load here: the methods' Python paths serve the calls)."""
    import importlib.util
    import sys

    info = manifest.get("fastcall")
    if not info or not (path / info["so"]).exists():
        return None
    name = info["module"]
    if name not in sys.modules:
        try:
            spec = importlib.util.spec_from_file_location(name, path / info["so"])
            mod = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(mod)
        except ImportError:
            return None
        sys.modules[name] = mod
    return sys.modules[name]


def load_model(path) -> MultibodyModel:
    """Load ``generated/<model>/`` (manifest.json + compiled module) without sympy or jinja2."""
    mod, manifest = load_generated(path)
    return MultibodyModel(mod, manifest, path=Path(path), fastcall=_load_fastcall(Path(path), manifest))
