"""bakeoff's CDK construct for Python apps: the jsii construct library (cdk/construct) given a spec, which it
compiles with bakeoff's compiler for the stack's region."""
from bakeoff_cdk_construct import BakeoffPipelineBase, IBakeoffPipeline, Verdict, VerdictRuleOptions

from .pipeline import BakeoffPipeline
from .security import REASONS, add_security_checks

__all__ = ["BakeoffPipeline", "BakeoffPipelineBase", "IBakeoffPipeline", "REASONS", "Verdict", "VerdictRuleOptions",
           "add_security_checks"]
