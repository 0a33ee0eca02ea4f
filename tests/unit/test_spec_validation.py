"""Every rejection the spec promises, by its message, with file and line."""
import json

import pytest
import yaml

from bakeoff.pipelines.errors import SpecError
from bakeoff.pipelines.spec.loader import load_spec
from conftest import tiny_spec, write_spec


def _error(tmp_path, data=None, text=None) -> SpecError:
    path = tmp_path / "spec.yaml"
    path.write_text(text if text is not None else yaml.safe_dump(data, sort_keys=False))
    with pytest.raises(SpecError) as info:
        load_spec(path)
    return info.value


def _leg(spec, i, **kw):
    spec["legs"][i].update(kw)
    return spec


def test_valid_tiny_spec_loads(tmp_path):
    spec = load_spec(write_spec(tmp_path / "ok.yaml", tiny_spec()))
    assert [leg.name for leg in spec.legs] == ["trn1", "p4d"]
    assert spec.seed_list == [0, 1]
    assert spec.baseline == "p4d"


def test_unknown_key_names_line_and_field(tmp_path):
    text = "name: x\nlegs:\n  - name: a\n    instance_type: ml.trn1.2xlarge\n    colour: red\n" \
           "  - name: b\n    instance_type: ml.p4d.24xlarge\n"
    err = _error(tmp_path, text=text)
    assert err.line == 5
    assert err.field == "legs[0].colour"
    assert "unknown key" in err.message
    assert str(err).startswith(f"{tmp_path / 'spec.yaml'}:5: legs[0].colour: unknown key")


def test_unknown_instance_suggests_nearest(tmp_path):
    err = _error(tmp_path, _leg(tiny_spec(), 0, instance_type="ml.trn1.33xlarge"))
    assert "unknown instance type 'ml.trn1.33xlarge'" in err.message
    assert "did you mean 'ml.trn1.32xlarge'" in err.message
    assert err.field == "legs[0].instance_type"


@pytest.mark.parametrize("instance,backend,expect", [
    ("ml.p4d.24xlarge", "neuron", "backend 'neuron' cannot run on ml.p4d.24xlarge"),
    ("ml.trn1.32xlarge", "cuda", "backend 'cuda' cannot run on ml.trn1.32xlarge"),
    ("ml.trn1.32xlarge", "torchneuron", "TorchNeuron is trn2/trn3 only"),
])
def test_backend_that_cannot_run_on_instance(tmp_path, instance, backend, expect):
    err = _error(tmp_path, _leg(tiny_spec(), 0, instance_type=instance, backend=backend))
    assert expect in err.message
    assert err.field == "legs[0].backend"


def test_torchneuron_is_accepted_on_trn2_with_an_explicit_image(tmp_path):
    image = "123456789012.dkr.ecr.us-east-1.amazonaws.com/torchneuron-training:beta"
    data = _leg(tiny_spec(), 0, instance_type="ml.trn2.48xlarge", backend="torchneuron", image=image)
    data["training"]["global_batch_size"] = 64  # trn2.48xlarge: 64 NeuronCores
    spec = load_spec(write_spec(tmp_path / "s.yaml", data))
    assert spec.legs[0].backend == "torchneuron" and spec.legs[0].image == image


def test_torchneuron_without_an_image_is_refused(tmp_path):
    data = _leg(tiny_spec(), 0, instance_type="ml.trn2.48xlarge", backend="torchneuron")
    data["training"]["global_batch_size"] = 64
    err = _error(tmp_path, data)
    assert err.field == "legs[0].image" and "no published training image" in err.message


def test_fewer_than_two_legs(tmp_path):
    data = tiny_spec()
    data["legs"] = data["legs"][:1]
    err = _error(tmp_path, data)
    assert "at least two legs, got 1" in err.message
    assert err.field == "legs"


def test_duplicate_leg_names(tmp_path):
    err = _error(tmp_path, _leg(tiny_spec(), 1, name="trn1"))
    assert "duplicate leg name 'trn1'" in err.message
    assert err.field == "legs[1].name"


def test_leg_name_that_step_names_cannot_carry(tmp_path):
    err = _error(tmp_path, _leg(tiny_spec(), 0, name="x" * 60))
    assert "does not match ^[A-Za-z0-9-_]{1,64}$" in err.message
    assert err.field == "legs[0].name"
    err = _error(tmp_path, _leg(tiny_spec(), 0, name="trn 1"))
    assert "must be letters, digits or '-'" in err.message


def test_malformed_s3_uri(tmp_path):
    err = _error(tmp_path, tiny_spec(data={"channels": {"train": "s3://Bad_Bucket/x"}}))
    assert "malformed S3 URI 's3://Bad_Bucket/x'" in err.message
    assert err.field == "data.channels.train"


@pytest.mark.parametrize("margin", [0, -0.1])
def test_non_positive_margin(tmp_path, margin):
    err = _error(tmp_path, tiny_spec(parity={"margin": margin}))
    assert "margin must be positive" in err.message
    assert err.field == "parity.margin"


def test_global_batch_not_divisible_by_devices(tmp_path):
    data = tiny_spec()
    data["training"]["global_batch_size"] = 12  # p4d has 8 GPUs
    err = _error(tmp_path, data)
    assert "not divisible by the 8 devices of leg 'p4d'" in err.message


def test_duplicate_yaml_key(tmp_path):
    err = _error(tmp_path, text="name: a\nname: b\nlegs: []\n")
    assert err.line == 2 and "duplicate key 'name'" in err.message


def test_invalid_yaml(tmp_path):
    err = _error(tmp_path, text="name: [unclosed\n")
    assert "not valid YAML" in err.message


def test_cli_bad_input_is_one_line_exit_2(tmp_path, cli):
    path = write_spec(tmp_path / "bad.yaml", _leg(tiny_spec(), 0, instance_type="ml.trn9.big"))
    proc = cli("validate", path)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    assert lines[0].startswith(f"bakeoff: error: {path}:") and "legs[0].instance_type" in lines[0]


def test_cli_missing_file_exit_2(tmp_path, cli):
    proc = cli("run", tmp_path / "nope.yaml", "--out", tmp_path / "o")
    assert proc.returncode == 2 and "no such file" in proc.stderr


def test_set_override_is_validated(tmp_path):
    path = write_spec(tmp_path / "s.yaml", tiny_spec())
    spec = load_spec(path, ["seeds=4", "legs.0.precision=bf16"])
    assert spec.seed_list == [0, 1, 2, 3] and spec.legs[0].precision == "bf16"
    with pytest.raises(SpecError, match="margin must be positive"):
        load_spec(path, ["parity.margin=0"])


def test_python_api_builds_the_same_spec(tmp_path):
    from bakeoff import BakeoffSpec, Leg, Parity

    data = tiny_spec()
    from_yaml = load_spec(write_spec(tmp_path / "s.yaml", data))
    in_code = BakeoffSpec(name="tiny", model=data["model"], training=data["training"],
                          legs=[Leg(**leg) for leg in data["legs"]], seeds=2,
                          parity=Parity(metric="val_loss", margin=0.2, baseline="p4d"))
    assert in_code.canonical() == from_yaml.canonical()


def test_schema_has_a_description_on_every_field():
    from bakeoff.pipelines.spec.model import BakeoffSpec

    schema = BakeoffSpec.model_json_schema()
    missing = []
    for model_name, model in {"BakeoffSpec": schema, **schema.get("$defs", {})}.items():
        for field, prop in model.get("properties", {}).items():
            if not prop.get("description"):
                missing.append(f"{model_name}.{field}")
    assert not missing, missing


def test_cli_schema_is_json(tmp_path, cli):
    proc = cli("schema")
    assert proc.returncode == 0
    schema = json.loads(proc.stdout)
    assert "legs" in schema["properties"] and schema["additionalProperties"] is False


def test_fairness_derivation_per_leg(tmp_path):
    from bakeoff.pipelines.plan.model import build_plan, derive_batching

    spec = load_spec(write_spec(tmp_path / "s.yaml", tiny_spec(training={**tiny_spec()["training"],
                                                                        "max_per_device_batch_size": 1})))
    plan = build_plan(spec)
    # trn1.2xlarge: 2 NeuronCores -> 8 per core -> 8 micro-steps of 1; p4d: 8 GPUs -> 2 each -> 2 x 1.
    assert plan.leg("trn1").batching.as_dict() == {"global_batch_size": 16, "world_size": 2,
                                                   "per_device_batch_size": 1, "gradient_accumulation_steps": 8}
    assert plan.leg("p4d").batching.gradient_accumulation_steps == 2
    # Locally each leg is one process: the whole global batch, in micro-batches of at most 1.
    assert plan.leg("trn1").local_batching.as_dict() == {"global_batch_size": 16, "world_size": 1,
                                                         "per_device_batch_size": 1, "gradient_accumulation_steps": 16}
    trn, p4d = plan.jobs_of("trn1")[0], plan.jobs_of("p4d")[0]
    assert trn.hyperparameters["lr"] == p4d.hyperparameters["lr"]
    assert trn.hyperparameters["gradient_accumulation_steps"] == 8
    b = derive_batching(48, 8, 4)
    assert (b.per_device_batch_size, b.gradient_accumulation_steps) == (3, 2)
