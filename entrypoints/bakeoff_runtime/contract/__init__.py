"""The contract between the orchestration side and the containers, torch-free: both sides import it.

* environment: what a job is given (its BAKEOFF_* variables, the /opt/ml layout).
* step_names: the names of a leg x seed (step, job, MLflow run) and the collective check's channel.
* step_lines: the `[bakeoff] step=N ...` line a job prints and the metric definitions that parse it.
* phases: the `[bakeoff] phase=NAME` line a job prints as it starts, compiles, trains and evaluates.
* documents: the typed files that cross the seam (evaluation config, job summary, job record,
  evaluation), their schema ids and one reader each.
* script_mode, backend_table, output_digest, inert_text: a brought script's settings, what each
  backend is, the digest of a job's outputs, text made inert before it is shown.

The names most callers use are re-exported here (`from bakeoff_runtime.contract import ENV`); each
module imports its neighbours by their own module, never through this one.
"""
from bakeoff_runtime.contract.documents import EVALUATION_SCHEMA, PARITY_RULE_KEYS, PLAN_SCHEMA, SUMMARY_SCHEMA
from bakeoff_runtime.contract.environment import (
    CACHE_DIR_ENV,
    COLLECTIVE_BACKEND_ENV,
    COLLECTIVE_BYTES_ENV,
    COLLECTIVE_FAULT_RANK_ENV,
    DEBUG_ENV,
    ENV,
    ENV_PREFIX,
    INDUCTOR_THREADS_ENV,
    LOCAL_S3_ROOT_ENV,
    LOCAL_STEPS_ENV,
    MLFLOW_CLIENT_ENV,
    MLFLOW_ENV_PREFIX,
    MLFLOW_FLUSH_TIMEOUT_ENV,
    MLFLOW_INSTALL_MARKER_ENV,
    MLFLOW_INSTALL_RESULT_ENV,
    MLFLOW_PATH_ENV,
    MLFLOW_TARGET_ENV,
    MLFLOW_WRITES_ENV,
    OPT_ML,
    PROCESS_START_ENV,
    STATE_DIR_ENV,
    THREAD_ENV,
    UI_GUARD_ENV,
    WARM_FORKED_ENV,
    WARM_START_ENV,
    WARM_WORKER_ENV,
    WORKER_ENV,
    JobEnvironment,
    TrainingEnv,
    opt_ml_root,
)
from bakeoff_runtime.contract.phases import PHASES, Phase, parse_phase_line, phase_line
from bakeoff_runtime.contract.step_lines import (
    FINITE_NUMBER,
    SAY_METRICS,
    STEP_METRICS,
    STEP_PREFIX,
    format_value,
    metric_definitions,
    parse_step_line,
    say_line,
    step_line,
)
from bakeoff_runtime.contract.step_names import (
    COLLECTIVE_CHANNEL,
    COLLECTIVE_RESULT,
    job_name,
    parse_job_name,
    parse_training_step_name,
    training_step_name,
)

__all__ = [
    "CACHE_DIR_ENV", "COLLECTIVE_BACKEND_ENV", "COLLECTIVE_BYTES_ENV", "COLLECTIVE_CHANNEL",
    "COLLECTIVE_FAULT_RANK_ENV", "COLLECTIVE_RESULT", "DEBUG_ENV", "ENV", "ENV_PREFIX", "EVALUATION_SCHEMA",
    "FINITE_NUMBER", "INDUCTOR_THREADS_ENV", "JobEnvironment", "LOCAL_S3_ROOT_ENV", "LOCAL_STEPS_ENV",
    "MLFLOW_CLIENT_ENV", "MLFLOW_ENV_PREFIX", "MLFLOW_FLUSH_TIMEOUT_ENV", "MLFLOW_INSTALL_MARKER_ENV",
    "MLFLOW_INSTALL_RESULT_ENV", "MLFLOW_PATH_ENV", "MLFLOW_TARGET_ENV", "MLFLOW_WRITES_ENV", "OPT_ML",
    "PARITY_RULE_KEYS", "PHASES", "PLAN_SCHEMA", "Phase",
    "PROCESS_START_ENV", "STATE_DIR_ENV",
    "SAY_METRICS", "STEP_METRICS", "STEP_PREFIX", "SUMMARY_SCHEMA", "THREAD_ENV", "TrainingEnv", "UI_GUARD_ENV",
    "WARM_FORKED_ENV",
    "WARM_START_ENV", "WARM_WORKER_ENV", "WORKER_ENV", "format_value", "job_name", "metric_definitions", "opt_ml_root",
    "parse_job_name", "parse_phase_line", "parse_step_line", "phase_line", "parse_training_step_name", "say_line",
    "step_line", "training_step_name",
]
