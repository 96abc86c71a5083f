"""Python side of built modules. Imports neither sympy nor jinja2: a built module loads without them."""
from .hinge_kernels import HingeKernels, load_hinge_library

__all__ = ["HingeKernels", "load_hinge_library"]
