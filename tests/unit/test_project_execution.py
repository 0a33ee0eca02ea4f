"""`project` on a SageMaker execution: evaluation.json and each job's BillableTimeInSeconds from recorded
responses (botocore's Stubber checks each against the SageMaker and S3 service models), the projection
redone from billed time under the decision the execution was evaluated with, the flags laid over it."""
import json

import pytest
from botocore.stub import Stubber
from moto_aws import _recorded_fetch

from bakeoff.pipelines.sagemaker.ops import SageMakerOps
from bakeoff_runtime.verdict.projection import project as projected

EXECUTION = "arn:aws:sagemaker:us-east-1:123456789012:pipeline/bakeoff-quickstart/execution/exec1"
ARNS = {("trn1", s): f"arn:aws:sagemaker:us-east-1:123456789012:training-job/t{s}" for s in range(3)} | \
       {("p4d", s): f"arn:aws:sagemaker:us-east-1:123456789012:training-job/p{s}" for s in range(3)}
PROC = "arn:aws:sagemaker:us-east-1:123456789012:processing-job/ev"
DECISION = {"production": {"units": 3.6e7, "unit": "tokens", "steps": None, "batch": None}, "instances": {},
            "runs_per_period": 2, "period": "month", "purchase": {},
            "porting": {"hours_spent": 40, "hours_expected": 0, "usd_per_hour": 100}, "confidence": 0.9}


def _evaluation():
    def runs(tps):
        return [{"seed": s, "status": "completed", "reason": None, "val_loss": 2.4, "throughput": t,
                 "units_processed": 1e7, "steps_completed": 100, "wall_time_s": 1000.0, "billable_s": 1000.0,
                 "cost_usd": None} for s, t in enumerate(tps)]
    ev = {"schema": "bakeoff.evaluation/3", "verdict": "pass", "summary": "parity holds", "bakeoff": "quickstart",
          "failed_checks": "none", "cost_basis": "estimate", "speed": {"emulated": False},
          "parity": {"metric": "val_loss", "direction": "minimize", "baseline": "p4d", "margin": 0.1, "alpha": 0.05},
          "checks": [{"name": "parity:trn1~p4d", "status": "passed", "passed": True, "why": "equivalent"}],
          "legs": {leg: {"instance_type": it, "instance_count": 1, "throughput_unit": "tokens/s", "runs": runs(tps),
                         "completed": 3, "metric": {"mean": 2.4, "std": 0.01}, "time_to_first_step_s_mean": 60.0,
                         "price": {"usd_per_hour": price, "source": "test catalog", "as_of": "2026-12-01"}}
                   for leg, it, tps, price in (("trn1", "ml.trn1.32xlarge", (20000.0, 20500.0, 19500.0), 21.5),
                                               ("p4d", "ml.p4d.24xlarge", (10000.0, 10200.0, 9800.0), 32.77))}}
    ev["projection"] = projected(ev, DECISION)  # as the Evaluate step wrote it
    return ev


def _stubbed(monkeypatch, billed: dict[str, int]) -> None:
    ops = SageMakerOps(region="us-east-1")
    sm_stub, s3_stub = Stubber(ops.sm), Stubber(ops.s3)
    _recorded_fetch(sm_stub, s3_stub, EXECUTION, ARNS, PROC, {key: billed[key[0]] for key in ARNS}, _evaluation())
    sm_stub.activate()
    s3_stub.activate()
    import bakeoff.pipelines.api.aws as api_aws

    monkeypatch.setattr(api_aws, "_ops_of", lambda execution, region, session, profile: (EXECUTION, ops))


def test_project_on_an_execution_uses_billed_time_and_the_decision_it_was_evaluated_with(monkeypatch, tmp_path):
    from bakeoff.pipelines import api

    # Each job billed 1,300 s for 1,000 s of wall time: 300 s of start-up outside the script, every run.
    _stubbed(monkeypatch, {"trn1": 1300, "p4d": 1300})
    result = api.project(EXECUTION, {"instances": {"trn1": 2}}, out_dir=tmp_path / "p", render=False)
    assert result.source == EXECUTION and not result.emulated and "BillableTimeInSeconds" in result.label
    # The execution's own decision (2 runs a month, 40 h of porting at $100), with the given instances.
    assert result.runs_per_period == 2 and result.porting_usd == 4000 and result.legs["trn1"].instances == 2
    trn = result.legs["trn1"]
    # 3.6e7 tokens at 20,000 tokens/s on one instance, 2 assumed linear: 900 s; + 60 s first step + 300 s billed.
    assert trn.hours_per_run.mean == pytest.approx((900 + 60 + 300) / 3600)
    assert trn.cost_per_run_usd.mean == pytest.approx(2 * 21.5 * (900 + 60 + 300) / 3600)
    assert any("billed start-up outside the script 300 s" in line for line in trn.rests_on)
    p4d = result.legs["p4d"]
    assert p4d.cost_per_run_usd.mean == pytest.approx(32.77 * (3600 + 60 + 300) / 3600)
    saving = result.comparisons[0].saving_per_run_usd
    assert saving.mean == pytest.approx(p4d.cost_per_run_usd.mean - trn.cost_per_run_usd.mean)
    written = json.loads((tmp_path / "p" / "evaluation.json").read_text())
    assert written["projection"]["sentence"] == result.sentence and written["cost_basis"] == result.label[5:]
