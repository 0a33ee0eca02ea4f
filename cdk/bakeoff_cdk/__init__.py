"""bakeoff's CDK construct library: a bake-off pipeline as a construct you drop into a stack."""
from .pipeline import BakeoffPipeline
from .security import REASONS, add_security_checks

__all__ = ["BakeoffPipeline", "REASONS", "add_security_checks"]
