"""Python side of built modules. Imports neither sympy nor jinja2: a built module loads without them."""
from .hinge_kernels import HingeKernels, load_hinge_library
from .f2f import FrameToFrame
from .model import MultibodyModel, load_built

__all__ = ["HingeKernels", "load_hinge_library", "MultibodyModel", "FrameToFrame", "load_built"]
