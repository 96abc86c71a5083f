"""symgen: symbolic multibody kinematics (sympy) rendered to plain C99 kernels.

Public API::

    symgen.HINGE_TYPES                        # names of the implemented hinge types
    h = symgen.hinge("GIMBAL")                # a hinge with default parameters
    h = symgen.hinge("PIN", axis=(0, 1, 0))   # bound parameters
    h.transform, h.coord_map, h.qdot_map, h.bias, h.pose_gradient, h.ortho_complement  # sympy matrices
    k = symgen.compile_hinge(h)               # C kernels, numpy in / numpy out, batched
    mb = symgen.build("robot.urdf")           # a model: read, generated, compiled, loaded (MultibodyModel)
    res = symgen.sweep("robot.urdf", cases, dt, n_steps, client=None, store=None)  # many rollouts (Dask, Zarr)
    with pytest.warns(symgen.IllConditionedWarning): symgen.build(...)  # warnings: symgen.SymgenWarning subclasses

Conventions are those of DESIGN.md (spatial vectors ``[angular; linear]``, quaternions ``(x, y, z, w)``).
The names are imported lazily, so ``symgen.runtime`` loads built modules without sympy or jinja2.
"""
__version__ = "0.1.0"

_LAZY = {
    "HINGE_TYPES": "hinges", "SUBHINGE_TYPES": "hinges", "HingeParams": "hinges", "hinge_type_string": "hinges",
    "subhinge_types": "hinges", "hooke_hinge_params": "hinges", "inline_hinge_params": "hinges",
    "inplane_hinge_params": "hinges", "parallel_hinge_params": "hinges", "perpendicular_hinge_params": "hinges",
    "Hinge": "hinges.derive", "hinge": "hinges.derive", "compile_hinge": "pipeline.sources",
    "BuildError": "pipeline.compile",
    "load_model": "model", "ModelError": "model", "MultibodyModel": "runtime",
    "sweep": "sweeps", "load_sweep": "sweeps", "sweep_summary": "sweeps",
    # the warning categories (symgen.diagnostics): build and load warnings are Python warnings of these classes
    "SymgenWarning": "diagnostics", "IllConditionedWarning": "diagnostics", "SingularHingeWarning": "diagnostics",
    "IgnoredElementWarning": "diagnostics", "ModelInputWarning": "diagnostics", "InertiaWarning": "diagnostics",
    "NonOrthogonalModesWarning": "diagnostics", "DefaultTransformWarning": "diagnostics",
}


__all__ = ["__version__", "build", *_LAZY]


def build(path, floating_base: bool = False, out=None, progress=None, **options):
    """Load a YAML/JSON/URDF model (or take a :class:`symgen.model.Model`, e.g. from
    :func:`symgen.model.to_physical_hinge`), generate and compile its C (through the cache) and return the loaded
    :class:`symgen.runtime.MultibodyModel`.  With ``out``, also write ``out/<model>/`` as a package.

    ``armature={hinge: value}`` (a number, or one per hinge U) adds rotor inertia to the hinge's D, M and
    inverse dynamics as Pinocchio's ``model.armature`` and MuJoCo's ``joint/armature`` do; ``lock=[hinge, ...]``
    (or ``{hinge: q}``) welds hinges at their neutral (or given) coordinates; ``balance_inertia`` and
    ``accept_indefinite_inertia``: see :func:`symgen.model.load_model`.  A moving hinge whose outboard
    subtree has no mass or inertia in its directions is named in ``mb.singular_hinges`` and ``mb.warnings``
    (and printed through ``progress``).

    Warnings (``mb.warnings``, one string each: ignored file elements, singular and ill-conditioned hinges, ...)
    are also Python warnings, grouped by kind, of the subclasses of :class:`symgen.SymgenWarning`
    (:mod:`symgen.diagnostics`: ``IllConditionedWarning``, ``IgnoredElementWarning``, ``ModelInputWarning``,
    ...), warned at every build (a cache hit included) once its outputs are complete, so
    ``warnings.simplefilter("error", symgen.SymgenWarning)`` makes them exceptions.

    ``form="per_kind"`` builds the dynamics (forward and inverse dynamics, mass matrix, ATBI matrices) in the
    per-kind form (:mod:`symgen.codegen.perkind`: one C function per body kind and step, C loops over the bodies)
    instead of the default ``"auto"``, which takes for each entry point the form symgen.codegen.schedule's cost model
    chooses: the straight-line form (every body traced into one function, constants folded: fastest for FD and ID)
    under its size limits, the per-kind form above them and for the mass matrix of a large branched tree (whose
    per-kind lanes are faster).  A model carries one form of each entry point; ``mb.forms`` says which,
    ``mb.manifest["form_reasons"]`` why.

    The pipeline: symgen.model (read the file) -> symgen.pipeline.sources (C sources and manifest, cached) ->
    symgen.pipeline.compile (cffi module, cached) -> symgen.pipeline.package (load, check, install).  This function calls
    :func:`symgen.pipeline.package.build`, imported on the first call (and by ``importlib``, so that importing
    ``symgen`` or ``symgen.runtime`` reaches neither sympy nor jinja2)."""
    import importlib

    package = importlib.import_module(".pipeline.package", __name__)
    return package.build(path, floating_base=floating_base, out=out, progress=progress, **options)


def __getattr__(name):
    if name in _LAZY:
        import importlib

        value = getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'symgen' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_LAZY))
