"""Which schedule each dynamics entry point of a model takes: the cost model.

An entry point (forward dynamics, inverse dynamics, the mass matrix) is one algorithm of
:mod:`symgen.algorithms.soa`, printed one of two ways:

* **unrolled** (``"straight"``): the algorithm traced over the whole tree into one straight-line function, every
  body's constants folded, with its lane form for batches (:func:`symgen.codegen.emit.emit_lanes`);
* **looped** (``"per_kind"``): the same per-body steps traced once per body kind and called in a loop over the
  bodies with per-body tables (:mod:`symgen.codegen.perkind`), with its looped lane form.

The two give the same numbers (the tests compare them); they differ in speed, code size and compile time.  The
choice is :func:`choose`, from what a model's trace says (the straight-line function's length, the mass matrix's
ancestor walk, whether the tree branches) against the costs below, measured on this project's benchmark robots
with GCC 12 at ``-O3`` on a 2-core x86-64 (AVX-512) machine:

==========================  =====  ==================  ==================  ==================  ====================
model                       nU     FD µs/state         ID µs/state         M µs/state          M's walk (steps,
                                   unrolled / looped   unrolled / looped   unrolled / looped   branched)
==========================  =====  ==================  ==================  ==================  ====================
arm7 (a chain)              7      0.11 / 0.27         0.08 / 0.17         0.05 / 0.16         28, no (M has lanes)
UR5                         6      0.10 / 0.36         0.08 / 0.19         0.18 / 0.18         27, yes
Panda                       9      0.16 / 0.44         0.10 / 0.22         0.31 / 0.30         48, yes
Solo-12 (floating)          18     0.28 / 0.47         0.15 / 0.25         0.42 / 0.69         24, yes
humanoid (floating)         37     0.83 / 1.19         0.48 / 0.63         2.55 / 2.09         155, yes
Talos (floating)            38     1.22 / 1.86         0.90 / 1.09         3.45 / 2.40         162, yes
dm_control humanoid_CMU     62     1.51 / 1.42         0.75 / 0.70         4.84 / 4.64         (MJCF, floating)
==========================  =====  ==================  ==================  ==================  ====================

(``benchmarks/forms.py``, 2026-11-29: batches of 400 states, both forms timed interleaved, medians of 7; before
the static bodies were fused, which took Talos's unrolled FD to 1.24 and ID to 0.89.)  What they say:

* **FD and ID** are faster unrolled on the robots up to Talos (1.2-3.6x), but an unrolled function's compile
  time grows faster than its length: Talos's 7,140-line FD (its static bodies fused, see
  :func:`symgen.algorithms.soa.fuse_static`) takes 12 s of one core at ``-O3`` (its lane form 6 s more), so its
  cold build is 25 s unrolled against 12 s looped.  From about 9,000 lines the looped form is as fast or
  faster (humanoid_CMU's 8,960-line FD: 1.51 unrolled, 1.42 looped; its unrolled lane form spills) and builds
  in a fraction of the time (humanoid_CMU 45 -> 20 s cold), so they are unrolled up to
  :data:`STRAIGHT_LINE_LIMIT` lines (8,000), which keeps Talos's speed and gives the larger models the looped form.
* **M of a branched tree** has no lane form unrolled (per lane it measured slower than one state at a time, see
  :func:`symgen.codegen.emit.emit_lanes`), while the looped M has lanes: from about a hundred ancestor-walk
  steps the looped M is the faster one (humanoid 2.55 -> 2.09 µs, Talos 3.45 -> 2.40) and compiles in a
  fraction of the time, so it is looped from :data:`CRBA_LOOPED_FROM` steps.  A chain's M keeps its unrolled
  lanes up to :data:`CRBA_UNROLL_LIMIT`.
* **Pinned**: a parametric build (its inertias from ``p``) and a model with flexible bodies need the unrolled
  form (the looped steps read constant inertias and know no modes): their M stays unrolled under
  :data:`CRBA_UNROLL_LIMIT`, and past the limits symgen.codegen.emit refuses them with a clear error.

``form="per_kind"`` (symgen.build's) overrides the model: every entry point looped, what the tests compare with.
"""
from __future__ import annotations

#: above this many lines of straight-line forward dynamics (about 45 PIN bodies), forward and inverse
#: dynamics take the looped form (a C compiler's time grows faster than a function's length, and from about
#: 9,000 lines the looped form measured as fast: the table above)
STRAIGHT_LINE_LIMIT = 8000
#: above this many ancestor-walk steps (sum over columns of the depth) the mass matrix is looped in every tree
CRBA_UNROLL_LIMIT = 1200
#: from this many ancestor-walk steps the mass matrix of a branched tree is looped: the looped lanes are faster
#: than the unrolled one-state function there (the table above: 48 steps equal, 155 looped 18% faster)
CRBA_LOOPED_FROM = 100

#: from this many lines of the straight-line forward-mode FD derivatives (:mod:`symgen.codegen.derivatives`, the
#: one-state function), forward dynamics' derivatives of a straight-line model come from inverse dynamics' (the
#: looped analytic recursions and their lanes) and the LTL solve of the per-kind form
#: (:meth:`symgen.codegen.perkind.PerKindDerivatives.fd_derivatives_program`) instead: Talos (24,300 lines) ran as
#: fast that way (batched 23.4-24.1 against 24.2-24.3 µs a state, in cache 19.9-20.1 against 21.9-22.3,
#: interleaved, 2026-12-02) and its two FD derivative parts compile at -O3 in 0.4 s of a core against 111 s; the
#: floating humanoid (17,900 lines) ran 15.2 forward-mode against 24.2 that way (2026-11-30), so it keeps them
FD_DERIVATIVES_LTL_FROM = 20000

#: the forward-dynamics derivatives' lane batch solves its SG_W states on lanes (each state's numbers on a lane, every
#: operation a vector one: :meth:`symgen.codegen.perkind.PerKindDerivatives.fd_solve_lanes_program`) while the
#: solve's rows of SG_W states take at most this many bytes at 8 lanes: Talos's 292 kB sit in the core's 2 MB L2,
#: tiago_dual's 2.2 MB would not (and would sit on the stack), so its states keep the one-state solve, whose rows
#: fit the L1 cache
FD_SOLVE_LANES_MAX_BYTES = 384 * 1024

UNROLLED, LOOPED = "straight", "per_kind"


def crba_steps(bodies) -> int:
    """Ancestor-walk steps of the composite-body mass matrix (columns x depth)."""
    depth = [0] * len(bodies)
    for b in bodies:
        depth[b.k] = 0 if b.root else depth[b.parent] + 1
    return sum(b.nu * depth[b.k] for b in bodies)


def branched(bodies) -> bool:
    """Whether some body has two children (its straight-line M gets no lane form)."""
    parents = [b.parent for b in bodies]
    return len(set(parents)) < len(parents)


def choose(bodies, fd_lines: int, pinned: bool = False) -> dict:
    """``{"fd": schedule, "id": ..., "mm": ..., "why": {entry: reason}}`` of a tree (``bodies``: BodyInfo,
    symgen.codegen.emit.body_infos) whose straight-line forward dynamics is ``fd_lines`` long; a schedule is
    :data:`UNROLLED` or :data:`LOOPED`.  ``pinned``: a parametric build or flexible bodies, whose M stays unrolled
    under :data:`CRBA_UNROLL_LIMIT` (past the limits symgen.codegen.emit refuses them with a clear error)."""
    steps, tree = crba_steps(bodies), branched(bodies)
    fd = UNROLLED if fd_lines <= STRAIGHT_LINE_LIMIT else LOOPED
    fd_why = f"straight-line FD of {fd_lines} lines {'<=' if fd == UNROLLED else '>'} {STRAIGHT_LINE_LIMIT}"
    if steps > CRBA_UNROLL_LIMIT:
        mm, mm_why = LOOPED, f"M's walk of {steps} steps > {CRBA_UNROLL_LIMIT}"
    elif tree and steps >= CRBA_LOOPED_FROM and not pinned:
        mm, mm_why = LOOPED, (f"a branched tree's M (no unrolled lanes), a walk of {steps} steps >= "
                              f"{CRBA_LOOPED_FROM}: the looped lanes are faster")
    else:
        mm = UNROLLED
        mm_why = f"M's walk of {steps} steps" + (
            ", a chain: unrolled, with lanes" if not tree else
            f" < {CRBA_LOOPED_FROM}" if steps < CRBA_LOOPED_FROM else
            " (a parametric build or flexible bodies: unrolled)")
    return {"fd": fd, "id": fd, "mm": mm, "why": {"fd": fd_why, "id": fd_why, "mm": mm_why}}
