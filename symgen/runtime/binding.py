"""The compiled module of one built model, bound to numpy (no sympy, no jinja2).

:class:`ModelBinding` is the one object that touches a model's cffi module: it owns the ``lib`` / ``ffi``
pair, the sizes and the :class:`~symgen.abi.layout.ModelLayout` read from the manifest, the frames by index,
gravity, the parametric build's nominal values and the parameter block ``p`` of the dynamics, and it makes
every C call (one state, or a batch in one C loop).  Its public API (no leading underscore) is what
:class:`~symgen.runtime.model.MultibodyModel` (a thin set of verbs over it, reachable as ``mb.binding``) and
the other rooms of the runtime (:mod:`.loops`, :mod:`.integrate`, :mod:`.f2f`, :mod:`.parameters`,
:mod:`.checks`) call:

Data (read-only by convention):

* ``lib``, ``ffi``: the cffi module (its ``sg_<name>_*`` functions) and its FFI; ``manifest``, ``name``;
* ``nq``, ``nu``, ``nb``; ``layout``: the :class:`ModelLayout` (offsets of every exchanged array);
* ``body_names`` (C order), ``frame_names`` (index order: the C functions' frame argument), ``Handle``
  (this model's :class:`FrameHandle` type);
* ``shape_q``, ``shape_u``, ``shape_J``, ``shape_M``, ``shape_poses``: one-state shapes (``shape_q`` and
  ``shape_u`` never match on a model without Q or U, which turns the one-state path off);
* ``one_state``: the raw one-state C functions by name (``forward_dynamics``, ``inverse_dynamics``,
  ``mass_matrix``, ``frame_pose``, ``frame_poses``, ``frame_jacobian``, ``frame_velocity``, and
  ``ta_forward_dynamics`` with loops); ``zero_u``, ``nominal_p``: pointers to U = 0 and to the p of calls
  that read at most theta;
* ``gravity`` (3,), edited in place or replaced by ``set_gravity(g)``; ``param_nominal``, ``body_props``: a
  parametric build's parameters and every body's (mass, com, inertia) as the model file gives them.

Calls:

* ``buf(a)``: cffi ``double[]`` pointer to a float64 C-contiguous array (a scratch zero when empty);
* ``shared_p(gravity)``: the one p row of ``sg_<name>_<forward|inverse>_dynamics_batch_mid`` (states that
  share p but for T / Udot: what ``dynamics`` calls without f_ext and params);
* ``states(q, u=None)`` -> ``(single, Q, U)``, checked, (N, nQ) / (N, nU); ``unbatch(single, a)``: ``a[0]``
  for one state, else ``a``;
* ``check_out(out, shape, what)``: the caller's ``out=`` checked; ``out_pointer(...)``: the same as a pointer;
* ``frame_index(frame)``, ``frame(frame)`` -> index, ``(body, R, p)``; ``fext(n, f_ext)`` -> (n, nb, 6)
  body-frame wrenches;
* ``gravity_vector(g)``, ``gravity_pointer(g)``, ``loop_gains(baumgarte)``: argument checks;
  ``p(n, middle, f_ext, gravity, params=None)``: the dynamics' p = [g, tau or udot, f_ext, theta];
* ``check_status(status, what)``: a kernel's nonzero status -> ``LinAlgError`` naming the body and hinge;
* ``one(what, vecs, shape, out, call)``: one state, one C call on the arrays' memory (None: not such vectors);
* ``call_batch(kernel, Q, U, P, size, out=None)`` -> ``(out, status)``: ``sg_<name>_<kernel>_batch``;
  ``frame_query(...)``: the batched frame queries; ``dynamics(...)``: batched forward / inverse dynamics;
* ``bodies(Q, U)``, ``poses(Q)``, ``frame_data(Q, U, frame)``: kinematics decoded from the layout;
* ``rollout(...)``: the raw ``sg_<name>_rollout`` call; ``fast_calls(ext, methods)``: the compiled one-state
  calls (symgen/runtime/fastcall.c) in front of a model's methods.
"""
from __future__ import annotations

import numpy as np

from . import parameters as _parameters
from ..abi.layout import ModelLayout
from ..numeric import np_skew

_F64 = np.dtype(np.float64)
_ND = np.ndarray
_empty = np.empty

#: the one-state C functions (``sg_<name>_<key>``, the dynamics' ``_single`` variants) by name
ONE_STATE_C = {"forward_dynamics": "forward_dynamics_single", "inverse_dynamics": "inverse_dynamics_single",
               "mass_matrix": "mass_matrix", "frame_pose": "frame_pose", "frame_poses": "frame_poses",
               "frame_jacobian": "frame_jacobian", "frame_velocity": "frame_velocity"}

#: the kinds of one-state C functions in symgen/runtime/fastcall.c (their argument lists)
_K_Q_F, _K_Q_U_F, _K_Q, _K_Q_FIXED, _K_DYN, _K_TA, _K_STEP = range(7)


class FrameHandle(int):
    """A frame of one model, resolved once (:meth:`MultibodyModel.frame_handle`): its index in the model's
    ``frame_names``.  Accepted wherever a frame name is; it skips the name lookup.  Each model has its own
    handle type, so a handle of another model is refused (unless that model has the same frames)."""

    __slots__ = ()
    _model, _names = "", ()

    @property
    def name(self) -> str:
        """The frame's name."""
        return self._names[self]

    def __repr__(self):
        return f"<frame {self._names[self]!r} of {self._model} (index {int(self)})>"


def _phiT_apply(R, l, M):
    """phi^T(A, B) M for X_AB = (R, l), M of shape (..., 6, k): [R^T M_w; R^T (M_v - l x M_w)]."""
    Mw, Mv = M[..., :3, :], M[..., 3:, :]
    RT = np.swapaxes(R, -1, -2)
    return np.concatenate([RT @ Mw, RT @ (Mv - np_skew(l) @ Mw)], axis=-2)


class ModelBinding:
    """A model's compiled module with its pointers, its one-state and batched calls, status decoding, argument
    checks and ``out=`` handling (the module docstring lists the public API).  ``module``: anything with
    ``lib`` and ``ffi`` (a cffi module, or another binding); ``manifest``: the model's manifest.json."""

    def __init__(self, module, manifest: dict):
        self.lib, self.ffi = module.lib, module.ffi
        self.manifest = manifest
        self.name = manifest["name"]
        self.nq, self.nu, self.nb = manifest["nq"], manifest["nu"], manifest["nb"]
        #: where every number lives in the arrays exchanged with the C (symgen.abi.layout, shared with the generator)
        self.layout = ModelLayout.from_manifest(manifest)
        self.body_names = tuple(b["name"] for b in manifest["bodies"])
        self.frame_names = tuple(manifest["frames"])
        frames = {k: (v["body"], np.array(v["R"], float), np.array(v["p"], float))
                  for k, v in manifest["frames"].items()}
        self._frame_list = tuple(frames[n] for n in self.frame_names)
        self._frame_index = {n: i for i, n in enumerate(self.frame_names)}
        #: a flexible body's nodes, frames that move with its modes: {name: (body index, s (3), Phi (3 x n),
        #: its modes' Q slice, U slice)} (node_data); in frame_names too, after the body-fixed frames
        self.nodes = {}
        for k, b in enumerate(manifest["bodies"]):
            mine = [m for m in (manifest.get("modes") or {}).values() if m["body"] == b["name"]]
            for nd in b.get("nodes", ()):
                self.nodes[nd["name"]] = (k, np.array(nd["pos"], float), np.array(nd["shape"], float).reshape(3, -1),
                                          slice(mine[0]["q"][0], mine[-1]["q"][1]),
                                          slice(mine[0]["u"][0], mine[-1]["u"][1]))
        self.Handle = type("FrameHandle", (FrameHandle,), {"__slots__": (), "_model": self.name,
                                                           "_names": self.frame_names})
        self._fb, self._dbl = self.ffi.from_buffer, self.ffi.typeof("double[]")
        # the one-state path needs nQ, nU > 0 (a shape that never matches turns it off)
        self.shape_q, self.shape_u = ((self.nq,), (self.nu,)) if self.nq and self.nu else ((-1,), (-1,))
        self.shape_J, self.shape_M = (6, self.nu), (self.nu, self.nu)
        self.shape_poses = (len(self.frame_names), 4, 4)
        #: the raw one-state C functions by name (ONE_STATE_C; "ta_forward_dynamics" on a model with loops)
        self.one_state = {k: getattr(self.lib, f"sg_{self.name}_{c}") for k, c in ONE_STATE_C.items()}
        if manifest.get("loops"):
            self.one_state["ta_forward_dynamics"] = getattr(self.lib, f"sg_{self.name}_ta_forward_dynamics_single")
        self._gravity = np.array(manifest["gravity"], dtype=np.float64)
        self._g_buf = self._fb(self._dbl, self._gravity)  # sees in-place changes; set_gravity renews it
        self._calls = ()
        #: every body's (mass, com, inertia) in the model file; a parametric build's parameters there
        self.body_props = {b["name"]: (float(b["mass"]), np.array(b["com"], float), np.array(b["inertia"], float))
                           for b in manifest["bodies"]}
        self.param_nominal = _parameters.nominal(self)
        self._u1 = np.zeros(max(self.nu, 1))
        #: pointer to U = 0 (the one-state mass matrix's u)
        self.zero_u = self._fb(self._dbl, self._u1)
        self._p1 = np.zeros(1)      # unread, or a parametric build's nominal p
        if self.layout.theta_blocks:
            self._p1 = np.ascontiguousarray(self.p(1, np.zeros(self.nu), None, None)[0])
        #: pointer to the p of calls that read at most theta (the one-state mass matrix, the loop Jacobian, the
        #: kernels that read no p): a parametric build's p at the model file's values, else one unread zero
        self.nominal_p = self._fb(self._dbl, self._p1)
        self._deriv_rows = {}   # the lean calls' p rows (derivatives_one, step_one, shared_p) and work array

    def __repr__(self):
        return f"<symgen.ModelBinding {self.name}: module {self.manifest.get('module', '?')}>"

    # ---- pointers, states, outputs
    def buf(self, a):
        """cffi ``double[]`` pointer to the memory of a float64 C-contiguous array (a scratch zero if empty)."""
        return self._fb(self._dbl, a) if a.size else self._fb(self._dbl, np.zeros(1))

    def _out_buf(self, a):
        return self.ffi.from_buffer("double[]", a, require_writable=True) if a.size else self.ffi.NULL

    def states(self, q, u=None):
        """``(single, Q, U)``: ``q`` one state (nQ,) or a batch (N, nQ), ``u`` the same with nU (None: zeros),
        checked and made C-contiguous float64 (N, nQ) and (N, nU); ``single`` for one state."""
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

    @staticmethod
    def unbatch(single, a):
        """``a[0]`` for one state (``single`` from :meth:`states`), ``a`` for a batch."""
        return a[0] if single else a

    def check_out(self, out, shape, what):
        """The caller's preallocated output, checked (float64, C-contiguous, writable, exact shape)."""
        if (type(out) is not np.ndarray or out.dtype is not _F64 or out.shape != shape
                or not (out.flags.c_contiguous and out.flags.writeable)):
            got = f"{type(out).__name__} {getattr(out, 'dtype', '')} {getattr(out, 'shape', '')}".strip()
            raise ValueError(f"{self.name}: {what}: out= must be a writable C-contiguous float64 array of shape "
                             f"{shape}, got {got}")
        return out

    def out_pointer(self, out, shape, what):
        """cffi pointer to the caller's ``out=`` array, checked as :meth:`check_out` does."""
        if type(out) is _ND and out.dtype is _F64 and out.shape == shape and out.flags.writeable:
            try:
                return self._fb(self._dbl, out)
            except ValueError:                          # not C-contiguous
                pass
        self.check_out(out, shape, what)                # raises, naming what is wrong
        raise AssertionError("unreachable")

    # ---- frames and external forces
    def frame_index(self, frame) -> int:
        """Index of a frame given by name or handle (KeyError: no such name; ValueError: another model's handle)."""
        if type(frame) is self.Handle:
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

    def frame(self, frame):
        """``(body index, R, p)`` of a frame given by name or handle: its placement on its body (-1: newtonian)."""
        return self._frame_list[self.frame_index(frame)]

    def fext(self, n, f_ext):
        """External forces as body-frame wrenches at the body origins, shape (n, nb, 6): ``f_ext`` an array
        (nb, 6) or (n, nb, 6), or ``{frame: [N; F] in that frame}``."""
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
            if name in self.nodes:
                raise NotImplementedError(f"{self.name}: f_ext on node {name!r} of a flexible body: a force on a node "
                                          "also drives the modes (Phi^T F); apply it at the body, and Phi^T F in T's "
                                          "modal entries")
            b, R, l = self.frame(name)
            if b < 0:
                raise ValueError(f"{self.name}: f_ext on {name!r} (fixed on 'newtonian') acts on nothing")
            f = np.broadcast_to(np.asarray(f, dtype=float), (n, 6))
            RN, RF = f[:, :3] @ R.T, f[:, 3:] @ R.T   # phi(b, f) f: [R N + l x R F; R F]
            F[:, b, :3] += RN + np.cross(l, RF)
            F[:, b, 3:] += RF
        return F

    # ---- gravity, Baumgarte gains, the dynamics' p
    @property
    def gravity(self) -> np.ndarray:
        """The model's gravity (3,), newtonian axes: what a call without ``gravity=`` uses; edit in place, or
        replace it through :meth:`set_gravity`."""
        return self._gravity

    def set_gravity(self, g) -> None:
        """Replace the model's gravity (3 numbers, checked): the one-state calls' pointer and the compiled
        calls (:meth:`fast_calls`) follow."""
        self._gravity = np.array(self.gravity_vector(g))
        self._g_buf = self._fb(self._dbl, self._gravity)
        for call in self._calls:
            if call.__name__ in ("forward_dynamics", "inverse_dynamics", "forward_dynamics_derivatives",
                                 "inverse_dynamics_derivatives", "step_derivatives"):
                call.set_gravity(self._gravity)

    def gravity_vector(self, g):
        """``g`` as a C-contiguous float64 (3,), checked."""
        g = np.ascontiguousarray(g, dtype=np.float64)
        if g.shape != (3,):
            raise ValueError(f"{self.name}: gravity must be 3 numbers, got {g.shape}")
        return g

    def shared_p(self, gravity):
        """A pointer to one p row (middle zero) for the batches whose states share p but for the middle: with the
        model's gravity as it is now (it may have been edited in place: the kept row is refreshed, with the same
        numbers in every thread), or ``gravity`` (3 numbers: a row of this call's own)."""
        if gravity is not None:
            return self.buf(np.ascontiguousarray(self.p(1, np.zeros(self.nu), None, gravity)[0]))
        return self._lean_p("batch_mid", 0.0)

    def gravity_pointer(self, g):
        """The one-state calls' gravity: the model's (``g`` None), or ``g`` (3 numbers) checked."""
        return self._g_buf if g is None else self._fb(self._dbl, self.gravity_vector(g))

    def loop_gains(self, baumgarte) -> np.ndarray:
        """Baumgarte's ``(omega_n, zeta)`` checked (finite, >= 0), or zeros for None (no stabilization)."""
        if baumgarte is None:
            return np.zeros(2)
        try:
            w, z = (float(x) for x in baumgarte)
        except (TypeError, ValueError):
            raise ValueError(f"{self.name}: baumgarte must be (omega_n, zeta), got {baumgarte!r}") from None
        if not (np.isfinite(w) and np.isfinite(z)) or w < 0 or z < 0:
            raise ValueError(f"{self.name}: baumgarte must be (omega_n, zeta) with both >= 0, got {baumgarte!r}")
        return np.array([w, z])

    def p(self, n, middle, f_ext, gravity, params=None):
        """p = [g (3), middle (nU), f_ext in body frames (6 per body), theta] for n states (theta: the
        parameters of a parametric build, from ``params`` or the model file)."""
        if params and "gravity" in params:
            if gravity is not None:
                raise ValueError(f"{self.name}: give gravity= or params={{'gravity': ...}}, not both")
            gravity = params["gravity"]
        g = self._gravity if gravity is None else np.asarray(gravity, dtype=float)
        if g.shape not in ((3,), (n, 3)):
            raise ValueError(f"{self.name}: gravity must be 3 numbers (or one row per state), got {g.shape}")
        L = self.layout.params
        P = np.zeros((n, L.size))
        P[:, L.span("gravity")] = g
        P[:, L.span("tau")] = middle
        if f_ext is not None:
            P[:, L.span("f_ext")] = self.fext(n, f_ext).reshape(n, -1)
        if self.layout.theta_blocks:
            P[:, L.span("theta")] = _parameters.theta(self, n, params)
        elif params and set(params) - {"gravity"}:
            _parameters.theta(self, n, params)  # raises: names no parameter of this build
        return P

    def check_status(self, status, what, Q=None):
        """Raise ``LinAlgError`` for a kernel's nonzero status (state index * (nb + 1) + body index + 1: the body
        whose D = H P H* is not positive definite), naming the body, its hinge and the remedies.  With the
        states ``Q``, a hinge whose coord map loses rank at the failing state (GIMBAL and BUSHING at the middle
        angle +-90 degrees) is named as a coordinate singularity, not as missing mass."""
        if status:
            i, k = divmod(int(status), self.nb + 1)
            body = self.body_names[k - 1]
            hinge = self.manifest['bodies'][k - 1]['hinge']
            head = f"{self.name}: {what}: D = H P H* of body '{body}' (hinge '{hinge}') is not positive definite " \
                   f"(state {i})"
            lost = self._coordinate_singularity(hinge, Q, i)
            if lost is not None:
                kind = self.manifest["hinges"][hinge]["type"]
                raise np.linalg.LinAlgError(
                    f"{head}: the {kind} hinge is at a coordinate singularity there, not short of mass: its coord "
                    f"map loses rank (smallest singular value {lost:.1e} of its largest)"
                    + (", the middle angle at +-90 degrees (gimbal lock)" if kind in ("GIMBAL", "BUSHING") else "")
                    + "; keep it away from that configuration, or use a quaternion hinge (BALL_QUAT, FULL6DOF) "
                      "for free rotations")
            raise np.linalg.LinAlgError(f"{head}: its outboard subtree has no mass or inertia in the hinge's "
                                        f"directions; give the hinge armature (armature={{'{hinge}': value}}) or "
                                        f"lock it (lock=['{hinge}'])")

    def _coordinate_singularity(self, hinge, Q, i):
        """The relative smallest singular value of the hinge's coord map at state i of Q when it has lost rank
        (below 1e-6), else None (or without Q)."""
        if Q is None:
            return None
        Q = np.asarray(Q, dtype=np.float64).reshape(-1, self.nq)
        info = self.manifest["hinges"][hinge]
        nu = info["u"][1] - info["u"][0]
        if not nu:
            return None
        kernel = self.manifest["hinge_specs"][info["slug"]]["kernels"]["coord_map"]
        q = np.ascontiguousarray(Q[min(i, Q.shape[0] - 1), slice(*info["q"])])
        H = np.empty((6, nu))
        getattr(self.lib, kernel["c_name"] + "_batch")(1, self.buf(q), self.ffi.NULL, self.ffi.NULL, self._out_buf(H))
        sv = np.linalg.svd(H, compute_uv=False)
        rel = float(sv[-1] / sv[0]) if sv[0] > 0 else 0.0
        return rel if rel < 1e-6 else None

    # ---- one state
    # One state (q, u, ...: C-contiguous float64 vectors) takes a lean path: one C call on the arrays' memory
    # (sg_<model>_frame_* with the frame's index, the single-state dynamics), allocating only the result.
    # Built models (symgen.build, load_built) put the compiled twin of this path in front of each method
    # (fast_calls: the same C call without Python in between, for calls without keywords); its fallback is
    # the method, which tries one() and then the general path.  Anything else (lists, strided arrays,
    # batches) is converted and checked, then one C loop over the states calls the same per-state function:
    # the same numbers either way.
    def one(self, what, vecs, shape, out, call):
        """``call(*pointers of vecs, pointer of out)`` for one state: ``vecs`` = (q[, u[, x]]) C-contiguous
        float64 of shapes (nQ,), (nU,), (nU,); ``out`` the caller's (checked) or a new array of ``shape``.
        Returns ``(out, what call returned)``, or None when the inputs are not such vectors (the caller then
        takes the general path)."""
        fb, dbl = self._fb, self._dbl
        try:
            q = vecs[0]
            if q.dtype is not _F64 or q.shape != self.shape_q:
                return None
            for v in vecs[1:]:
                if v.dtype is not _F64 or v.shape != self.shape_u:
                    return None
            ptrs = [fb(dbl, v) for v in vecs]
        except (AttributeError, ValueError):           # not arrays; from_buffer refuses non-contiguous ones
            return None
        if out is None:
            out = _empty(shape)
            po = fb(dbl, out)
        else:
            po = self.out_pointer(out, shape, what)
        return out, call(*ptrs, po)

    # ---- batches
    def call_batch(self, kernel, Q, U, P, size, out=None):
        """``sg_<name>_<kernel>_batch(N, Q, U, P, out)`` over the N states of Q (N, nQ) and U (N, nU); ``P``
        (N or 1 rows, or None: :attr:`nominal_p`); ``out`` (N, size), allocated when None.  Returns
        ``(out, status)`` (status: the C's return value, None for a kernel without one)."""
        out = np.empty((Q.shape[0], size)) if out is None else out
        pp = self.nominal_p if P is None else self.buf(np.ascontiguousarray(P))
        status = getattr(self.lib, f"sg_{self.name}_{kernel}_batch")(Q.shape[0], self.buf(Q), self.buf(U), pp,
                                                                     self._out_buf(out))
        return out, status

    def frame_query(self, kernel, shape, q, u, frame, out):
        """The general path of the frame queries: ``sg_<name>_<kernel>_batch`` (``frame_pose``,
        ``frame_poses``, ``frame_jacobian``, ``frame_velocity``) over the states, with ``u`` (None for the
        queries without), ``frame`` (None for ``frame_poses``) and ``out=`` checked."""
        f = None if frame is None else self.frame_index(frame)
        single, Q, U = self.states(q, u)
        n = Q.shape[0]
        full = (n,) + shape
        what = "jacobian" if kernel == "frame_jacobian" else kernel
        res = np.empty(full) if out is None else self.check_out(out, shape if single else full, what).reshape(full)
        if res.size:
            args = (n, self.buf(Q)) + (() if u is None else (self.buf(U),)) + (() if f is None else (f,))
            getattr(self.lib, f"sg_{self.name}_{kernel}_batch")(*args, self.buf(res))
        return out if out is not None else self.unbatch(single, res)

    def dynamics(self, kernel, q, u, middle, f_ext, gravity, out=None, params=None) -> np.ndarray:
        """One dynamics kernel whose p is [g, middle (nU), f_ext, theta] (``forward_dynamics``: middle = T,
        ``inverse_dynamics``: middle = Udot), batched and checked; a nonzero status raises."""
        single, Q, U = self.states(q, u)
        _, _, M = self.states(q, middle)
        if out is not None:
            out = self.check_out(out, (self.nu,) if single else (Q.shape[0], self.nu), kernel)
        mid = None if f_ext is not None or params is not None else getattr(self.lib, f"sg_{self.name}_{kernel}_batch_mid",
                                                                           None)
        if mid is not None and (gravity is None or np.shape(gravity) == (3,)):
            # the states share p but for the middle: one p row, not N (sg_<name>_<kernel>_batch_mid)
            res = np.empty((Q.shape[0], self.nu)) if out is None else out.reshape(Q.shape[0], self.nu)
            status = mid(Q.shape[0], self.buf(Q), self.buf(U), self.shared_p(gravity), self.buf(M), self._out_buf(res))
        else:
            res, status = self.call_batch(kernel, Q, U, self.p(Q.shape[0], M, f_ext, gravity, params), self.nu,
                                          None if out is None else out.reshape(Q.shape[0], self.nu))
        if status:
            self.check_status(status, kernel, Q)
        return out if out is not None else self.unbatch(single, res)

    def derivatives(self, kind, q, u, middle, f_ext, gravity, params=None, tangent=True):
        """``sg_<name>_<kind>_derivatives_batch`` (kind ``fd`` or ``id``; p as :meth:`dynamics`'; Q directions
        tangent): [d/dQ, d/dU, d/d middle] as one array, (3, nU, nU) for one state, (3, N, nU, nU) for a batch (a
        view of the states' blocks).  ``tangent=False``: the full-coordinate form, d/dQ along each coordinate of Q
        (what the C step derivatives use), as three arrays (d/dQ nU x nQ, d/dU, d/d middle; a leading N for a
        batch)."""
        single, Q, U = self.states(q, u)
        _, _, M = self.states(q, middle)
        n, nu = Q.shape[0], self.nu
        res = np.empty((n, nu * (self.nq + 2 * nu)))
        P = self.p(n, M, f_ext, gravity, params)
        status = getattr(self.lib, f"sg_{self.name}_{kind}_derivatives_batch")(
            n, self.buf(Q), self.buf(U), self.buf(np.ascontiguousarray(P)), int(bool(tangent)), self._out_buf(res))
        if status:
            self.derivative_status(status, "forward" if kind == "fd" else "inverse")
        if not tangent:
            nq = self.nq
            parts = (res[:, :nu * nq].reshape(n, nu, nq), res[:, nu * nq:nu * (nq + nu)].reshape(n, nu, nu),
                     res[:, nu * (nq + nu):].reshape(n, nu, nu))
            return tuple(x[0] for x in parts) if single else parts
        blocks = res[:, :3 * nu * nu].reshape(n, 3, nu, nu)
        return blocks[0] if single else blocks.swapaxes(0, 1)

    def derivative_status(self, status, kind):
        """Raise for a derivative function's nonzero status (``kind``: "forward" or "inverse")."""
        if status == -1:
            raise NotImplementedError(
                f"{self.name}: {kind} dynamics derivatives were not generated for this model (the derivative "
                f"function is over symgen.codegen.derivatives.DERIVATIVE_MAX_LINES)")
        if status == -2:
            raise NotImplementedError(f"{self.name}: this module was compiled without the derivative functions "
                                      "(see MultibodyModel.derivative_binding)")
        if status == -3:
            raise np.linalg.LinAlgError(f"{self.name}: forward dynamics derivatives: the mass matrix is not positive "
                                        "definite to rounding at this state (per-kind form's factorization)")
        self.check_status(status, f"{kind}_dynamics_derivatives")

    def _lean_vectors(self, q, u, x):
        """Pointers to q and u when q, u, x are one state of C-contiguous float64 vectors, else None."""
        try:
            if (q.dtype is not _F64 or q.shape != self.shape_q or u.dtype is not _F64 or u.shape != self.shape_u
                    or x.dtype is not _F64 or x.shape != self.shape_u):
                return None
            return self._fb(self._dbl, q), self._fb(self._dbl, u)
        except (AttributeError, ValueError):
            return None

    def _lean_p(self, key, x):
        """The pointer to a p row kept for a lean path (``key``), with this call's gravity and middle ``x``."""
        st = self._deriv_rows.get(key)
        if st is None:
            row = np.ascontiguousarray(self.p(1, np.zeros(self.nu), None, None)[0])
            L = self.layout.params
            st = self._deriv_rows[key] = (row, self._fb(self._dbl, row), L.span("gravity"), L.span("tau"))
        row, prow, g, tau = st
        row[g], row[tau] = self._gravity, x
        return prow

    def derivatives_one(self, kind, q, u, x):
        """The lean path of :meth:`derivatives` (tangent) for one state without keywords: ``(out (3, nU, nU),
        status)``, or None when q, u, x are not C-contiguous float64 vectors."""
        ptrs = self._lean_vectors(q, u, x)
        if ptrs is None:
            return None
        nu = self.nu
        out = _empty(3 * nu * nu)
        s = getattr(self.lib, f"sg_{self.name}_{kind}_derivatives")(*ptrs, self._lean_p(kind, x), 1,
                                                                     self._fb(self._dbl, out))
        return out.reshape(3, nu, nu), s

    def step_one(self, q, u, T, dt, method):
        """The lean path of ``step_derivatives`` for one state without keywords: ``(A, B, status)``, or None when
        q, u, T are not C-contiguous float64 vectors (the caller takes the general path)."""
        ptrs = self._lean_vectors(q, u, T)
        if ptrs is None:
            return None
        work = self._deriv_rows.get("work")
        if work is None:
            work = self._deriv_rows["work"] = np.empty(getattr(self.lib, f"sg_{self.name}_step_work_size")())
        A, B = _empty((2 * self.nu, 2 * self.nu)), _empty((2 * self.nu, self.nu))
        s = getattr(self.lib, f"sg_{self.name}_step_derivatives")(*ptrs, self._lean_p("step", T), dt, method,
                                                                   self._fb(self._dbl, work), self._fb(self._dbl, A),
                                                                   self._fb(self._dbl, B))
        return A, B, s

    def bodies(self, Q, U):
        """Every body's (R (N, nb, 3, 3), p (N, nb, 3), J (N, nb, 6, nU), Jdot) from the ``kinematics`` kernel."""
        K = self.layout.kinematics
        n = Q.shape[0]
        raw = self.call_batch("kinematics", Q, U, None, self.nb * K.size)[0].reshape(n, self.nb, K.size)
        R = raw[:, :, K.span("R")].reshape(-1, self.nb, 3, 3)
        p = raw[:, :, K.span("p")]
        J = raw[:, :, K.span("J")].reshape(n, self.nb, 6, self.nu)
        Jd = raw[:, :, K.span("Jdot")].reshape(n, self.nb, 6, self.nu)
        return R, p, J, Jd

    def poses(self, Q):
        """(R, p) of every body for every state, from the pose-only kernel."""
        X = self.layout.poses
        n = Q.shape[0]
        raw = self.call_batch("poses", Q, np.zeros((n, self.nu)), None, self.nb * X.size)[0].reshape(n, self.nb, X.size)
        return raw[:, :, X.span("R")].reshape(-1, self.nb, 3, 3), raw[:, :, X.span("p")]

    def frame_data(self, Q, U, frame):
        """(R, p, J, Jdot) of a frame (name or handle) for every state (batched arrays): the frame on body b at
        ``X_bf`` has ``J_f = phi^T(b, f) J_b``; a flexible body's node: :meth:`node_data`."""
        if self.nodes and isinstance(frame, str) and frame in self.nodes:
            return self.node_data(Q, U, frame)
        b, Rbf, lbf = self.frame(frame)
        n = Q.shape[0]
        if b < 0:  # newtonian, or a frame fixed on it: its placement, no Jacobian columns
            z = np.zeros((n, 6, self.nu))
            return np.broadcast_to(Rbf, (n, 3, 3)).copy(), np.broadcast_to(lbf, (n, 3)).copy(), z, z.copy()
        R, p, J, Jd = self.bodies(Q, U)
        R, p, J, Jd = R[:, b], p[:, b], J[:, b], Jd[:, b]
        return R @ Rbf, p + R @ lbf, _phiT_apply(Rbf, lbf, J), _phiT_apply(Rbf, lbf, Jd)

    def node_data(self, Q, U, node):
        """(R, p, J, Jdot) of a flexible body's node for every state, as :meth:`frame_data`: the node sits at
        ``d = s + Phi eta`` in its body, keeps the body's axes, and moves with the body and the modes:
        ``v = v_B + w_B x d + Phi etadot``, so ``J = [J_w; J_v - d~ J_w + Phi E]`` (E: the modes' columns) and
        ``Jdot = [Jdot_w; Jdot_v - (Phi etadot)~ J_w - d~ Jdot_w]``."""
        k, s, Phi, qs, us = self.nodes[node]
        R, p, J, Jd = self.frame_data(Q, U, self.body_names[k])
        d, dd = s + Q[:, qs] @ Phi.T, U[:, us] @ Phi.T
        J, Jd = J.copy(), Jd.copy()
        J[:, 3:] -= np_skew(d) @ J[:, :3]
        J[:, 3:, us] += Phi
        Jd[:, 3:] -= np_skew(dd) @ J[:, :3] + np_skew(d) @ Jd[:, :3]
        return R, p + (R @ d[..., None])[..., 0], J, Jd

    def rollout(self, n, n_steps, every, method, dt, Q0, U0, T, T_case, T_step, p, p_stride, q_out, u_out, status):
        """The raw ``sg_<name>_rollout`` call (arguments as :func:`symgen.runtime.integrate.rollout` prepares
        them: C-contiguous float64 arrays, ``T`` None for zero, ``status`` an int array); releases the GIL."""
        null = self.ffi.NULL
        getattr(self.lib, f"sg_{self.name}_rollout")(
            n, n_steps, every, method, float(dt), self.buf(Q0), self.buf(U0), null if T is None else self.buf(T),
            T_case, T_step, self.buf(p), p_stride, self._out_buf(q_out), self._out_buf(u_out),
            self.ffi.from_buffer("int[]", status))

    # ---- the compiled one-state calls
    def _call_maker(self, ext, methods: dict):
        """``call(name, kind, fn, shape, aux, aux2, on_status)``: an ``ext.Call`` of C function ``fn`` (a cffi
        function) in front of the method ``methods[name]``, its fallback."""
        ffi = self.ffi

        def call(name, kind, fn, shape, aux=None, aux2=None, on_status=None):
            method = methods[name]
            return ext.Call(kind, int(ffi.cast("uintptr_t", fn)), self.nq, self.nu, tuple(shape), method, name,
                            method.__doc__ or "", self.Handle, self._frame_index, len(self.frame_names), aux, aux2,
                            on_status)
        return call

    def fast_calls(self, ext, methods: dict) -> tuple:
        """The compiled one-state calls (``ext``: the module built from symgen/runtime/fastcall.c) of the
        methods ``{name: bound method}`` (the names of ``MultibodyModel``'s one-state methods), each calling its
        method for anything but one state of plain float64 vectors without keywords.  Empty for a model
        without Q or U (the methods' general paths serve it).  Kept for :meth:`set_gravity`."""
        if not (self.nq and self.nu):
            return ()
        c, call = self.one_state, self._call_maker(ext, methods)

        def fd_status(status, q):
            self.check_status(status, "forward_dynamics", q)

        g = self._gravity
        fd = (call("forward_dynamics", _K_TA, c["ta_forward_dynamics"], self.shape_u, g, on_status=fd_status)
              if "ta_forward_dynamics" in c
              else call("forward_dynamics", _K_DYN, c["forward_dynamics"], self.shape_u, g, on_status=fd_status))
        self._calls = (call("frame_pose", _K_Q_F, c["frame_pose"], (4, 4)),
                       call("jacobian", _K_Q_F, c["frame_jacobian"], self.shape_J),
                       call("frame_velocity", _K_Q_U_F, c["frame_velocity"], (6,)),
                       call("frame_poses", _K_Q, c["frame_poses"], self.shape_poses),
                       call("mass_matrix", _K_Q_FIXED, c["mass_matrix"], self.shape_M, self._u1, self._p1),
                       call("inverse_dynamics", _K_DYN, c["inverse_dynamics"], self.shape_u, g),
                       fd)
        return self._calls

    def derivative_fast_calls(self, ext, methods: dict) -> tuple:
        """The compiled one-state calls of the derivative methods (``methods``: forward_dynamics_derivatives,
        inverse_dynamics_derivatives, step_derivatives, and centroidal_momentum_matrix, which lives in the same
        module), on this binding's module; empty for a model with loops
        (the methods raise) or without Q or U."""
        if not (self.nq and self.nu) or self.manifest.get("loops"):
            return ()
        g, call = self._gravity, self._call_maker(ext, methods)
        lib, name = self.lib, self.name
        self._step_work = np.empty(getattr(lib, f"sg_{name}_step_work_size")())
        calls = tuple(call(f"{k}_dynamics_derivatives", _K_DYN, getattr(lib, f"sg_{name}_{k[:1]}d_derivatives_single"),
                           (3, self.nu, self.nu), g, on_status=lambda s, q, k=k: self.derivative_status(s, k))
                      for k in ("forward", "inverse"))
        calls += (call("step_derivatives", _K_STEP, getattr(lib, f"sg_{name}_step_derivatives_single"), (1,), g,
                       self._step_work, on_status=lambda s, q: self.derivative_status(s, "forward")),
                  call("centroidal_momentum_matrix", _K_Q_FIXED,
                       getattr(lib, f"sg_{name}_centroidal_momentum_matrix_only"), (6, self.nu), self._u1, self._p1))
        self._calls += calls
        return calls
