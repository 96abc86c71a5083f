"""symgen: symbolic multibody kinematics (sympy) rendered to plain C99 kernels.

Public API::

    symgen.HINGE_TYPES                        # names of the implemented hinge types
    h = symgen.hinge("GIMBAL")                # a hinge with default parameters
    h = symgen.hinge("PIN", axis=(0, 1, 0))   # bound parameters
    h.transform, h.coord_map, h.qdot_map, h.bias, h.pose_gradient, h.ortho_complement  # sympy matrices
    k = symgen.compile_hinge(h)               # C kernels, numpy in / numpy out, batched

Conventions are those of DESIGN.md (spatial vectors ``[angular; linear]``, quaternions ``(x, y, z, w)``).
The names are imported lazily, so ``symgen.runtime`` loads built modules without sympy or jinja2.
"""
__version__ = "0.1.0"

_LAZY = {
    "HINGE_TYPES": "hinges", "SUBHINGE_TYPES": "hinges", "HingeParams": "hinges", "hinge_type_string": "hinges",
    "subhinge_types": "hinges", "hooke_hinge_params": "hinges", "inline_hinge_params": "hinges",
    "inplane_hinge_params": "hinges", "parallel_hinge_params": "hinges", "perpendicular_hinge_params": "hinges",
    "Hinge": "derive", "hinge": "derive", "compile_hinge": "build", "BuildError": "build",
    "load_model": "model", "ModelError": "model", "MultibodyModel": "runtime",
}


__all__ = ["__version__", "build", *_LAZY]

# ``symgen.build(path, floating_base=False, out=None)`` is the submodule symgen.build itself, made callable
# (a function of that name would be shadowed by the submodule as soon as it is imported).


def __getattr__(name):
    if name == "build":
        import importlib

        return importlib.import_module(".build", __name__)
    if name in _LAZY:
        import importlib

        value = getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'symgen' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_LAZY))
