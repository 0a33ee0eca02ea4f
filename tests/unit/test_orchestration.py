"""The orchestration examples run: the Airflow DAG's callables and the Step Functions Lambda handler,
called directly against a moto server over HTTP, down to the branch each verdict takes."""
from __future__ import annotations

import importlib.util
import json

import pytest
from moto_aws import API_BUCKET as BUCKET
from moto_aws import ROLE, recorded_execution, session_with

from conftest import ROOT

EXAMPLES = ROOT / "examples" / "orchestration"
QUICKSTART = str(ROOT / "examples" / "quickstart.yaml")


def _load(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def dag_module():
    return _load("bakeoff_airflow_dag", EXAMPLES / "airflow_dag.py")


@pytest.fixture(scope="module")
def lambda_module():
    return _load("bakeoff_sfn_handler", EXAMPLES / "step_functions" / "handler.py")


def test_the_dag_module_imports_without_airflow(dag_module):
    assert importlib.util.find_spec("airflow") is None  # this suite runs without Airflow
    assert dag_module.bakeoff_dag is None and callable(dag_module.choose_branch)


@pytest.mark.parametrize("verdict,branch", [("pass", "adopt_trainium"), ("fail", "keep_gpus"),
                                            ("inconclusive", "add_seeds")])
def test_dag_callables_drive_a_bakeoff_and_branch_on_the_verdict(dag_module, aws, tmp_path, verdict,
                                                                  branch):
    """bakeoff's tasks (synth, deploy, verdict, branch), with the provider's start and wait in between
    played by bakeoff's own start and wait: the same StartPipelineExecution and DescribePipelineExecution."""
    from bakeoff import Deployment, start, wait

    session = session_with({"ListPipelineExecutionSteps": recorded_execution(verdict)})
    checked = dag_module.synth_pipeline(QUICKSTART, BUCKET)
    assert checked["pipeline_name"] == "bakeoff-quickstart" and len(checked["assets"]) == 4
    # Each task's return value goes through XCom as JSON: make it do so here.
    deployment = json.loads(json.dumps(dag_module.deploy_pipeline(QUICKSTART, ROLE, BUCKET, session=session)))
    assert deployment["pipeline_arn"] == "arn:aws:sagemaker:us-east-1:123456789012:pipeline/bakeoff-quickstart"
    # What the start task's templates read from this XCom: the pipeline's name and region.
    assert deployment["pipeline_name"] == "bakeoff-quickstart" and deployment["region"] == "us-east-1"
    execution = start(Deployment.model_validate(deployment), {"MaxSteps": 20}, session=session)
    assert wait(execution, poll_s=0.1, timeout_s=60, session=session).status == "Succeeded"
    result = dag_module.fetch_verdict(execution.arn, out_dir=str(tmp_path / "report"), session=session)
    assert result["verdict"] == verdict and (tmp_path / "report" / "report.html").exists()
    assert dag_module.choose_branch(json.loads(json.dumps(result))) == branch


def test_the_execution_is_named_as_sagemaker_takes_it(dag_module):
    from bakeoff.pipelines.sagemaker.execution_labels import DISPLAY_NAME

    for run_id in ("manual__2026-12-07T02:30:00.123456+00:00", "scheduled__2026-01-01T00:00:00+00:00",
                   "__weird--id__", "x" * 300):
        name = dag_module.display_name(run_id)
        assert DISPLAY_NAME.fullmatch(name) and len(name) <= 82, name
    assert dag_module.display_name("manual__2026-12-07T02:30:00+00:00") == "airflow-manual-2026-12-07T02-30-00-00-00"


def test_the_verdict_task_says_when_no_execution_was_started(dag_module):
    with pytest.raises(ValueError, match="no pipeline execution to read"):
        dag_module.fetch_verdict(None)


def _next_state(machine: dict, state_name: str, output: dict) -> str:
    """Where the state machine goes from a Choice state, for the rules this example uses."""
    state = machine["States"][state_name]
    for rule in state["Choices"]:
        value = output.get(rule["Variable"].removeprefix("$."))
        if ("StringEquals" in rule and value == rule["StringEquals"]) or \
                ("BooleanEquals" in rule and value is rule["BooleanEquals"]):
            return rule["Next"]
    return state["Default"]


@pytest.mark.parametrize("verdict,end", [("pass", "AdoptTrainium"), ("fail", "KeepGpus"),
                                         ("inconclusive", "AddSeeds")])
def test_step_functions_handler_runs_the_state_machine(lambda_module, aws, verdict, end):
    machine = json.loads((EXAMPLES / "step_functions" / "state_machine.asl.json").read_text())
    session = session_with({"ListPipelineExecutionSteps": recorded_execution(verdict)})
    handler = lambda_module.handler

    deployed = handler({"action": "deploy", "spec": QUICKSTART, "role_arn": ROLE, "bucket": BUCKET}, None, session)
    assert deployed["deployment"]["pipeline_arn"].endswith(":pipeline/bakeoff-quickstart")
    assert machine["States"]["Deploy"]["Next"] == "Start"
    started = handler({"action": "start", "deployment": deployed["deployment"]}, None, session)
    arn = started["execution"]["arn"]
    assert arn.startswith(deployed["deployment"]["pipeline_arn"] + "/execution/")
    polled = handler({"action": "poll", "execution": started["execution"]}, None, session)
    assert polled["finished"] is True and polled["status"] == "Succeeded" and polled["execution"]["arn"] == arn
    assert _next_state(machine, "Finished?", polled) == "Report"
    reported = handler({"action": "report", "execution": polled["execution"]}, None, session)
    assert reported["verdict"] == verdict
    assert json.loads(json.dumps(reported)) == reported  # a state's output is JSON
    assert _next_state(machine, "Verdict?", reported) == end


def test_step_functions_poll_loops_while_the_execution_runs(lambda_module, aws):
    machine = json.loads((EXAMPLES / "step_functions" / "state_machine.asl.json").read_text())
    session = session_with({"DescribePipelineExecution": {"PipelineExecutionStatus": "Executing"}})
    execution = {"arn": "arn:aws:sagemaker:us-east-1:123456789012:pipeline/bakeoff-quickstart/execution/run1",
                 "pipeline_name": "bakeoff-quickstart", "region": "us-east-1", "parameters": {}}
    polled = lambda_module.handler({"action": "poll", "execution": execution}, None, session)
    assert polled == {"execution": execution, "finished": False, "status": "Executing"}
    assert _next_state(machine, "Finished?", polled) == "Wait" and machine["States"]["Wait"]["Next"] == "Poll"


def test_the_state_machine_only_names_states_it_has():
    machine = json.loads((EXAMPLES / "step_functions" / "state_machine.asl.json").read_text())
    states = machine["States"]
    targets = {machine["StartAt"]}
    for state in states.values():
        targets |= {state[k] for k in ("Next", "Default") if k in state}
        targets |= {rule["Next"] for rule in state.get("Choices", [])}
    assert targets <= set(states) and set(states) - targets == set()
