"""symgen: symbolic multibody kinematics (sympy) rendered to plain C99 kernels.

Public API::

    symgen.HINGE_TYPES                        # names of the implemented hinge types
    h = symgen.hinge("GIMBAL")                # a hinge with default parameters
    h = symgen.hinge("PIN", axis=(0, 1, 0))   # bound parameters
    h.transform, h.coord_map, h.qdot_map, h.bias, h.pose_gradient, h.ortho_complement  # sympy matrices

Conventions are those of DESIGN.md (spatial vectors ``[angular; linear]``, quaternions ``(x, y, z, w)``).
"""
__version__ = "0.1.0"

from .hinges import (HINGE_TYPES, SUBHINGE_TYPES, HingeParams, hinge_type_string,  # noqa: E402
                     hooke_hinge_params, inline_hinge_params, inplane_hinge_params, parallel_hinge_params,
                     perpendicular_hinge_params, subhinge_types)
from .derive import Hinge, hinge  # noqa: E402


def compile_hinge(h):
    """Compile (through the cache) and load the C kernels of a hinge: see :func:`symgen.build.compile_hinge`."""
    from .build import compile_hinge as _compile

    return _compile(h)

__all__ = [
    "__version__", "HINGE_TYPES", "compile_hinge", "SUBHINGE_TYPES", "HingeParams", "Hinge", "hinge", "subhinge_types",
    "hinge_type_string", "hooke_hinge_params", "inline_hinge_params", "inplane_hinge_params",
    "perpendicular_hinge_params", "parallel_hinge_params",
]
