"""bakeoff's pipeline as SageMaker Python SDK 3 objects, for a team that builds its own pipeline with the SDK
(the `sdk` extra: `pip install 'bakeoff[sdk]'`; nothing else in bakeoff needs the SDK).

    from bakeoff.pipelines.sagemaker import compile_pipeline
    from bakeoff.pipelines.sagemaker.ops import SageMakerOps
    from bakeoff.pipelines.sagemaker.sdk_steps import sdk_parameters, sdk_steps

    compiled = compile_pipeline(spec, bucket="my-bucket", role_arn=ROLE)
    SageMakerOps(region).upload_assets(compiled)   # the code bundle, data and evaluation config
    steps = sdk_steps(compiled)                     # Training..., Evaluate, ParityGate
    gate = steps[-1]
    gate.if_steps.append(my_register_step)          # runs only on a "pass" verdict
    Pipeline(name=..., parameters=sdk_parameters(compiled), steps=[*steps, ...], sagemaker_session=...)

SDK 3's own TrainingStep and ProcessingStep take only `step_args` from `ModelTrainer.train()` /
`Processor.run()` (sagemaker/mlops/workflow/steps.py, `validate_step_args_input`), which would rebuild the
requests their own way (timestamped code uploads, the SDK's driver scripts: tests/e2e/test_sdk_reference.py).
So bakeoff's Training and Processing steps are `BakeoffJobStep`s, a `ConfigurableRetryStep` that returns
bakeoff's request as its Arguments; the gate is the SDK's own ConditionStep and FailStep. Every expression
(`Get` of a parameter, a step property, a property file or an execution variable, `Std:Join`,
`Std:JsonGet`) becomes the SDK's pipeline variable, so the SDK sees the same data dependencies bakeoff
does, and `Pipeline.definition()` renders them back to bakeoff's JSON: its Parameters and Steps equal
`compiled.definition`'s.

The definition reads files from S3 that only `compiled.assets` holds: upload them before the pipeline
runs (`SageMakerOps(region).upload_assets(compiled)`, or `bakeoff deploy`, which also upserts bakeoff's
own pipeline). The SDK uploads nothing for these steps. `compiled.max_parallel_steps`, when set, is the
`parallelism_config` to pass to the SDK's `Pipeline.upsert`.

Nothing here calls AWS; the SDK is imported on first use, never when this module is.
"""
from __future__ import annotations

import os
from functools import cache
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

from bakeoff.pipelines.errors import BakeoffError

if TYPE_CHECKING:
    from bakeoff.pipelines.sagemaker.compiler import CompiledPipeline
    from bakeoff.pipelines.spec.model import BakeoffSpec

SDK_EXTRA = "sdk"
INSTALL_HINT = f"pip install 'bakeoff[{SDK_EXTRA}]'"


class SdkMissingError(BakeoffError, ImportError):
    """The SageMaker Python SDK 3 (the `sdk` extra) is not installed."""


@cache
def _sdk() -> SimpleNamespace:
    """The SDK's classes, imported once. Importing `sagemaker.mlops` makes boto3 clients at class-definition
    time (sagemaker/ai_registry/air_hub.py `AIRHub`, sagemaker 3.27.0 / sagemaker-mlops 1.27.0), which
    raises NoRegionError where no default region is configured: a region is lent for the import only
    (no call is made; the clients are never used by what this module builds)."""
    try:
        import boto3
    except ImportError as exc:  # pragma: no cover - boto3 is a core dependency
        raise SdkMissingError(f"boto3 is missing: {INSTALL_HINT}") from exc
    lent = not boto3.session.Session().region_name
    if lent:  # any region will do: what is made with it at import is never used here
        os.environ["AWS_DEFAULT_REGION"] = "us-east-1"
    try:
        from sagemaker.core.workflow import (
            conditions,
            execution_variables,
            functions,
            parameters,
            pipeline_context,
            properties,
        )
        from sagemaker.mlops.workflow import condition_step, fail_step, pipeline, retry, steps
    except ImportError as exc:
        raise SdkMissingError(f"the SageMaker Python SDK 3 is not installed ({exc.name or exc}): "
                              f"{INSTALL_HINT}") from exc
    finally:
        if lent:
            del os.environ["AWS_DEFAULT_REGION"]

    # Describe* shapes give `step.properties` its members (TrainingJobName, ModelArtifacts, ...), as the
    # SDK's own TrainingStep/ProcessingStep do (sagemaker/mlops/workflow/steps.py).
    shapes = {"Training": "DescribeTrainingJobResponse", "Processing": "DescribeProcessingJobResponse"}

    Properties = properties.Properties

    class BakeoffJobStep(steps.ConfigurableRetryStep):
        """A Training or Processing step whose Arguments are bakeoff's request (with the SDK's pipeline
        variables where bakeoff has expressions). `properties` and `property_files` work as on the SDK's
        own TrainingStep and ProcessingStep, so other steps can read this one's outputs."""

        def __init__(self, name: str, step_type: Any, arguments: dict[str, Any], *,
                     depends_on: list[str] | None = None, retry_policies: list[Any] | None = None,
                     raw_retry_policies: list[dict[str, Any]] | None = None, cache_config: Any = None,
                     property_files: list[Any] | None = None, display_name: str | None = None,
                     description: str | None = None):
            super().__init__(name, step_type, display_name, description, depends_on, retry_policies)
            self._arguments = arguments
            self._raw_retry_policies = raw_retry_policies
            self.cache_config = cache_config
            self.property_files = property_files or []
            self._properties = Properties(step_name=name, step=self, shape_name=shapes[step_type.value])

        @property
        def arguments(self) -> dict[str, Any]:
            return self._arguments

        @property
        def properties(self) -> Any:
            return self._properties

        def to_request(self) -> dict[str, Any]:
            request: dict[str, Any] = super().to_request()
            if self._raw_retry_policies:
                request["RetryPolicies"] = self._raw_retry_policies
            if self.cache_config:
                request.update(self.cache_config.config)
            if self.property_files:
                request["PropertyFiles"] = [f.expr for f in self.property_files]
            return request

    return SimpleNamespace(
        BakeoffJobStep=BakeoffJobStep, cond=conditions, ExecutionVariable=execution_variables.ExecutionVariable,
        Join=functions.Join, JsonGet=functions.JsonGet, ParameterString=parameters.ParameterString,
        ParameterInteger=parameters.ParameterInteger, ParameterFloat=parameters.ParameterFloat,
        ParameterBoolean=parameters.ParameterBoolean, PipelineSession=pipeline_context.PipelineSession,
        Properties=Properties, PropertyFile=properties.PropertyFile, ConditionStep=condition_step.ConditionStep,
        FailStep=fail_step.FailStep, Pipeline=pipeline.Pipeline, interpolate=pipeline.interpolate,
        SageMakerJobStepRetryPolicy=retry.SageMakerJobStepRetryPolicy,
        SageMakerJobExceptionTypeEnum=retry.SageMakerJobExceptionTypeEnum, StepRetryPolicy=retry.StepRetryPolicy,
        StepExceptionTypeEnum=retry.StepExceptionTypeEnum, CacheConfig=steps.CacheConfig,
        StepTypeEnum=steps.StepTypeEnum)


def _compiled(source: CompiledPipeline | BakeoffSpec | str | Path, *, bucket: str | None, role_arn: str | None,
              region: str | None) -> CompiledPipeline:
    from bakeoff.pipelines.sagemaker.compiler import CompiledPipeline, compile_pipeline

    if isinstance(source, CompiledPipeline):
        if bucket or role_arn or region:
            raise BakeoffError("bucket, role_arn and region are compile options: pass them to compile_pipeline, "
                               "or pass the spec here")
        return source
    if isinstance(source, (str, Path)):
        from bakeoff.pipelines.spec.loader import load_spec

        source = load_spec(source)
    return compile_pipeline(source, bucket=bucket, role_arn=role_arn, region=region)


def sdk_parameters(source: CompiledPipeline | BakeoffSpec | str | Path, *, bucket: str | None = None,
                   role_arn: str | None = None, region: str | None = None) -> list[Any]:
    """bakeoff's pipeline parameters (the data channels' URIs, MaxSteps, ParityMargin) as the SDK's
    ParameterString/ParameterInteger/ParameterFloat, with their defaults."""
    return _Builder(_compiled(source, bucket=bucket, role_arn=role_arn, region=region)).parameters


def sdk_steps(source: CompiledPipeline | BakeoffSpec | str | Path, *, bucket: str | None = None,
              role_arn: str | None = None, region: str | None = None) -> list[Any]:
    """One SDK step per step of bakeoff's definition, in its order: `BakeoffJobStep`s for the Training and
    Processing steps, and the SDK's ConditionStep (ParityGate, whose `if_steps` run on a pass) holding the
    ConditionStep and FailSteps of the other verdicts. `request_of(step)` of each equals bakeoff's step.

    `source`: a CompiledPipeline (then upload its `assets` yourself, see the module's docstring), or a
    spec (or a spec file) that is compiled here with `bucket`, `role_arn` and `region`. Add the steps to a
    Pipeline with `sdk_parameters(...)` of the same source: they reference those parameters by name."""
    return _Builder(_compiled(source, bucket=bucket, role_arn=role_arn, region=region)).steps


def sdk_pipeline(source: CompiledPipeline | BakeoffSpec | str | Path, *, name: str | None = None,
                 sagemaker_session: Any = None, bucket: str | None = None, role_arn: str | None = None,
                 region: str | None = None) -> Any:
    """An SDK `Pipeline` of bakeoff's parameters and steps, named `name` (bakeoff's pipeline name by
    default). Without `sagemaker_session`, a PipelineSession of the definition's region that makes no call
    until the pipeline is created or started (`definition()` makes none).

    Add a team's own steps to `pipeline.steps` (or, to run only on a pass verdict, to the gate's
    `pipeline.steps[-1].if_steps`), built from these step objects (`pipeline.steps`, e.g. their
    `properties`), not from another `sdk_steps()` call: the SDK tells steps apart by object and adds a
    referenced step object it was not given, so a second copy of a step would be a second step of the same
    name (`StepsCompiler._push_to_build_queue`, sagemaker/mlops/workflow/_steps_compiler.py,
    sagemaker-mlops 1.27.0).

    `json.loads(pipeline.definition())` equals `compiled.definition` on Version, Metadata, Parameters and
    Steps, and adds `"PipelineExperimentConfig": null` and `"MlflowConfig": null`: bakeoff turns the SDK's
    default experiment config off (it tracks runs in MLflow itself), the SDK writes both keys whatever
    their value (sagemaker/mlops/workflow/pipeline.py `Pipeline.definition`, sagemaker-mlops 1.27.0)."""
    compiled = _compiled(source, bucket=bucket, role_arn=role_arn, region=region)
    sdk = _sdk()
    built = _Builder(compiled)
    if sagemaker_session is None:
        import boto3

        sagemaker_session = sdk.PipelineSession(boto_session=boto3.session.Session(region_name=built.region),
                                                default_bucket=compiled.bucket)
    return sdk.Pipeline(name=name or compiled.name, parameters=built.parameters,
                        steps=built.steps, sagemaker_session=sagemaker_session,
                        pipeline_experiment_config=None)


def request_of(step: Any) -> dict[str, Any]:
    """The step's request as `Pipeline.definition()` writes it: its pipeline variables rendered to
    expressions (the SDK's `interpolate`, sagemaker/mlops/workflow/pipeline.py)."""
    rendered: dict[str, Any] = _sdk().interpolate(step.to_request(), {}, {}, pipeline_name="")
    return rendered


_RETRY_TYPES = {"SageMaker.": "job", "Step.": "step"}
_COMPARISONS = {"Equals": "ConditionEquals", "GreaterThan": "ConditionGreaterThan",
                "GreaterThanOrEqualTo": "ConditionGreaterThanOrEqualTo", "LessThan": "ConditionLessThan",
                "LessThanOrEqualTo": "ConditionLessThanOrEqualTo"}


class _Builder:
    """bakeoff's definition -> SDK objects. Steps are built in the definition's order, so a step's
    expressions can point at the step objects they read (bakeoff only reads earlier steps)."""

    def __init__(self, compiled: CompiledPipeline):
        self.sdk = _sdk()
        self.compiled = compiled
        definition = compiled.definition
        self.region = _region_of(definition) or os.environ.get("AWS_DEFAULT_REGION") or "us-east-1"
        kinds = {"String": self.sdk.ParameterString, "Integer": self.sdk.ParameterInteger,
                 "Float": self.sdk.ParameterFloat, "Boolean": self.sdk.ParameterBoolean}
        self.parameters = []
        for p in definition.get("Parameters", []):
            kwargs: dict[str, Any] = {"default_value": p["DefaultValue"]} if "DefaultValue" in p else {}
            if "EnumValues" in p:
                kwargs["enum_values"] = p["EnumValues"]
            self.parameters.append(kinds[p["Type"]](p["Name"], **kwargs))
        self._params = {p.name: p for p in self.parameters}
        self._steps: dict[str, Any] = {}
        self.steps = [self._step(s) for s in definition["Steps"]]

    # --- expressions ------------------------------------------------------------------------------
    def value(self, obj: Any) -> Any:
        """A definition value with its expressions as the SDK's pipeline variables. One the SDK has no
        variable for is kept as written: `interpolate` passes plain dicts through unchanged."""
        if isinstance(obj, list):
            return [self.value(v) for v in obj]
        if not isinstance(obj, dict):
            return obj
        if len(obj) == 1:
            (key, arg), = obj.items()
            found = self._expression(key, arg)
            if found is not None:
                return found
        return {k: self.value(v) for k, v in obj.items()}

    def _expression(self, key: str, arg: Any) -> Any:
        sdk = self.sdk
        if key == "Get" and isinstance(arg, str):
            head, _, rest = arg.partition(".")
            if head == "Parameters":
                return self._params.get(rest)
            if head == "Execution":
                return sdk.ExecutionVariable(rest)
            step, _, path = rest.partition(".")
            if head == "Steps" and path and not path.startswith("PropertyFiles."):
                return sdk.Properties(step_name=step, path=path, step=self._steps.get(step))
        elif key == "Std:Join" and isinstance(arg, dict) and set(arg) == {"On", "Values"}:
            return sdk.Join(on=arg["On"], values=self.value(arg["Values"]))
        elif key == "Std:JsonGet" and isinstance(arg, dict) and set(arg) == {"PropertyFile", "Path"}:
            ref = arg["PropertyFile"].get("Get", "") if isinstance(arg["PropertyFile"], dict) else ""
            parts = ref.split(".")
            if len(parts) == 4 and parts[0] == "Steps" and parts[2] == "PropertyFiles":
                reader = self._steps.get(parts[1])
                files = {f.name: f for f in getattr(reader, "property_files", [])}
                # The PropertyFile object and the step object (not only their names) let the SDK check
                # the reference and order the steps (sagemaker/core/workflow/functions.py `JsonGet`).
                return sdk.JsonGet(step_name=parts[1], property_file=files.get(parts[3], parts[3]),
                                   json_path=arg["Path"], step=reader)
        return None

    def condition(self, c: dict[str, Any]) -> Any:
        sdk, kind = self.sdk, c.get("Type")
        if kind in _COMPARISONS and set(c) == {"Type", "LeftValue", "RightValue"}:
            return getattr(sdk.cond, _COMPARISONS[kind])(left=self.value(c["LeftValue"]),
                                                          right=self.value(c["RightValue"]))
        if kind == "In" and set(c) == {"Type", "QueryValue", "Values"}:
            return sdk.cond.ConditionIn(value=self.value(c["QueryValue"]), in_values=self.value(c["Values"]))
        if kind == "Not" and set(c) == {"Type", "Condition"}:
            return sdk.cond.ConditionNot(expression=self.condition(c["Condition"]))
        if kind == "Or" and set(c) == {"Type", "Conditions"}:
            return sdk.cond.ConditionOr(conditions=[self.condition(x) for x in c["Conditions"]])
        raise BakeoffError(f"condition {c!r} has no SageMaker Python SDK equivalent")

    def _retry_policies(self, raw: list[dict[str, Any]]) -> list[Any] | None:
        """The SDK's retry policy objects, or None where one is not representable (then the step keeps
        bakeoff's list as written). SDK policies write BackoffRate, IntervalSeconds, MaxAttempts or
        ExpireAfterMin and ExceptionType (sagemaker/mlops/workflow/retry.py)."""
        sdk, out = self.sdk, []
        for p in raw:
            types = p.get("ExceptionType", [])
            if not set(p) <= {"ExceptionType", "IntervalSeconds", "BackoffRate", "MaxAttempts", "ExpireAfterMin"} \
                    or not types or len({_RETRY_TYPES.get(t.split(".")[0] + ".") for t in types}) != 1:
                return None
            kwargs = {"backoff_rate": p.get("BackoffRate", 2.0), "interval_seconds": p.get("IntervalSeconds", 1),
                      "max_attempts": p.get("MaxAttempts"), "expire_after_mins": p.get("ExpireAfterMin")}
            try:
                if types[0].startswith("SageMaker."):
                    policy = sdk.SageMakerJobStepRetryPolicy(
                        exception_types=[sdk.SageMakerJobExceptionTypeEnum(t) for t in types], **kwargs)
                else:
                    policy = sdk.StepRetryPolicy(exception_types=[sdk.StepExceptionTypeEnum(t) for t in types],
                                                 **kwargs)
                if policy.to_request() != p:
                    return None
            except (ValueError, AssertionError):
                return None
            out.append(policy)
        return out

    # --- steps --------------------------------------------------------------------------------------
    def _step(self, s: dict[str, Any]) -> Any:
        sdk, kind = self.sdk, s["Type"]
        common = {"display_name": s.get("DisplayName"), "description": s.get("Description")}
        if kind in ("Training", "Processing"):
            raw_retry = s.get("RetryPolicies") or []
            policies = self._retry_policies(raw_retry)
            cache = s.get("CacheConfig")
            step = sdk.BakeoffJobStep(
                s["Name"], sdk.StepTypeEnum(kind), self.value(s["Arguments"]),
                depends_on=list(s["DependsOn"]) if s.get("DependsOn") else None,
                retry_policies=policies, raw_retry_policies=raw_retry if policies is None else None,
                cache_config=sdk.CacheConfig(enable_caching=cache["Enabled"], expire_after=cache.get("ExpireAfter"))
                if cache else None,
                property_files=[sdk.PropertyFile(name=f["PropertyFileName"], output_name=f["OutputName"],
                                                 path=f["FilePath"]) for f in s.get("PropertyFiles", [])],
                **common)
        elif kind == "Condition":
            args = s["Arguments"]
            step = sdk.ConditionStep(name=s["Name"], depends_on=list(s["DependsOn"]) if s.get("DependsOn") else None,
                                     conditions=[self.condition(c) for c in args["Conditions"]],
                                     if_steps=[self._step(x) for x in args.get("IfSteps", [])],
                                     else_steps=[self._step(x) for x in args.get("ElseSteps", [])], **common)
        elif kind == "Fail":
            step = sdk.FailStep(name=s["Name"], error_message=self.value(s["Arguments"].get("ErrorMessage", "")),
                                depends_on=list(s["DependsOn"]) if s.get("DependsOn") else None, **common)
        else:
            raise BakeoffError(f"step {s['Name']}: type {kind!r} is not one bakeoff emits")
        self._steps[step.name] = step
        return step


def _region_of(definition: dict[str, Any]) -> str | None:
    """The region the steps run in, from an image URI (ACCOUNT.dkr.ecr.REGION.amazonaws.com/...)."""
    for s in definition.get("Steps", []):
        spec = s.get("Arguments", {}).get("AlgorithmSpecification", {})
        image = spec.get("TrainingImage") if isinstance(spec, dict) else None
        if isinstance(image, str) and ".dkr.ecr." in image:
            return image.split(".dkr.ecr.")[1].split(".")[0]
    return None
