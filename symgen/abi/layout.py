"""One model's data layout: where every number lives in the flat arrays that the generated C and the runtime
exchange, written once.

The C generator (:mod:`symgen.codegen.emit`, :mod:`symgen.codegen.perkind`) prints its array offsets and ``#define``\\ s
from a :class:`ModelLayout`; the runtime (:mod:`symgen.runtime`) builds the same object from the manifest and
reads its offsets from it.  Numpy-free and sympy-free, so the runtime can import it.

Arrays (per state; a batch puts states back to back):

* ``q`` (nQ), ``u`` (nU): each hinge's coordinates at its ``q0`` / ``u0``, bodies in parent-before-child order.
* ``p`` of the dynamics (:attr:`ModelLayout.params`): ``[g (3), tau (nU), f_ext (6 per body), theta]``;
  ``tau`` is T for forward dynamics and Udot for inverse dynamics; ``f_ext`` is a body-frame wrench
  ``[N; F]`` at each body origin; ``theta`` the runtime parameters of a parametric build
  (:mod:`symgen.model.parameters`; empty otherwise), block by block (:attr:`ModelLayout.theta_blocks`).
* ``kinematics`` output, per body (:attr:`ModelLayout.kinematics`): ``[R (9), p (3), J (6 x nU), Jdot (6 x nU)]``.
* ``poses`` output, per body (:attr:`ModelLayout.poses`): ``[R (9), p (3)]``.
* ``atbi_matrices`` output, per body (:attr:`ModelLayout.mats`): seven blocks of 36,
  ``P, D, Dinv, G, tauper, psi, H`` (D, Dinv nU_h x nU_h, G and H 6 x nU_h, row-major, at the block start),
  then the ATBI filter vectors ``z, z+`` (6 each) and ``eps, nu`` (nU_h each, in blocks of 6) of the state's
  U, T (``p``'s tau), f_ext and gravity.
* ``upsilon`` output, per body: Upsilon = J M^-1 J^T of the body frame (36, row-major).
* the per-kind form's per-body constants (:attr:`ModelLayout.body_const`) and per-body workspace
  (:attr:`ModelLayout.workspace`), which stay inside the C.
"""
from __future__ import annotations


#: the translation units (``SG_PART``) of a model's C that hold the derivative functions (the other parts never
#: read a derivative kernel: a module built without derivatives leaves them out)
DERIVATIVE_PARTS = {"fd": 7, "id": 8}
#: the translation units of their lane-batch forms (SG_W states per call), compiled beside them
DERIVATIVE_LANE_PARTS = {"fd": 10, "id": 11}
#: the translation units of the centroidal momentum matrix with its lane form, and of the momentum's rate
CENTROIDAL_PARTS = {"cm": 12, "cd": 13}
#: the translation unit of atbi_matrices, upsilon and the per-kind steps they call, when no other entry point does
MATS_PART = 9
#: the translation unit of the looped lane form (symgen.codegen.perkind.PerKindForm.emit_lanes): the per-kind steps
#: for SG_W states and the lane functions of FD, ID and M that loop over the bodies with them
LOOPED_LANES_PART = 14
#: the translation unit of what differs between a module with the derivatives and one without (their stubs, the
#: batches whose lane form is in a derivative part), so that part 0 compiles to the same object in both and the
#: derivative module takes the value module's from the object cache
DERIVATIVE_GLUE_PART = 15
#: the translation unit of the frame poses' lane form, when it is long (compiled beside part 0 instead of in it)
FRAME_LANES_PART = 16
#: the translation unit of one step's derivatives (sg_<m>_step_derivatives and its helpers: 14 kB of code at -O3,
#: a third of arm7's part 0 compile), compiled beside part 0 in the module with the derivatives
STEP_PART = 17
#: every part a module without derivatives leaves out: the derivative functions, the centroidal ones and one step's
#: derivatives, which symgen.build compiles on their first call (in one second module; the module without them
#: has their stubs, in DERIVATIVE_GLUE_PART)
ALL_DERIVATIVE_PARTS = (*DERIVATIVE_PARTS.values(), *DERIVATIVE_LANE_PARTS.values(), *CENTROIDAL_PARTS.values(),
                        STEP_PART)
#: the translation unit of the one-state frame kinematics (kinematics, poses, body_jacobian, the frame walk steps,
#: frame_pose, frame_poses, frame_jacobian, frame_velocity), when they are long, compiled beside part 0 (with the
#: hinge kernels' exported copies but where HINGE_API_PART holds them): dog.xml's part 0 took 8.3 s of -O3, 3.6 s of
#: it the frame kinematics and 2.6 s the 31 hinge specs' exports
KINEMATICS_PART = 18
#: the translation unit of the hinge kernels' exported copies (the per-hinge API, symgen.runtime.HingeKernels, called
#: from Python one spec at a time) when the model has many hinge specs, compiled at -O1 beside the rest (every
#: other part keeps static copies of the kernels it calls, inlined at its own level): dog.xml's 31 specs
HINGE_API_PART = 19


class Record:
    """Named fields packed back to back: ``rec["J"]`` is an offset, ``rec.size`` the total."""

    def __init__(self, *fields):
        self.fields, self._offset, o = tuple(fields), {}, 0
        for name, n in fields:
            self._offset[name] = o
            o += n
        self.size = o
        self._len = dict(fields)

    def __getitem__(self, name: str) -> int:
        return self._offset[name]

    def span(self, name: str) -> slice:
        return slice(self._offset[name], self._offset[name] + self._len[name])

    def __repr__(self):
        return "Record(" + ", ".join(f"{n}={self._offset[n]}:{self._len[n]}" for n, _ in self.fields) + ")"


def sym_index(i: int, j: int) -> int:
    """Position of entry (i, j) of a symmetric 6x6 in its packed upper triangle (21 numbers)."""
    i, j = min(i, j), max(i, j)
    return 6 * i - i * (i - 1) // 2 + (j - i)


class ModelLayout:
    """Offsets of one model's arrays (see the module docstring).

    ``hinges``: per body, parent before child, ``(nq, nu)`` of its hinge.  ``modes``: per body, its number of
    modal coordinates (a flexible body's), which follow its hinge's in Q and in U (default none)."""

    def __init__(self, hinges, loops=(), theta_blocks=(), modes=()):
        self.nqh = [int(nq) for nq, _ in hinges]
        self.nuh = [int(nu) for _, nu in hinges]
        self.nb = len(self.nuh)
        self.modes = [int(x) for x in modes] or [0] * self.nb
        self.q0, self.u0, q, u = [], [], 0, 0
        for nq, nu, nm in zip(self.nqh, self.nuh, self.modes):
            self.q0.append(q)
            self.u0.append(u)
            q, u = q + nq + nm, u + nu + nm
        self.nq, self.nu = q, u
        self.max_nu = max([1] + self.nuh)
        nu, m = self.nu, self.max_nu
        #: parametric builds: per block (symgen.model.parameters.resolve, sizes filled in) its offset in p
        self.theta_blocks = [dict(b) for b in theta_blocks]
        self.params = Record(("gravity", 3), ("tau", nu), ("f_ext", 6 * self.nb),
                             ("theta", sum(b["size"] for b in self.theta_blocks)))
        o = self.params["theta"]
        for b in self.theta_blocks:
            b["offset"], o = o, o + b["size"]
        self.kinematics = Record(("R", 9), ("p", 3), ("J", 6 * nu), ("Jdot", 6 * nu))
        self.poses = Record(("R", 9), ("p", 3))
        self.mats = Record(("P", 36), ("D", 36), ("Dinv", 36), ("G", 36), ("tauper", 36), ("psi", 36), ("H", 36),
                           ("z", 6), ("zplus", 6), ("eps", 6), ("nu", 6))
        #: per-kind form, per body: inertia (m, h = m c, J about the body origin: xx xy xz yy yz zz), the onode's
        #: and the inverse pnode's pose (R 9, l 3), the armature of each hinge U
        self.body_const = Record(("m", 1), ("h", 3), ("J", 6), ("on", 12), ("pinv", 12), ("arm", m))
        #: per-kind form, per body: kinematics (X_pb = (R, l), H, V, a, b), ATBI (P and z accumulated from the
        #: children, P packed symmetric; G, nu; PH, Dinv, eps at a root), alpha, Newton-Euler f, the composite
        #: inertia (m, h, J packed) and the mass-matrix columns F moved to the parent
        self.workspace = Record(("R", 9), ("l", 3), ("H", 6 * m), ("V", 6), ("a", 6), ("b", 6),
                                ("P", 21), ("z", 6), ("G", 6 * m), ("nu", m), ("PH", 6 * m), ("Dinv", m * m),
                                ("eps", m), ("alpha", 6), ("f", 6), ("Ic", 10), ("F", 6 * m))

        #: closed chains, per loop (the cut joint's nQ, nU): its rows of sg_<m>_loop_errors (errors of the error
        #: f2f, 6 each, E axes; the cut joint's best-fit Q, U, Udot; the constrained parts OC^T error)
        self.loop_hinges = [(int(nq), int(nu)) for nq, nu in loops]
        self.n_res = [6 - nu for _, nu in self.loop_hinges]
        self.nc = sum(self.n_res)
        self.loop_errors, self.loop_error_offset, o = [], [], 0
        for (nqh, nuh), r in zip(self.loop_hinges, self.n_res):
            rec = Record(("pose", 6), ("vel", 6), ("accel", 6), ("q", nqh), ("u", nuh), ("udot", nuh),
                         ("pose_c", r), ("vel_c", r), ("accel_c", r))
            self.loop_errors.append(rec)
            self.loop_error_offset.append(o)
            o += rec.size
        self.loop_errors_size = o
        #: TA forward dynamics: p = [g, T, f_ext, Baumgarte omega_n and zeta]; out = [Udot, lambda (n_c),
        #: the constraint force on each target node (6 per loop, target axes), the rank of Lambda]
        self.ta_params = Record(("gravity", 3), ("tau", nu), ("f_ext", 6 * self.nb), ("gains", 2))
        self.ta_out = Record(("udot", nu), ("lambda", self.nc), ("f_target", 6 * len(self.loop_hinges)), ("rank", 1))
        #: sg_<m>_loop_jacobian: G_c (n_c x nU, row-major), then gamma (n_c)
        self.loop_jacobian = Record(("G", self.nc * nu), ("gamma", self.nc))

    @classmethod
    def from_manifest(cls, manifest: dict) -> "ModelLayout":
        hinges = manifest["hinges"]
        by_body = {h["body"]: h for h in hinges.values()}
        return cls([(by_body[b["name"]]["q"][1] - by_body[b["name"]]["q"][0],
                     by_body[b["name"]]["u"][1] - by_body[b["name"]]["u"][0]) for b in manifest["bodies"]],
                   [(lc["nq"], lc["nu"]) for lc in manifest.get("loops", [])],
                   manifest.get("parameters", {}).get("blocks", ()),
                   [b.get("modes", 0) for b in manifest["bodies"]])

    def f_ext(self, k: int) -> int:
        """Offset in ``p`` of body k's external wrench."""
        return self.params["f_ext"] + 6 * k

    def c_defines(self, prefix: str) -> list:
        """``#define`` lines of the sizes a C caller needs (``SG_<MODEL>_NQ``, ...)."""
        P = prefix.upper()
        return [f"#define {P}_NQ {self.nq}", f"#define {P}_NU {self.nu}", f"#define {P}_NB {self.nb}",
                f"#define {P}_P_SIZE {self.params.size}  /* p of the dynamics: g (3), T or Udot (nU), f_ext (6 per body)"
                + (f", theta ({self.params.size - self.params['theta']}) */" if self.theta_blocks else " */"),
                f"#define {P}_KINEMATICS_BLOCK {self.kinematics.size}  /* per body: R (9), p (3), J, Jdot (6 x nU each) */",
                f"#define {P}_MATS_BLOCK {self.mats.size}  /* per body: P, D, Dinv, G, tauper, psi, H (36 each), "
                f"z, z+, eps, nu (6 each) */"]
