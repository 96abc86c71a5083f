"""Records of the C the model printer writes, between the traced algorithms and the templates.

The model's batched entry points are the same loop nineteen times over: call the one-state function once per
state, each argument either advanced by its own stride or shared by every state, with a status to pass on and,
for FD, ID, M and the derivatives, the lane form running full blocks of SG_W states first.  A :class:`CBatch` says that once per
entry point, as data; :func:`model_batches` lists them from the model's sizes (symgen.abi.layout), and the
template prints every record with one loop (``templates/model.c.jinja``).  No C text is decided in the
template: the parameter list and the calls are the record's, printed by :mod:`symgen.codegen.printer`.
"""
from __future__ import annotations

from dataclasses import dataclass

from . import printer


@dataclass(frozen=True)
class CArg:
    """One pointer argument of a batched C function: ``stride`` doubles per state, or shared (0)."""

    name: str
    stride: int = 0
    const: bool = True
    ctype: str = "double"

    @property
    def decl(self) -> str:
        return printer.c_param(self.name, self.ctype, self.const)

    @property
    def per_state(self) -> str:
        return printer.c_state_arg(self.name, self.stride)


#: what a lane block's nonzero status does (CLanes.stop): the batch returns it (naming the state and the body),
#: or the blocks stop there and the states from that block on go one at a time
STOPS = ("", "return", "break")


@dataclass(frozen=True)
class CLanes:
    """The lane form a batch runs first (full blocks of SG_W states): which kind (fd, id, mm, fd_derivatives,
    id_derivatives, ...), the p it takes for the block (a :class:`CArg`, advanced by the block's first state; None:
    a null pointer), its output size per state, what a nonzero status of the block does (``stop``, one of
    :data:`STOPS`; "": it returns none), the batch's arguments it takes after p (``after_p``: the tangent flag, a
    frame), the preprocessor condition it needs besides SG_LANES (none: "") and whether it takes the block's rows
    of u (``u``; else a null pointer: frame_poses).  ``rows``: the lane function takes, after out, the length of
    out's rows, and writes that many of each state's leading outputs (the centroidal momentum matrix's lanes: A_G,
    h_G and c, or A_G alone into (N, 6, nU) rows); ``out_size`` is passed."""

    kind: str
    p: CArg | None
    out_size: int
    stop: str = ""
    after_p: tuple = ()
    guard: str = ""
    u: bool = True
    rows: bool = False

    def __post_init__(self):
        if self.stop not in STOPS:
            raise ValueError(f"CLanes.stop must be one of {STOPS}, not {self.stop!r}")

    def call(self, nq: int, nu: int) -> str:
        """The arguments of the block's call for its first state i."""
        return printer.c_args([printer.c_state_arg("q", nq), printer.c_state_arg("u", nu) if self.u else None,
                               self.p and self.p.per_state, *self.after_p, printer.c_state_arg("out", self.out_size),
                               *((str(self.out_size),) if self.rows else ())])


@dataclass(frozen=True)
class CBatch:
    """``sg_<m>_<verb>_batch(int n, args...)``: the one-state function ``scalar`` for states 0..n-1.
    ``status``: the one-state function returns 0 or body + 1, the batch returns ``i * (nb + 1) + s`` for the
    first state i that fails (``nb + 1`` is ``status``), else 0; 0 for a void function."""

    verb: str
    args: tuple
    status: int = 0
    lanes: CLanes | None = None
    #: also ``sg_<m>_<verb>_batch_mid(n, q, u, p0, mid, out)``: the states share one p row, ``p0``, but for its
    #: middle (T or Udot: ``mid``, n x nU, at this offset of p), so that no n rows of p are built and read (a
    #: batch without f_ext); None: no such function
    mid: int | None = None

    def name(self, model: str) -> str:
        return f"sg_{model}_{self.verb}_batch"

    def scalar(self, model: str) -> str:
        return f"sg_{model}_{self.verb}"

    @property
    def glue(self) -> bool:
        """Printed in the derivative glue part (symgen.abi.layout.DERIVATIVE_GLUE_PART), not part 0: a derivative's
        batch (its one-state function is generated only with the derivatives) or one whose lane form is compiled
        on first use with them (the centroidal functions: generated with the derivatives only), so that part 0 is the
        same text in the modules with and without them."""
        return self.verb.endswith("_derivatives") or self.verb.startswith("centroidal_") or bool(self.lanes and self.lanes.guard)

    @property
    def out(self) -> CArg:
        return self.args[-1]

    @property
    def ret(self) -> str:
        return "int" if self.status else "void"

    @property
    def params(self) -> str:
        return printer.c_args(a.decl for a in self.args)

    @property
    def call(self) -> str:
        return printer.c_args(a.per_state for a in self.args)


def model_batches(L, nq: int, nu: int, nb: int, kinematics_size: int, n_frames: int, lanes: dict,
                  loops: bool) -> list:
    """Every batched entry point of a model, in print order.  ``L``: the model's ModelLayout; ``lanes``: the lane
    functions FD, ID and M have (symgen.codegen.emit.emit_lanes)."""
    q, u = CArg("q", nq), CArg("u", nu)
    u0, p0 = CArg("u"), CArg("p")
    out = lambda n: CArg("out", n, const=False)  # noqa: E731
    frame = CArg("f", ctype="int")
    status = nb + 1
    p_tree = CArg("p", L.params.size)
    mm_p = p_tree if L.theta_blocks else p0           # M reads p only for a parametric build's theta
    fd_lanes = CLanes("fd", p_tree, nu, "return") if lanes.get("fd") else None
    batches = [
        CBatch("forward_dynamics", (q, u, p_tree, out(nu)), status, fd_lanes, mid=L.params["tau"]),
        CBatch("atbi_matrices", (q, u, p_tree, out(L.mats.size * L.nb)), status),
        CBatch("upsilon", (q, u, p_tree, out(36 * L.nb)), status),
        CBatch("inverse_dynamics", (q, u, p_tree, out(nu)), 0,
               CLanes("id", p_tree, nu) if lanes.get("id") else None, mid=L.params["tau"]),
        CBatch("mass_matrix", (q, u, mm_p, out(nu * nu)), 0,
               CLanes("mm", mm_p, nu * nu) if lanes.get("mm") else None),
        CBatch("centroidal_momentum_matrix", (q, u, mm_p, out(6 * nu + 9)), 0,
               CLanes("cm", mm_p, 6 * nu + 9, guard="!defined(SG_NO_DERIVATIVES)", rows=True)
               if lanes.get("cm") else None),
        # A_G alone, into (N, 6, nU) rows (centroidal_momentum_matrix's result and out=, with no copy in Python)
        CBatch("centroidal_momentum_matrix_only", (q, u, mm_p, out(6 * nu)), 0,
               CLanes("cm", mm_p, 6 * nu, guard="!defined(SG_NO_DERIVATIVES)", rows=True)
               if lanes.get("cm") else None),
        CBatch("centroidal_dynamics", (q, u, p_tree, out(6))),
        *[CBatch(f"{k}_derivatives", (q, u, p_tree, CArg("tangent", ctype="int"), out(nu * (nq + 2 * nu))), status,
                 CLanes(f"{k}_derivatives", p_tree, nu * (nq + 2 * nu), "return", ("tangent",),
                        "!defined(SG_NO_DERIVATIVES)")
                 if lanes.get(f"{k}_derivatives") else None) for k in ("fd", "id")],
        CBatch("poses", (q, u0, p0, out(nb * L.poses.size))),
        CBatch("body_jacobian", (q, u0, p0, out(6 * nu))),
        CBatch("frame_poses", (q, out(16 * n_frames)), 0,
               CLanes("fp", None, 16 * n_frames, u=False) if lanes.get("fp") else None),
        CBatch("frame_pose", (q, frame, out(16)), 0,      # a frame the one-state call does not walk: one at a time
               CLanes("fpose", None, 16, "break", ("f",), u=False) if lanes.get("fj") else None),
        CBatch("frame_jacobian", (q, frame, out(6 * nu)), 0,
               CLanes("fj", None, 6 * nu, after_p=("f",), u=False) if lanes.get("fj") else None),
        CBatch("frame_velocity", (q, u, frame, out(6)), 0,
               CLanes("fv", None, 6, after_p=("f",)) if lanes.get("fj") else None),
        CBatch("kinematics", (q, u, p0, out(kinematics_size))),
        CBatch("qdot", (q, u, p0, out(nq))),
        CBatch("qdot_dq", (q, u, p0, out(nq * nq))),
        CBatch("sanitize", (q, u0, p0, out(nq))),
    ]
    if loops:
        batches += [
            CBatch("loop_errors", (q, u, CArg("p", nu), out(L.loop_errors_size))),
            CBatch("loop_jacobian", (q, u, p0, out(L.loop_jacobian.size))),
            CBatch("ta_forward_dynamics", (q, u, CArg("p", L.ta_params.size), out(L.ta_out.size)), status,
                   CLanes("ta", CArg("p", L.ta_params.size), L.ta_out.size, "return") if lanes.get("ta") else None),
        ]
    return batches
