"""SageMaker Pipelines: compile a spec to a pipeline definition (pure), validate it
offline, and operate it through boto3."""
from .compiler import Asset, CompiledPipeline, compile_pipeline, synth_json

__all__ = ["Asset", "CompiledPipeline", "compile_pipeline", "synth_json"]
