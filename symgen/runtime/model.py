"""A built model: names instead of indices, numpy in / numpy out (no sympy, no jinja2).

:class:`MultibodyModel` is a façade: a thin set of verbs over its :attr:`~MultibodyModel.binding`, the
:class:`~symgen.runtime.binding.ModelBinding` that owns the compiled module (pointers, the one-state and
batched C calls, status decoding, argument checks, ``out=``).  The other jobs live in their own modules,
reached through thin methods of the model: integration (``simulate``, ``rollout``) in :mod:`.integrate`,
fitting (``fit_q``, ``fit_u``) in :mod:`.fit`, frame-to-frame queries and their numerical-difference twins
(``f2f``) in :mod:`.f2f`, closed chains in :mod:`.loops`; they too call the binding's public API.

The compiled ``kinematics`` kernel returns, per body, its pose in newtonian, its Jacobian ``J_b`` (U -> the
body's inertial spatial velocity ``[w; v]`` in body axes) and ``Jdot_b``.  Everything here follows from those
with batched numpy (no Python loop over states):

* frame f on body b at ``X_bf``: ``J_f = phi^T(b, f) J_b``, ``V_f = J_f U`` (``ModelBinding.frame_data``);
* ``frame_acceleration`` is classical: ``J_f Udot + Jdot_f U + [0; w_f x v_f]``.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from . import fit as _fit
from . import integrate as _integrate
from . import loops as _loops
from .binding import FrameHandle, ModelBinding
from .f2f import FrameToFrame
from ..numeric import np_phi
from . import derivatives as _derivs
from .hinge_kernels import HingeKernels, load_generated

#: the methods with a compiled one-state call in front of them (ModelBinding.fast_calls)
ONE_STATE = ("frame_pose", "jacobian", "frame_velocity", "frame_poses", "mass_matrix", "inverse_dynamics",
             "forward_dynamics")
#: the one-state methods whose compiled calls come with the derivative functions' module
DERIVATIVE_CALLS = ("forward_dynamics_derivatives", "inverse_dynamics_derivatives", "step_derivatives",
                    "centroidal_momentum_matrix")


class MultibodyModel:
    """Loaded, compiled model.  Every method takes one state or a batch (leading axis N).

    The verbs are thin: the compiled module, its pointers and calls, the argument checks and ``out=`` belong
    to :attr:`binding` (a :class:`~symgen.runtime.binding.ModelBinding`)."""

    def __init__(self, module, manifest: dict, path=None, fastcall=None, derivatives=None):
        #: the compiled module: pointers, one-state and batched C calls, checks (symgen.runtime.binding)
        self.binding = b = ModelBinding(module, manifest)
        # the derivative functions: in this module (a build with derivatives=True), or compiled on first use by
        # ``derivatives()`` (a callable the builder gives, returning the module with them), else unavailable
        self._derivatives_module, self._derivative_binding = derivatives, None
        self._fastcall = fastcall
        self.manifest = manifest
        self.name = manifest["name"]
        self.nq, self.nu, self.nb = manifest["nq"], manifest["nu"], manifest["nb"]
        self.path = path
        self.hinge_names = tuple(manifest["hinges"])
        self.body_names = b.body_names
        self.frame_names = b.frame_names
        self.warnings = tuple(manifest.get("warnings", ()))
        #: which form each dynamics entry point was built in: "straight" (straight-line) or "per_kind"
        self.forms = dict(manifest.get("forms", {}))
        #: the flexible bodies' modes by name ("panel.mode0": body, index, q and u slots, frequency (Hz), damping
        #: ratio, modal_mass, stiffness); their nodes are frames (frame_names, after the body-fixed frames)
        self.modes = {k: dict(v) for k, v in (manifest.get("modes") or {}).items()}
        #: moving hinges whose outboard subtree has no mass or inertia in their directions (D singular)
        self.singular_hinges = tuple(manifest.get("singular_hinges", ()))
        #: moving hinges whose D is singular to working precision at the neutral or a sampled configuration
        #: (symgen.runtime.checks.ill_conditioned_hinges; a warning names each)
        self.ill_conditioned_hinges = tuple(manifest.get("ill_conditioned_hinges", ()))
        self._hk = {}
        #: where every number lives in the arrays exchanged with the C (symgen.abi.layout, shared with the generator)
        self.layout = b.layout
        # the one-state path's pieces, looked up once (the binding's public objects)
        self._one, self._Handle = b.one, b.Handle
        c = b.one_state
        self._fd1, self._id1, self._m1 = c["forward_dynamics"], c["inverse_dynamics"], c["mass_matrix"]
        self._pose1, self._poses1 = c["frame_pose"], c["frame_poses"]
        self._jac1, self._vel1 = c["frame_jacobian"], c["frame_velocity"]
        self._ta1 = c.get("ta_forward_dynamics")
        #: closed chains: the loop constraints (cut joints), in the manifest's order
        self.loops = tuple(_loops.LoopConstraint(self, i, info) for i, info in enumerate(manifest.get("loops", [])))
        self.loop_names = tuple(c.name for c in self.loops)
        if fastcall is not None:                   # instance attributes: they shadow the methods (their fallbacks)
            for call in b.fast_calls(fastcall, {n: getattr(self, n) for n in ONE_STATE}):
                setattr(self, call.__name__, call)

    @property
    def parameters(self) -> dict:
        """``{name: value in the model file}`` of the quantities this build keeps as runtime inputs
        (``symgen.build(..., parameters=[...])``): ``"<body>.mass"``, ``"<body>.com"``, ``"<body>.inertia"``
        (about the CoM, body axes), ``"<hinge>.armature"``, ``"gravity"``.  The dynamics methods and
        :meth:`rollout` take ``params={name: value}`` (one value, or one per state / case)."""
        return {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in self.binding.param_nominal.items()}

    @property
    def gravity(self) -> np.ndarray:
        """Gravity in newtonian axes (3,), used when a call gives no ``gravity=``; assign or edit in place."""
        return self.binding.gravity

    @gravity.setter
    def gravity(self, g):
        self.binding.set_gravity(g)
        if self._derivative_binding not in (None, self.binding):
            self._derivative_binding.set_gravity(g)

    @property
    def lane_width(self) -> int:
        """States per call of the batched forward dynamics on this CPU: 8, 4 or 2 where the batch runs its full
        blocks on the lane form (AVX-512, AVX2, SSE2/NEON vectors; chosen for the CPU that generated the model,
        ``SYMGEN_LANE_WIDTH`` forces one), 1 where it goes one state at a time (no lane form, e.g. closed chains
        or models past the straight-line limits, or a CPU without the lanes' ISA).  Every lane computes the same
        bits as the one-state call."""
        return int(getattr(self.binding.lib, f"sg_{self.name}_lane_width")())

    def derivative_binding(self) -> ModelBinding:
        """The binding whose module holds the derivative functions (and the centroidal ones): :attr:`binding` when they were compiled into
        the model's module (``symgen.build(..., derivatives=True)``, ``python -m symgen build --derivatives``),
        else a second module with them, compiled on the first call (then from the compile cache) and loaded."""
        db = self._derivative_binding
        if db is not None:
            return db
        if self.manifest.get("derivatives", False):
            db = self.binding
        elif self._derivatives_module is None:
            raise NotImplementedError(
                f"{self.name}: this module was compiled without the derivative and centroidal functions; build the model with "
                f"derivatives=True (symgen.build(..., derivatives=True), python -m symgen build --derivatives), or "
                f"through symgen.build, which compiles them on the first derivative call")
        else:
            db = ModelBinding(self._derivatives_module(), dict(self.manifest, derivatives=True))
            db.set_gravity(self.binding.gravity)
        self._derivative_binding = db
        if self._fastcall is not None:          # the compiled one-state calls of the derivative methods
            for call in db.derivative_fast_calls(self._fastcall, {n: getattr(type(self), n).__get__(self)
                                                                  for n in DERIVATIVE_CALLS}):
                setattr(self, call.__name__, call)
        return db

    def __repr__(self):
        return f"<symgen.MultibodyModel {self.name}: nq={self.nq} nu={self.nu} bodies={self.nb}>"

    # ---- layout
    def _hinge(self, name):
        try:
            return self.manifest["hinges"][name]
        except KeyError:
            raise KeyError(f"{self.name}: no hinge named {name!r} (hinges: {', '.join(self.hinge_names)})") from None

    def _joint(self, name):
        """[q start, q end, u start, u end] of a MuJoCo joint of a model read from MJCF, of a flexible body's
        mode (``panel.mode0``) or of all its modes (``panel.modes``); None for a hinge."""
        if name in self.hinge_names:
            return None
        modes = self.manifest.get("modes") or {}
        if name in modes:
            return modes[name]["q"] + modes[name]["u"]
        if name.endswith(".modes") and f"{name[:-6]}.mode0" in modes:
            mine = [m for m in modes.values() if m["body"] == name[:-6]]
            return [mine[0]["q"][0], mine[-1]["q"][1], mine[0]["u"][0], mine[-1]["u"][1]]
        return (self.manifest.get("mujoco") or {}).get("joints", {}).get(name)

    def q_slice(self, hinge: str) -> slice:
        """Where a hinge's Q lives; also a flexible body's modal coordinates (``"panel.mode0"``, or all of them:
        ``"panel.modes"``) and, for a model read from MJCF, each MuJoCo joint (e.g. one of a compound hinge)."""
        j = self._joint(hinge)
        return slice(j[0], j[1]) if j else slice(*self._hinge(hinge)["q"])

    def u_slice(self, hinge: str) -> slice:
        """Where a hinge's U lives (also a mode's or a body's modes, and a MuJoCo joint's: :meth:`q_slice`)."""
        j = self._joint(hinge)
        return slice(j[2], j[3]) if j else slice(*self._hinge(hinge)["u"])

    def default_q(self) -> np.ndarray:
        """Each hinge's default Q (Simbody's default Q): ``q0:`` in the model file, or the Q that gives its
        ``default_transform:`` (``fit_q`` at build), else its neutral Q (:meth:`neutral_q`); sanitized."""
        q = np.zeros(self.nq)
        for h in self.manifest["hinges"].values():
            q[slice(*h["q"])] = h.get("default_q", h["neutral_q"])
        return self.sanitize(q) if self.nq else q

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
        return self._convert_mujoco(qpos, qvel, (1, 2, 3, 0), ("qpos", "qvel"))

    def to_mujoco(self, q, u=None):
        """MuJoCo's ``(qpos, qvel)`` from ``(q, u)`` (one state or a batch); the converse of :meth:`from_mujoco`."""
        return self._convert_mujoco(q, u, (3, 0, 1, 2), ("q", "u"))

    def _convert_mujoco(self, pos, vel, order, names):
        """``pos`` with each quaternion's 4 entries taken in ``order`` (MuJoCo <-> symgen), and ``vel`` as it is,
        both checked against nQ and nU (``names``: the arguments' names in errors)."""
        info = self._mujoco()
        out = np.array(pos, dtype=np.float64)
        if out.shape[-1:] != (self.nq,) or out.ndim not in (1, 2):
            raise ValueError(f"{self.name}: {names[0]} must have shape ({self.nq},) or (N, {self.nq}), got {out.shape}")
        src = np.asarray(pos, np.float64)
        for a in info["quat_adr"]:
            out[..., a:a + 4] = src[..., [a + k for k in order]]
        if vel is None:
            return out
        v = np.array(vel, dtype=np.float64)
        if v.shape[-1:] != (self.nu,) or v.shape[:-1] != out.shape[:-1]:
            raise ValueError(f"{self.name}: {names[1]} must have shape ({self.nu},) or (N, {self.nu}) matching "
                             f"{names[0]}, got {v.shape}")
        return out, v

    def hinge_kernels(self, hinge: str) -> HingeKernels:
        """The compiled kernels of one hinge (transform, coord_map, pose_gradient, ...)."""
        info = self._hinge(hinge)
        if hinge not in self._hk:
            spec = self.manifest["hinge_specs"][info["slug"]]
            self._hk[hinge] = HingeKernels(self.binding, spec)
        return self._hk[hinge]

    def frame_handle(self, frame) -> FrameHandle:
        """A handle of the frame (name or handle): its index in ``frame_names``, accepted wherever a frame name
        is; it skips the name lookup on every call."""
        return self._Handle(self.binding.frame_index(frame))

    # ---- frame queries
    # One state of C-contiguous float64 vectors: one C call (ModelBinding.one; a built model's compiled call
    # in front of the method takes it without Python); anything else: the batched path.
    def frame_pose(self, q, frame, out=None) -> np.ndarray:
        """4x4 pose of the frame (name or :meth:`frame_handle`) in newtonian; ``out``: a preallocated float64
        array of the result's shape, filled and returned."""
        f = frame if type(frame) is self._Handle else self.binding.frame_index(frame)
        pose1 = self._pose1
        r = self._one("frame_pose", (q,), (4, 4), out, lambda pq, po: pose1(pq, f, po))
        return r[0] if r is not None else self.binding.frame_query("frame_pose", (4, 4), q, None, frame, out)

    def frame_poses(self, q, out=None) -> np.ndarray:
        """Poses (4x4, in newtonian) of all frames, in ``frame_names`` order: (n_frames, 4, 4), or
        (N, n_frames, 4, 4) for a batch; ``out`` as in :meth:`frame_pose`."""
        b = self.binding
        r = self._one("frame_poses", (q,), b.shape_poses, out, self._poses1)
        return r[0] if r is not None else b.frame_query("frame_poses", b.shape_poses, q, None, None, out)

    def jacobian(self, q, frame, out=None) -> np.ndarray:
        """6 x nU map from U to the frame's inertial spatial velocity [w; v] in frame axes (walks only the
        frame's ancestors); ``out`` as in :meth:`frame_pose`."""
        b = self.binding
        f = frame if type(frame) is self._Handle else b.frame_index(frame)
        jac1 = self._jac1
        r = self._one("jacobian", (q,), b.shape_J, out, lambda pq, po: jac1(pq, f, po))
        return r[0] if r is not None else b.frame_query("frame_jacobian", b.shape_J, q, None, frame, out)

    def jacobian_dot(self, q, u, frame: str) -> np.ndarray:
        """Time derivative of :meth:`jacobian` along Qdot = N U."""
        b = self.binding
        single, Q, U = b.states(q, u)
        return b.unbatch(single, b.frame_data(Q, U, frame)[3])

    def frame_velocity(self, q, u, frame, out=None) -> np.ndarray:
        """Inertial spatial velocity [w; v] of the frame, in frame axes; ``out`` as in :meth:`frame_pose`."""
        f = frame if type(frame) is self._Handle else self.binding.frame_index(frame)
        vel1 = self._vel1
        r = self._one("frame_velocity", (q, u), (6,), out, lambda pq, pu, po: vel1(pq, pu, f, po))
        return r[0] if r is not None else self.binding.frame_query("frame_velocity", (6,), q, u, frame, out)

    def frame_acceleration(self, q, u, udot, frame: str) -> np.ndarray:
        """Classical acceleration [w_dot; a] of the frame origin, in frame axes (gravity not added)."""
        b = self.binding
        single, Q, U = b.states(q, u)
        _, _, Ud = b.states(q, udot)
        _, _, J, Jd = b.frame_data(Q, U, frame)
        V = np.einsum("nij,nj->ni", J, U)
        A = np.einsum("nij,nj->ni", J, Ud) + np.einsum("nij,nj->ni", Jd, U)
        A[:, 3:] += np.cross(V[:, :3], V[:, 3:])
        return b.unbatch(single, A)

    def qdot(self, q, u) -> np.ndarray:
        """Qdot = N(Q) U for the whole model."""
        b = self.binding
        single, Q, U = b.states(q, u)
        return b.unbatch(single, b.call_batch("qdot", Q, U, None, self.nq)[0])

    def sanitize(self, q) -> np.ndarray:
        """Equivalent Q: SPHERICAL rotation vectors with |r| <= pi, unit quaternions."""
        b = self.binding
        single, Q, U = b.states(q)
        return b.unbatch(single, b.call_batch("sanitize", Q, U, None, self.nq)[0])

    def f2f(self, oframe, pframe) -> FrameToFrame:
        """Relative kinematics of ``pframe`` with respect to ``oframe`` (names or handles): a
        :class:`~symgen.runtime.f2f.FrameToFrame` (``rel_transform``, ``rel_sp_vel``, ``rel_sp_accel``,
        ``jacobian``, ``pose_gradient`` and the ``*_num_diff`` twins)."""
        b = self.binding
        return FrameToFrame(self, self.frame_names[b.frame_index(oframe)], self.frame_names[b.frame_index(pframe)])

    # ---- dynamics
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
        b = self.binding
        loops = bool(self.loops) and not tree
        if loops and params is not None:  # a model with loops has no theta: only gravity can be a parameter
            b.p(1, np.zeros(self.nu), None, gravity, params)  # checks the names
            gravity, params = params.get("gravity", gravity), None
        if baumgarte is not None and not loops:
            raise ValueError(f"{self.name}: baumgarte= stabilizes loop constraints; this call has none"
                             + (" (tree=True)" if self.loops else ""))
        # one state without external forces: one C call (sg_<name>_forward_dynamics_single, or
        # _ta_forward_dynamics_single with loops, assembles p on the C stack)
        if f_ext is None and params is None:
            gp = b.gravity_pointer
            if loops:
                k = b.ffi.NULL if baumgarte is None else b.buf(b.loop_gains(baumgarte))
                ta1 = self._ta1
                r = self._one("forward_dynamics", (q, u, T), b.shape_u, out,
                              lambda pq, pu, pt, po: ta1(pq, pu, gp(gravity), pt, k, po))
            else:
                fd1 = self._fd1
                r = self._one("forward_dynamics", (q, u, T), b.shape_u, out,
                              lambda pq, pu, pt, po: fd1(pq, pu, gp(gravity), pt, po))
            if r is not None:
                if r[1]:
                    b.check_status(r[1], "forward_dynamics", q)
                return r[0]
        if loops:
            udot = _loops.ta_forward_dynamics(self, q, u, T, f_ext, gravity, baumgarte)["udot"]
            if out is not None:
                b.check_out(out, udot.shape, "forward_dynamics")[...] = udot
                return out
            return udot
        return b.dynamics("forward_dynamics", q, u, T, f_ext, gravity, out, params)

    def inverse_dynamics(self, q, u, udot, f_ext=None, gravity=None, out=None, actuated=None,
                         tree: bool = False, params=None) -> np.ndarray:
        """T by Newton-Euler (gravity included).  ``out`` as in :meth:`forward_dynamics`.

        On a model with loops, without ``actuated`` this is the cut tree's T (the loops carry no force).
        ``actuated=[hinge or loop, ...]`` solves the closed chain instead: given a motion consistent with the
        loops, returns ``(T, {loop: lambda})`` with T nonzero only on the actuated hinges, the least-squares
        (and minimum-norm where redundant) solution of ``ID_tree = S T_a + G_c^T lambda``; a loop's name
        actuates its cut joint, whose generalized force is the result's ``.cut[loop]``
        (:func:`symgen.runtime.loops.closed_inverse_dynamics`)."""
        if actuated is not None:
            return _loops.closed_inverse_dynamics(self, q, u, udot, actuated, f_ext=f_ext, gravity=gravity)
        b = self.binding
        if f_ext is None and params is None:        # one state: as forward_dynamics
            gp, id1 = b.gravity_pointer, self._id1
            r = self._one("inverse_dynamics", (q, u, udot), b.shape_u, out,
                          lambda pq, pu, pa, po: id1(pq, pu, gp(gravity), pa, po))
            if r is not None:
                return r[0]
        return b.dynamics("inverse_dynamics", q, u, udot, f_ext, gravity, out, params)

    # ---- derivatives (symgen.runtime.derivatives): Q derivatives are tangent, along Qdot = N(Q) e_j
    def forward_dynamics_derivatives(self, q, u, T, f_ext=None, gravity=None, params=None, wrt: str = "state"):
        """``dq, du, Minv``, an array (3, nU, nU) (for a batch (3, N, nU, nU)) that unpacks as: dUdot/dQ (tangent: column j along the motion of Q that U = e_j produces; d/dQ
        itself for PIN and SLIDER hinges), dUdot/dU and M^-1 (= dUdot/dT), each nU x nU; one state or a batch
        (leading N).  Generated C: forward-mode derivatives of the traced recursions, dUdot = M^-1 (dT -
        dRNEA) on the ATBI factorization.  ``f_ext``, ``gravity``, ``params`` as :meth:`forward_dynamics`;
        ``wrt="params"``: dUdot/dtheta (nU x n_theta, :meth:`theta`) of a parametric build."""
        self._tree_only("forward_dynamics_derivatives")
        return _derivs.forward_dynamics_derivatives(self, q, u, T, f_ext, gravity, params, wrt)

    def inverse_dynamics_derivatives(self, q, u, udot, f_ext=None, gravity=None, params=None, wrt: str = "state"):
        """``dq, du, M`` (an array (3, nU, nU), (3, N, nU, nU) for a batch): dT/dQ (tangent, as :meth:`forward_dynamics_derivatives`), dT/dU and M (= dT/dUdot);
        ``wrt="params"``: dT/dtheta (nU x n_theta), the regressor Y with ``Y @ theta() = T`` when every inertia
        is a parameter."""
        self._tree_only("inverse_dynamics_derivatives")
        return _derivs.inverse_dynamics_derivatives(self, q, u, udot, f_ext, gravity, params, wrt)

    def step_derivatives(self, q, u, T, dt: float, method: str = "rk4", f_ext=None, gravity=None, params=None):
        """``(A, B)`` of one :meth:`rollout` step (``method`` "rk4" or "euler", semi-implicit): x = (Q tangent,
        U), A = dx'/dx (2nU x 2nU), B = dx'/dT (2nU x nU); one state or a batch (leading N)."""
        self._tree_only("step_derivatives")
        return _derivs.step_derivatives(self, q, u, T, dt, method, f_ext, gravity, params)

    def theta(self, params=None) -> np.ndarray:
        """The parameters of a parametric build as the dynamics read them, linearly (per body m, h = m c, J about
        the body origin; armatures; names: :meth:`theta_names`), from ``params`` or the model file."""
        return _derivs.theta(self, params)

    def theta_names(self) -> list:
        """The names of :meth:`theta`'s entries, in order: per body whose inertia is a parameter ``<body>.m``,
        ``.h_x .h_y .h_z`` (h = m c), ``.J_xx .J_xy .J_xz .J_yy .J_yz .J_zz`` (about the body origin); per
        armature parameter ``<hinge>.armature[i]``."""
        return _derivs.theta_names(self)

    def _tree_only(self, what):
        flexible = sorted({m["body"] for m in self.modes.values()})
        if flexible:
            raise NotImplementedError(f"{self.name}: derivatives of models with flexible bodies ({', '.join(flexible)}) "
                                      f"are not generated yet ({what})")
        if self.loops:
            raise NotImplementedError(f"{self.name}: {what} is not available for models with loop constraints yet "
                                      f"(loops: {', '.join(c.name for c in self.loops)}); the tree's derivatives are "
                                      "those of the model without its loops: rebuild it without them")

    def mass_matrix(self, q, out=None, params=None) -> np.ndarray:
        """Composite-body mass matrix (nU x nU, symmetric).  ``out``: a preallocated float64 array of shape
        (nU, nU), or (N, nU, nU) for a batch, filled and returned.  ``params`` as in :meth:`forward_dynamics`."""
        b = self.binding
        if params is None:
            m1, zu, p0 = self._m1, b.zero_u, b.nominal_p
            r = self._one("mass_matrix", (q,), b.shape_M, out, lambda pq, po: m1(pq, zu, p0, po))
            if r is not None:
                return r[0]
        nu = self.nu
        single, Q, U = b.states(q)
        if out is not None:
            out = b.check_out(out, (nu, nu) if single else (Q.shape[0], nu, nu), "mass_matrix")
        # M reads p only for a parametric build's theta (one p per state); else one shared p, never read
        P = b.p(Q.shape[0], np.zeros(nu), None, None, params) if self.layout.theta_blocks or params else None
        res, _ = b.call_batch("mass_matrix", Q, U, P, nu * nu, None if out is None else out.reshape(Q.shape[0], nu * nu))
        return out if out is not None else b.unbatch(single, res.reshape(Q.shape[0], nu, nu))

    def minv_times(self, q, v) -> np.ndarray:
        """M(Q)^-1 v by the ATBI factorization (forward dynamics with U = 0, no gravity, T = v)."""
        b = self.binding
        single, Q, _ = b.states(q)
        _, _, V = b.states(q, v)
        out, status = b.call_batch("forward_dynamics", Q, np.zeros_like(V), b.p(Q.shape[0], V, None, np.zeros(3)),
                                   self.nu)
        b.check_status(status, "minv_times", Q)
        return b.unbatch(single, out)

    def _centroidal(self, q, u, params):
        """[A_G, h_G, c] of every state: (single, (N, 6 nU + 9)).  The centroidal functions live in the module of
        the derivative functions (:meth:`derivative_binding`: compiled on the first call)."""
        b, nu = self.derivative_binding(), self.nu
        if params is None:                 # one state: the one-state C function on the arrays' memory
            fn, p0 = getattr(b.lib, f"sg_{self.name}_centroidal_momentum_matrix"), b.nominal_p
            r = b.one("centroidal_momentum_matrix", (q,) if u is None else (q, u), (1, 6 * nu + 9), None,
                      (lambda pq, po: fn(pq, b.zero_u, p0, po)) if u is None else (lambda pq, pu, po: fn(pq, pu, p0, po)))
            if r is not None:
                return True, r[0]
        single, Q, U = b.states(q, u)
        P = b.p(Q.shape[0], np.zeros(nu), None, None, params) if self.layout.theta_blocks or params else None
        return single, b.call_batch("centroidal_momentum_matrix", Q, U, P, 6 * nu + 9)[0]

    def centroidal_momentum_matrix(self, q, params=None, out=None) -> np.ndarray:
        """The centroidal momentum matrix A_G (6 x nU; (N, 6, nU) for a batch): h_G = A_G U is the spatial
        momentum of the whole model about its centre of mass, rows ``[angular; linear]`` like every symgen
        spatial vector, in world (newtonian) axes.  Pinocchio's ``ccrba`` gives the same matrix with the rows
        ``[linear; angular]`` (and U ordered as its v).  ``params`` as in :meth:`forward_dynamics`.  Bodies welded to
        the newtonian frame (a fixed-base URDF's root link) are the ground, as Pinocchio's universe: no momentum,
        not in the centre of mass.  The centroidal functions are compiled on their first call, with the derivative
        functions (:meth:`derivative_binding`), as they are.  ``out=``: a preallocated C-contiguous float64 array
        of the result's shape to write into (and return), as :meth:`mass_matrix` takes."""
        nu, b = self.nu, self.derivative_binding()
        if out is None and params is None and np.ndim(q) == 1:      # one state: the one-state C function
            _, res = self._centroidal(q, None, params)
            return res.reshape(-1)[:6 * nu].reshape(6, nu)
        single, Q, U = b.states(q)
        if out is not None:
            out = b.check_out(out, (6, nu) if single else (Q.shape[0], 6, nu), "centroidal_momentum_matrix")
        P = b.p(Q.shape[0], np.zeros(nu), None, None, params) if self.layout.theta_blocks or params else None
        # A_G alone, straight into the result's (N, 6, nU) rows (sg_<m>_centroidal_momentum_matrix_only_batch)
        res, _ = b.call_batch("centroidal_momentum_matrix_only", Q, U, P, 6 * nu,
                              None if out is None else out.reshape(Q.shape[0], 6 * nu))
        return out if out is not None else b.unbatch(single, res.reshape(-1, 6, nu))

    def centroidal_momentum(self, q, u, params=None) -> np.ndarray:
        """h_G = A_G(Q) U (6; (N, 6) for a batch): the model's spatial momentum ``[angular; linear]`` about its
        centre of mass, world axes (Pinocchio's ``computeCentroidalMomentum`` with the halves swapped)."""
        single, res = self._centroidal(q, u, params)
        return self.binding.unbatch(single, res[:, 6 * self.nu:6 * self.nu + 6])

    def center_of_mass(self, q, params=None) -> np.ndarray:
        """The model's centre of mass in the newtonian frame (3; (N, 3) for a batch); Pinocchio's
        ``centerOfMass``."""
        single, res = self._centroidal(q, None, params)
        return self.binding.unbatch(single, res[:, 6 * self.nu + 6:])

    def centroidal_dynamics(self, q, u, udot, params=None) -> np.ndarray:
        """The rate of the centroidal momentum, hdot_G = A_G Udot + Adot_G U (6; (N, 6) for a batch), about
        the (moving) centre of mass, world axes, ``[angular; linear]``: the net external wrench about the centre
        of mass that this motion takes, gravity not included (``centroidal_dynamics(q, u, 0)`` is the bias
        Adot_G U).  Pinocchio's ``computeCentroidalMomentumTimeVariation`` with the halves swapped."""
        b = self.derivative_binding()
        single, Q, U = b.states(q, u)
        _, _, A = b.states(q, udot)
        res, _ = b.call_batch("centroidal_dynamics", Q, U, b.p(Q.shape[0], A, None, None, params), 6)
        return b.unbatch(single, res)

    def _no_modes(self, verb):
        """The ATBI introspection (atbi_matrices, its filter vectors, Upsilon) runs on the per-kind steps, which
        know no modes: refused on a model with flexible bodies."""
        if self.manifest.get("modes"):
            flex = sorted({m["body"] for m in self.manifest["modes"].values()})
            raise NotImplementedError(f"{self.name}: {verb} is not available for a model with flexible bodies "
                                      f"({', '.join(flex)}) yet")

    def _atbi_blocks(self, verb, body, q, u=None, T=None, f_ext=None, gravity=None):
        """(single, body k's atbi_matrices blocks (N x 276), layout.mats) of the states."""
        if not isinstance(body, str) or body not in self.body_names:      # (an array: arguments out of order)
            raise KeyError(f"{self.name}: {verb}: no body named {body!r} (bodies: {', '.join(self.body_names)})")
        self._no_modes(verb)
        b = self.binding
        k = self.body_names.index(body)
        single, Q, U = b.states(q, u)
        T = b.states(q, T)[2]
        B = self.layout.mats
        out, status = b.call_batch("atbi_matrices", Q, U, b.p(Q.shape[0], T, f_ext, gravity), B.size * self.nb)
        b.check_status(status, verb, Q)
        return single, out.reshape(-1, self.nb, B.size)[:, k], B

    def atbi_matrices(self, q, body: str) -> dict:
        """P, D, Dinv, G, tauper (= I - G H^T), psi (= phi(parent, body) tauper) and H (the hinge's coord map in
        the body frame) at a body's hinge.  D, Dinv are nU_h x nU_h, G and H 6 x nU_h."""
        single, blk, B = self._atbi_blocks("atbi_matrices", body, q)
        nh, m = self.layout.nuh[self.body_names.index(body)], blk.shape[0]
        shapes = {"P": (6, 6), "D": (nh, nh), "Dinv": (nh, nh), "G": (6, nh), "tauper": (6, 6), "psi": (6, 6),
                  "H": (6, nh)}
        res = {f: blk[:, B[f]:B[f] + r * c].reshape(m, r, c) for f, (r, c) in shapes.items()}
        return {k2: self.binding.unbatch(single, v) for k2, v in res.items()}

    def atbi_filter_vectors(self, q, u, T, body: str, f_ext=None, gravity=None) -> dict:
        """The ATBI's filter vectors at a body's hinge (Jain's names; Karana's ``ATBIFilterVectors``), from its
        tip-to-base sweep at (Q, U, T):

        - ``z`` (6): the articulated-body bias force at the body frame, ``z = P a + b - f_ext + sum phi z+``
          over the children (a: the hinge's velocity-product acceleration);
        - ``zplus`` (6): ``z+ = z + G eps``, what the body passes to its parent (as ``phi z+``); the force the
          parent applies across the hinge is ``f = P+ alpha+ + z+ = P (alpha - a) + z`` (P+ = tauper P,
          alpha+ = phi^T alpha(parent));
        - ``eps`` (nU_h): ``eps = T - H^T z``, the innovation; ``nu`` (nU_h): ``nu = D^-1 eps``, so that
          ``Udot = nu - G^T alpha+``.

        Gravity enters, as in Jain's form, as the newtonian frame's acceleration ``alpha(0) = [0; -g]``, not as a
        force: z holds no weight, and alpha is the acceleration that includes -g (Pinocchio's ``a_gf``).  Same
        frames as :meth:`atbi_matrices` (the body frame).  One state or a batch."""
        single, blk, B = self._atbi_blocks("atbi_filter_vectors", body, q, u, T, f_ext, gravity)
        nh = self.layout.nuh[self.body_names.index(body)]
        res = {"z": blk[:, B["z"]:B["z"] + 6], "zplus": blk[:, B["zplus"]:B["zplus"] + 6],
               "eps": blk[:, B["eps"]:B["eps"] + nh], "nu": blk[:, B["nu"]:B["nu"] + nh]}
        return {k2: self.binding.unbatch(single, np.ascontiguousarray(v)) for k2, v in res.items()}

    def upsilon(self, q, frame) -> np.ndarray:
        """Upsilon = J M^-1 J^T (6 x 6) of a frame: the operational-space compliance (Jain's Upsilon, Simbody's
        Y), J the frame's :meth:`jacobian`.  Computed by the base-to-tip recursion
        ``Upsilon(k) = psi^T Upsilon(parent) psi + H D^-1 H^T`` on the ATBI factorization in the generated C
        (``sg_<m>_upsilon``, O(n), M^-1 never formed), then moved from the body frame to the frame,
        ``phi^T(body, frame) Upsilon phi(body, frame)``.  A model with loops: the tree's (loops cut)."""
        self._no_modes("upsilon")
        b = self.binding
        single, Q, U = b.states(q)
        body, R, l = b.frame(frame)
        if body < 0:
            return b.unbatch(single, np.zeros((Q.shape[0], 6, 6)))
        out, status = b.call_batch("upsilon", Q, U, b.p(Q.shape[0], np.zeros((Q.shape[0], self.nu)), None, None),
                                   36 * self.nb)
        b.check_status(status, "upsilon", Q)
        Y = out.reshape(-1, self.nb, 6, 6)[:, body]
        phi = np_phi(R, l)
        return b.unbatch(single, phi.T @ Y @ phi)

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

    def interbody_forces(self, q, u, T, f_ext=None, gravity=None, baumgarte=None, T_cut=None,
                         node: str = "source") -> dict:
        """Karana's ``getInterBodyForceTAFwdDyn``: per loop the spatial constraint force ``[N; F]`` after TA
        forward dynamics, with the sign of a force acting on the target node (Karana books a pnode's
        inter-body force at the onode), including the cut joint's own generalized forces ``T_cut`` ({loop:
        T}, applied through :meth:`LoopConstraint.sp_external_force_from_t`).  ``node="source"`` (Karana's
        choice): at the source node's origin in source axes, ``phi(S, T) f_T``; ``node="target"``: ``f_T`` at the
        target node's origin in target axes.  A node on the newtonian is reported like any other."""
        if node not in ("source", "target"):
            raise ValueError(f"{self.name}: interbody_forces: node must be 'source' or 'target', got {node!r}")
        fx = None
        if T_cut:
            fx = sum(self.loop(k).sp_external_force_from_t(v, q=q, as_f_ext=True) for k, v in T_cut.items())
            fx = fx + (self.binding.fext(1, f_ext)[0] if f_ext is not None else 0.0)
        res = _loops.ta_forward_dynamics(self, q, u, T, fx if fx is not None else f_ext, gravity, baumgarte)
        out = {c.name: res["f_target"][..., c.index, :] for c in self.loops}
        for k, v in (T_cut or {}).items():
            out[k] = out[k] + self.loop(k).sp_external_force_from_t(v, q=q)[1]
        if node == "target":
            return out
        for c in self.loops:                    # phi(S, T) f_T: [R N + l x R F; R F], X_ST = X_S^-1 X_T
            X = np.linalg.solve(self.frame_pose(q, c.source), self.frame_pose(q, c.target))
            R, l = X[..., :3, :3], X[..., :3, 3]
            f = out[c.name]
            F = np.einsum("...ij,...j->...i", R, f[..., 3:])
            out[c.name] = np.concatenate([np.einsum("...ij,...j->...i", R, f[..., :3]) + np.cross(l, F), F], axis=-1)
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


def load_built(path) -> MultibodyModel:
    """Load a built model's folder, ``generated/<model>/`` (manifest.json + compiled module, as ``symgen.build(...,
    out=)`` or ``python -m symgen build --out`` write it), without sympy or jinja2.  (A model *file* is read by
    :func:`symgen.model.load_model`.)"""
    mod, manifest = load_generated(path)
    return MultibodyModel(mod, manifest, path=Path(path), fastcall=_load_fastcall(Path(path), manifest))
