"""Model description, YAML/JSON loader with validation, URDF importer."""
from .load import add_floating_base, load_model, model_from_dict, to_physical_hinge
from .spec import NEWTONIAN, Body, Frame, LoopConstraint, Model, ModelError, Pose, rpy_matrix

__all__ = ["NEWTONIAN", "Body", "Frame", "LoopConstraint", "Model", "ModelError", "Pose", "rpy_matrix", "load_model", "to_physical_hinge",
           "model_from_dict", "add_floating_base"]
