"""The built-in Hugging Face causal LM (`entrypoint.builtin: hf-causal-lm`): the spec, the plan, the install of
transformers. Its model config and training arguments (which import torch and transformers):
tests/e2e/test_hf_config.py."""
from conftest import HF_TINY, tiny_spec, write_spec


def test_spec_selects_the_hf_trainer(tmp_path):
    from bakeoff.pipelines.plan.model import build_plan
    from bakeoff.pipelines.spec.loader import load_spec

    spec = load_spec(str(write_spec(tmp_path / "hf.yaml", tiny_spec(**HF_TINY))))
    plan = build_plan(spec)
    assert plan.bundle.script == "hf_causal_lm.py"
    assert "hf_causal_lm.py" in dict(plan.bundle.files)
    hps = plan.jobs[0].hyperparameters
    assert (hps["d_model"], hps["n_layers"], hps["n_heads"], hps["model_type"]) == (32, 1, 2, "llama")
    # The reference LM is untouched: same script as before.
    assert build_plan(load_spec(str(write_spec(tmp_path / "ref.yaml", tiny_spec())))).bundle.script == "train.py"


def test_without_transformers_a_run_is_one_line_of_bad_input(tmp_path, monkeypatch, capsys):
    from bakeoff.pipelines.cli.main import main
    from bakeoff.pipelines.plan import builtins

    real = builtins.importlib.util.find_spec
    monkeypatch.setattr(builtins.importlib.util, "find_spec",
                        lambda name, *a: None if name == "transformers" else real(name, *a))
    path = write_spec(tmp_path / "hf.yaml", tiny_spec(**HF_TINY))
    assert main(["run", str(path), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "transformers" in err and "bakeoff[hf]" in err
    assert not (tmp_path / "out").exists()  # refused before anything started


def _p4d_spec(**extra):
    spec = tiny_spec(**HF_TINY, **extra)
    assert [leg["backend"] for leg in spec["legs"]] == ["neuron", "cuda"]  # a trn1 leg and a p4d leg
    return spec


def test_every_job_of_a_script_that_imports_transformers_installs_it_where_the_image_lacks_it(tmp_path):
    """AWS's PyTorch 2.9 GPU image has no transformers (the Neuron one does): without this every p4d job crashed."""
    from bakeoff.pipelines.sagemaker.compiler import compile_pipeline
    from bakeoff.pipelines.spec.loader import load_spec

    steps = compile_pipeline(load_spec(str(write_spec(tmp_path / "hf.yaml", _p4d_spec())))).definition["Steps"]
    envs = {s["Name"]: s["Arguments"]["Environment"] for s in steps if s["Type"] == "Training"}
    assert envs and all(env["BAKEOFF_INSTALL_PACKAGES"] == "transformers" for env in envs.values())
    reference = compile_pipeline(load_spec(str(write_spec(tmp_path / "ref.yaml", tiny_spec())))).definition["Steps"]
    assert not any("BAKEOFF_INSTALL_PACKAGES" in s["Arguments"].get("Environment", {}) for s in reference)


def test_under_network_isolation_a_leg_that_cannot_install_transformers_is_refused_in_one_line(tmp_path, capsys):
    from bakeoff.pipelines.cli.main import main

    path = write_spec(tmp_path / "hf.yaml", _p4d_spec(security={"network_isolation": True}))
    assert main(["validate", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "leg 'p4d'" in err and "transformers==4.56.2" in err and "legs.1.image" in err
    # An image of the user's own is taken as given.
    spec = _p4d_spec(security={"network_isolation": True})
    spec["legs"][1]["image"] = "123456789012.dkr.ecr.us-east-1.amazonaws.com/mine:hf"
    assert main(["validate", str(write_spec(tmp_path / "own.yaml", spec))]) == 0


def test_in_the_specs_own_subnets_validate_says_the_install_needs_a_nat_or_wheels(tmp_path, capsys):
    """Private subnets without a NAT reach no package index, which validate cannot see: it says so, once, with the
    wheels to bundle; not without subnets."""
    from bakeoff.pipelines.cli.main import main

    security = {"subnets": ["subnet-0123456789abcdef0"], "security_group_ids": ["sg-0123456789abcdef0"]}
    path = write_spec(tmp_path / "hf.yaml", _p4d_spec(security=security))
    assert main(["validate", str(path)]) == 0
    out = capsys.readouterr()
    said = out.out + out.err
    assert said.count("without a NAT") == 1 and "legs p4d install transformers" in said
    assert "transformers==4.56.2" in said
    assert main(["validate", str(write_spec(tmp_path / "open.yaml", _p4d_spec()))]) == 0
    out = capsys.readouterr()
    assert "without a NAT" not in out.out + out.err


def test_a_job_skips_what_its_image_has_and_names_what_it_could_not_install(tmp_path):
    from bakeoff_runtime.process.package_install import ensure_packages

    assert ensure_packages(tmp_path, {"BAKEOFF_INSTALL_PACKAGES": "json"}) is None  # importable: nothing run
    (tmp_path / "wheels").mkdir()  # a bundle's wheels, without the package: pip --no-index cannot find it
    why = ensure_packages(tmp_path, {"BAKEOFF_INSTALL_PACKAGES": "bakeoff_no_such_package"})
    assert why.startswith("the script imports bakeoff_no_such_package, which this image lacks")
    assert "the code bundle's wheels" in why
