"""Python side of built modules. Imports neither sympy nor jinja2: a built module loads without them.

:class:`ModelBinding` owns a model's compiled module (pointers, one-state and batched calls, checks);
:class:`MultibodyModel` is the set of verbs over it (``mb.binding``); :func:`load_built` loads a built model's
folder."""
from .hinge_kernels import HingeKernels, load_hinge_library
from .binding import ModelBinding
from .f2f import FrameToFrame
from .model import MultibodyModel, load_built

__all__ = ["HingeKernels", "load_hinge_library", "ModelBinding", "MultibodyModel", "FrameToFrame", "load_built"]
