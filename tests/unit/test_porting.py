"""The "what porting cost" section: lines of code, preflight findings, compile time and the warm
cache's saving, and the numerics that differ, per leg against the baseline."""
import json

import pytest

from bakeoff_runtime.report import porting_section
from bakeoff_runtime.verdict import porting


def test_code_difference_counts_changed_lines_and_keeps_the_diff():
    base = "import torch\nmodel = Net()\nloss.backward()\n"
    leg = "import torch\nimport torch_xla\nmodel = Net().to(xla)\nloss.backward()\n"
    out = porting.code_difference(base, leg, ("p4d", "trn1"))
    assert out["lines_differ"] == 3  # one removed, two added
    assert "+import torch_xla" in out["diff"] and "-model = Net()" in out["diff"]
    assert porting.code_difference(base, base) == {"lines_differ": 0, "diff": None}
    assert porting.code_difference(None, None)["lines_differ"] == 0


def _cfg(backend, precision, env=None, **extra):
    return {"backend": backend, "precision": precision, "numerics_environment": env or {}, **extra}


def test_numerics_name_what_differs_between_a_neuron_and_a_cuda_leg():
    trn = porting.numerics(_cfg("neuron", "bf16", {"NEURON_CC_FLAGS": "--model-type=transformer -O1",
                                                   "NEURON_RT_STOCHASTIC_ROUNDING_EN": "1"}))
    gpu = porting.numerics(_cfg("cuda", "bf16"))
    assert trn["stochastic_rounding"] == "on" and gpu["stochastic_rounding"] == "n/a (not Neuron)"
    assert trn["compiler_flags"] == "--model-type=transformer -O1" and gpu["compiler_flags"] == "none (eager)"
    assert trn["autocast"] == gpu["autocast"] == "bf16 (forward pass)"
    assert porting.numerics(_cfg("neuron", "fp32", {"NEURON_RT_STOCHASTIC_ROUNDING_EN": "0"}))["stochastic_rounding"] \
        == "off"


def _figures(cold=None, warm=None, compile_s=None):
    split = None
    if cold is not None or warm is not None:
        split = {"cold_runs": int(cold is not None), "warm_runs": int(warm is not None),
                 "time_to_first_step_s_cold": cold, "time_to_first_step_s_warm": warm}
    return {"compile_time_s_mean": compile_s, "compile_cache": split, "runs": []}


@pytest.fixture
def section():
    config = {
        "legs": {"trn1": _cfg("neuron", "bf16", {"NEURON_CC_FLAGS": "-O1", "NEURON_RT_STOCHASTIC_ROUNDING_EN": "1"}),
                 "p4d": _cfg("cuda", "bf16")},
        "preflight": {"leg": "trn1", "verdict": "will recompile", "blockers": 1, "problems": [
            {"kind": "recompilation", "blocker": True, "cause": "input 0 changed shape [4, 31] -> [4, 32]",
             "fix": "pad to sequence_length"}]},
        "collective": {"trn1": {"ok": False, "reason": "all_reduce (sum over 2 ranks): element 0 is 4, expected 3"}},
    }
    figures = {"trn1": _figures(cold=40.0, warm=10.0, compile_s=30.0), "p4d": _figures()}
    return porting.section(config, figures, "p4d")


def test_section_per_leg_against_the_baseline(section):
    assert section["baseline"] == "p4d" and list(section["legs"]) == ["trn1"]
    trn = section["legs"]["trn1"]
    assert trn["code"]["lines_differ"] == 0 and "one training script ran on every leg" in section["code_note"]
    assert trn["compile"]["saved_s"] == pytest.approx(30.0) and trn["compile"]["saved_fraction"] == pytest.approx(0.75)
    assert trn["compile"]["compile_time_s"] == 30.0
    assert trn["preflight"]["verdict"] == "will recompile"
    assert trn["preflight"]["findings"][0]["fix"] == "pad to sequence_length"
    assert trn["numerics_differ"] == ["stochastic_rounding", "compiler_flags"]
    assert trn["collective"]["ok"] is False


def test_cold_only_leg_says_what_would_show_the_saving():
    out = porting.section({"legs": {"a": _cfg("neuron", "fp32"), "b": _cfg("cuda", "fp32")}},
                          {"a": _figures(cold=5.0), "b": _figures()}, "b")
    assert out["legs"]["a"]["compile"]["saved_s"] is None
    assert "only cold starts" in out["legs"]["a"]["compile"]["note"]


def test_report_renders_the_section(section):
    ev = {"bakeoff": "x", "verdict": "fail", "legs": {}, "checks": [], "porting": section}
    md = "\n".join(porting_section.section_markdown(ev))
    assert "## What porting cost" in md and "| lines of training code that differ | 0 |" in md
    assert "30 s (75% of a cold start)" in md
    assert "stochastic_rounding: on vs n/a (not Neuron)" in md
    assert "fix: pad to sequence_length" in md and "FAILED: all_reduce" in md
    page = porting_section.section_html(ev)
    assert "<h2>What porting cost</h2>" in page and "pad to sequence_length" in page
    assert porting_section.section_markdown({"legs": {}}) == [] and porting_section.section_html({}) == ""


def test_compiled_evaluation_config_carries_each_legs_numerics_environment():
    from bakeoff.pipelines.sagemaker import compile_pipeline
    from bakeoff.pipelines.spec.loader import load_spec
    from conftest import ROOT

    compiled = compile_pipeline(load_spec(ROOT / "examples" / "quickstart.yaml"))
    config = json.loads(next(a for a in compiled.assets if a.key.endswith("config.json")).body)
    trn = config["legs"]["trn1"]["numerics_environment"]
    assert trn["NEURON_RT_STOCHASTIC_ROUNDING_EN"] == "1" and "--auto-cast=none" in trn["NEURON_CC_FLAGS"]
    assert config["legs"]["p4d"]["numerics_environment"] == {}


def test_the_evaluate_step_receives_the_preflight_steps_findings():
    from bakeoff.pipelines.sagemaker import compile_pipeline
    from bakeoff.pipelines.sagemaker.validate import definition_problems
    from bakeoff.pipelines.spec.loader import load_spec
    from conftest import ROOT

    spec = load_spec(ROOT / "examples" / "quickstart.yaml", ["preflight.enabled=true"])
    definition = compile_pipeline(spec, role_arn="arn:aws:iam::123456789012:role/bakeoff-test", bucket="b").definition
    evaluate = next(s for s in definition["Steps"] if s["Name"] == "Evaluate")["Arguments"]
    record = next(i for i in evaluate["ProcessingInputs"] if i["InputName"] == "preflight")
    assert record["S3Input"]["S3Uri"] == {"Get": "Steps.Preflight.ModelArtifacts.S3ModelArtifacts"}
    args = evaluate["AppSpecification"]["ContainerArguments"]
    assert args[args.index("--records") + 1] == record["S3Input"]["LocalPath"].rsplit("/", 1)[0]
    assert definition_problems(definition) == []
    plain = compile_pipeline(load_spec(ROOT / "examples" / "quickstart.yaml"), bucket="b").definition
    evaluate = next(s for s in plain["Steps"] if s["Name"] == "Evaluate")["Arguments"]
    assert "--records" not in evaluate["AppSpecification"]["ContainerArguments"]


def test_records_are_read_from_the_preflight_steps_model_tar_gz(tmp_path):
    import io
    import tarfile

    where = tmp_path / "records" / "preflight"
    where.mkdir(parents=True)
    with tarfile.open(where / "model.tar.gz", "w:gz") as tar:
        for name, body in {"preflight.json": {"verdict": "will recompile", "blockers": 1, "problems": []},
                           "summary.json": {"leg": "trn1", "status": "completed"}}.items():
            raw = json.dumps(body).encode()
            info = tarfile.TarInfo(name)
            info.size = len(raw)
            tar.addfile(info, io.BytesIO(raw))
    found = porting.read_records(tmp_path / "records")
    assert found == {"preflight": {"verdict": "will recompile", "blockers": 1, "problems": [], "leg": "trn1"}}
    assert porting.read_records(tmp_path / "nothing") == {}
