"""What the Evaluate step decides with comes from one builder (pipelines/plan/evaluation_config.py): the
compiled asset (a round's design included) is its output byte for byte, the local record adds only what
the engine knows, and the ParityMargin parameter is applied by one contract function on both sides."""
import copy
import json

import pytest

from bakeoff.estimators.prices import Price
from bakeoff.pipelines.plan.evaluation_config import (
    EMULATED_COST_BASIS,
    RunRecord,
    compiled_record,
    evaluation_config,
)
from bakeoff.pipelines.plan.model import build_plan
from bakeoff.pipelines.sagemaker.compiler import compile_plan
from bakeoff.pipelines.sagemaker.more_seeds import round_pipeline
from bakeoff.pipelines.spec.loader import load_spec
from bakeoff_runtime.contract.rule import MARGIN_PARAMETER_REASON, with_margin_parameter
from conftest import ROOT

QUICKSTART = ROOT / "examples" / "quickstart.yaml"


def _asset(compiled) -> bytes:
    return next(a.body for a in compiled.assets if "/eval-config/" in a.key)


def _bytes(config) -> bytes:
    return (json.dumps(config, indent=2, sort_keys=True) + "\n").encode()


@pytest.mark.parametrize("overrides", [[], ["legs.0.precompile=true", "preflight.enabled=true"],
                                       ["mlflow.tracking_uri=http://mlflow.example:5000"]])
def test_the_compiled_asset_is_the_builders_output_for_the_compiled_record(overrides):
    plan = build_plan(load_spec(QUICKSTART, overrides), local_gpu=False)
    assert _asset(compile_plan(plan, bucket="b")) == _bytes(evaluation_config(plan, compiled_record(plan)))


def test_a_rounds_asset_carries_its_design_from_the_builder_and_nothing_else_changes():
    spec = load_spec(QUICKSTART)
    design = {"looks": [3, 4], "max_seeds": 12, "spending": "pocock"}
    compiled = round_pipeline(spec, [0, 1, 2, 3], [3, 4], 12, "pocock", bucket="b")
    from bakeoff.pipelines.advice.rounds import with_seeds

    plan = build_plan(with_seeds(spec, [0, 1, 2, 3]), local_gpu=False)
    assert _asset(compiled) == _bytes(evaluation_config(plan, compiled_record(plan, design)))
    body = json.loads(_asset(compiled))
    without = evaluation_config(plan, compiled_record(plan))
    assert body.pop("sequential") == design and body == json.loads(_bytes(without))


def test_the_local_record_adds_what_the_engine_knows_and_changes_nothing_planned():
    plan = build_plan(load_spec(QUICKSTART), local_gpu=False)
    compiled = evaluation_config(plan, compiled_record(plan))
    rule = {**compiled["parity"], "margin": 0.5}
    price = Price(9.5, "AWS Price List API", "2026-12-01")
    record = RunRecord(cost_basis=EMULATED_COST_BASIS, prices={"trn1": price}, mlflow={},
                       emulated_on={"trn1": "XLA CPU", "p4d": "CPU"}, rule=rule,
                       rule_change={"rule_original": dict(compiled["parity"]), "rule_change_reason": "why"},
                       design={"looks": [3]}, jobs_at_once=2, looks={"this_look": 1, "earlier": []})
    local = evaluation_config(plan, record)
    assert local["parity"]["margin"] == 0.5 and local["rule_original"]["margin"] == compiled["parity"]["margin"]
    assert local["emulated"] is True and local["jobs_at_once"] == 2 and local["sequential"] == {"looks": [3]}
    assert local["legs"]["trn1"]["price"]["usd_per_hour"] == 9.5 and local["legs"]["p4d"]["price"] is None
    assert local["legs"]["trn1"]["emulated_on"] == "XLA CPU"
    assert local["legs"]["trn1"]["local_processes"] == plan.leg("trn1").local_processes
    for name in ("trn1", "p4d"):  # what was planned is the same on both engines
        planned = {k: v for k, v in compiled["legs"][name].items() if k not in ("price", "emulated_on")}
        assert {k: local["legs"][name][k] for k in planned} == planned
    assert {k: v for k, v in local.items() if k in compiled and k not in ("legs", "parity", "cost_basis")} == \
        {k: v for k, v in compiled.items() if k not in ("legs", "parity", "cost_basis")}
    assert "emulated" not in compiled and "local_processes" not in compiled["legs"]["trn1"]


def test_the_margin_parameter_is_applied_once_and_keeps_the_rule_fixed_before_the_data():
    plan = build_plan(load_spec(QUICKSTART), local_gpu=False)
    config = evaluation_config(plan, compiled_record(plan))
    before = copy.deepcopy(config)
    margin = config["parity"]["margin"]
    assert with_margin_parameter(config, None) == before and with_margin_parameter(config, margin) == before
    changed = with_margin_parameter(config, margin * 10)
    assert config == before  # the caller's config is not mutated
    assert changed["parity"]["margin"] == margin * 10
    assert changed["rule_original"] == before["parity"] and changed["rule_change_reason"] == MARGIN_PARAMETER_REASON
    # A rule already recorded as changed (the local engine's parity-rule.json) keeps its own record.
    recorded = {**config, "rule_original": {"margin": 1.0}, "rule_change_reason": "a reason given"}
    again = with_margin_parameter(recorded, margin * 10)
    assert again["rule_original"] == {"margin": 1.0} and again["rule_change_reason"] == "a reason given"
