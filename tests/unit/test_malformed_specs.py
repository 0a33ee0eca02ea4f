"""A corpus of malformed specs and arguments: every one ends in exit code 2 and one line
saying where (file:line or the --set argument), which field and what to do; no traceback,
no hang, bounded memory."""
import json
import os

import pytest

from bakeoff.pipelines.cli.main import main

BASE = """name: t
legs:
  - name: trn1
    instance_type: ml.trn1.2xlarge
  - name: g5
    instance_type: ml.g5.xlarge
"""


def _with(extra: str) -> str:
    return BASE + extra


# (id, spec text or bytes, extra CLI arguments, substrings the one line must hold)
CASES = [
    # --- the file itself ---
    ("not-utf8", b"name: t\nlegs: \xff\xfe\n", [], ["spec.yaml:2", "not UTF-8 text", "save the spec as UTF-8"]),
    ("latin1", "name: café\n".encode("latin-1"), [], ["spec.yaml:1", "not UTF-8"]),
    ("nul-bytes", b"name: t\x00\n", [], ["NUL bytes"]),
    ("empty", b"", [], ["spec.yaml", "the spec is empty"]),
    ("only-comment", b"# nothing\n", [], ["the spec is empty"]),
    ("top-level-list", b"- a\n- b\n", [], ["spec.yaml:1", "must be a mapping"]),
    ("top-level-scalar", b"hello\n", [], ["must be a mapping"]),
    ("too-big", b"name: t\n" + b"# " + b"x" * (1 << 20) + b"\n", [], ["is not a bake-off spec"]),
    # --- YAML syntax ---
    ("unclosed-flow", "name: t\nlegs: [\n", [], ["spec.yaml:", "not valid YAML"]),
    ("bad-indent", "name: t\n legs:\n- a\n", [], ["not valid YAML"]),
    ("tab-indent", "name: t\nlegs:\n\t- a\n", [], ["not valid YAML"]),
    ("duplicate-key", _with("name: u\n"), [], ["spec.yaml:7", "duplicate key 'name' (first at line 1)"]),
    ("duplicate-nested", _with("training:\n  max_steps: 5\n  max_steps: 6\n"), [],
     ["spec.yaml:9", "training.max_steps", "duplicate key"]),
    # --- tags, aliases, nesting ---
    ("python-tag", _with("description: !!python/object/apply:os.system ['echo pwned']\n"), [],
     ["spec.yaml:7", "description", "YAML tag", "is not allowed"]),
    ("python-name", _with("description: !!python/name:os.system\n"), [], ["is not allowed"]),
    ("custom-tag", _with("description: !secret value\n"), [], ["YAML tag '!secret' is not allowed"]),
    ("binary-tag", _with("description: !!binary aGVsbG8=\n"), [], ["'!!binary' is not allowed"]),
    ("recursive-alias", _with("hyperparameters: &h\n  self: *h\n"), [], ["nesting deeper than", "recursive alias"]),
    ("billion-laughs", "name: t\na: &a [x,x,x,x,x,x,x,x,x,x]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a,*a]\n"
                       "c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b,*b]\nd: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c,*c]\n"
                       "e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d,*d]\nf: [*e,*e,*e,*e,*e,*e,*e,*e,*e,*e]\n", [],
     ["expands to more than 20,000 values"]),
    ("deep-nesting", "name: t\nx: " + "[" * 5000 + "]" * 5000 + "\n", [], ["nesting deeper than"]),
    ("non-scalar-key", "? [a, b]\n: c\nname: t\n", [], ["a key must be a plain name"]),
    # --- unknown and missing keys ---
    ("leg-for-legs", "name: t\nleg:\n  - {name: a, instance_type: ml.g5.xlarge}\n", [],
     ["spec.yaml:2", "unknown key 'leg'; did you mean 'legs'?"]),
    ("typo-training", _with("trainig:\n  max_steps: 5\n"), [], ["spec.yaml:7", "did you mean 'training'?"]),
    ("typo-nested", _with("training:\n  max_step: 5\n"), [], ["spec.yaml:8", "training.max_step",
                                                               "did you mean 'max_steps'?"]),
    ("typo-leg-field", "name: t\nlegs:\n  - {name: a, instance_typ: ml.g5.xlarge}\n  - {name: b, "
                       "instance_type: ml.g5.xlarge}\n", [], ["legs[0].instance_typ", "did you mean 'instance_type'?"]),
    ("missing-name", "legs:\n  - {name: a, instance_type: ml.g5.xlarge}\n  - {name: b, instance_type: "
                     "ml.m5.xlarge}\n", [], ["name: required field is missing"]),
    ("missing-legs", "name: t\n", [], ["legs: required field is missing"]),
    # --- numbers and booleans ---
    ("seeds-true", _with("seeds: true\n"), [], ["spec.yaml:7", "seeds", "not true/false"]),
    ("seeds-string", _with("seeds: three\n"), [], ["seeds"]),
    ("seeds-zero", _with("seeds: 0\n"), [], ["seeds must be between 1 and 100"]),
    ("seeds-101", _with("seeds: 101\n"), [], ["between 1 and 100"]),
    ("seeds-empty", _with("seeds: []\n"), [], ["seeds list is empty"]),
    ("seeds-duplicates", _with("seeds: [1, 1]\n"), [], ["duplicates"]),
    ("seeds-negative", _with("seeds: [-1, 2]\n"), [], ["non-negative"]),
    ("max-steps-huge", _with("training:\n  max_steps: 1e30\n"), [], ["training.max_steps", "100,000,000"]),
    ("max-steps-fraction", _with("training:\n  max_steps: 1.5\n"), [], ["training.max_steps"]),
    ("max-steps-zero", _with("training:\n  max_steps: 0\n"), [], ["training.max_steps"]),
    ("max-steps-bool", _with("training:\n  max_steps: yes\n"), [], ["training.max_steps", "not true/false"]),
    ("margin-inf", _with("parity:\n  margin: .inf\n"), [], ["spec.yaml:8", "parity.margin", "finite number"]),
    ("margin-nan", _with("parity:\n  margin: .nan\n"), [], ["parity.margin", "finite number"]),
    ("margin-negative", _with("parity:\n  margin: -0.1\n"), [], ["margin must be positive"]),
    ("alpha-big", _with("parity:\n  alpha: 0.7\n"), [], ["parity.alpha"]),
    ("lr-inf", _with("training:\n  optimizer:\n    lr: .inf\n"), [], ["training.optimizer.lr", "finite"]),
    ("runtime-huge", _with("  - {name: c, instance_type: ml.m5.xlarge, max_runtime_s: 99999999999}\n"), [],
     ["legs[2].max_runtime_s", "2419200"]),
    ("runtime-zero", "name: t\nlegs:\n  - {name: a, instance_type: ml.g5.xlarge, max_runtime_s: 0}\n"
                     "  - {name: b, instance_type: ml.m5.xlarge}\n", [], ["legs[0].max_runtime_s"]),
    ("instance-count-bool", "name: t\nlegs:\n  - {name: a, instance_type: ml.g5.xlarge, instance_count: true}\n"
                            "  - {name: b, instance_type: ml.m5.xlarge}\n", [], ["instance_count", "true/false"]),
    ("batch-zero", _with("training:\n  global_batch_size: 0\n"), [], ["training.global_batch_size"]),
    ("batch-indivisible", _with("training:\n  global_batch_size: 3\n"), [], ["not divisible by the 2 devices"]),
    ("price-inf", "name: t\nlegs:\n  - {name: a, instance_type: ml.g5.xlarge, price_per_hour: .inf}\n"
                  "  - {name: b, instance_type: ml.m5.xlarge}\n", [], ["price_per_hour", "finite"]),
    # --- values ---
    ("region-mars", _with("storage:\n  region: mars-central-9\n"), [], ["spec.yaml:8", "storage.region",
                                                                        "not an AWS region where SageMaker runs"]),
    ("mlflow-bad-arn", _with("mlflow:\n  tracking_uri: arn:aws:sagemaker:us-east-1:12:mlflow/x\n"), [],
     ["mlflow.tracking_uri", "not a SageMaker MLflow tracking server ARN"]),
    ("mlflow-china-arn", _with("mlflow:\n  tracking_uri: arn:aws-cn:sagemaker:cn-north-1:123456789012:"
                               "mlflow-tracking-server/x\n"), [], ["aws-us-gov partitions"]),
    ("mlflow-no-scheme", _with("mlflow:\n  tracking_uri: localhost:5000\n"), [], ["not an MLflow tracking URI"]),
    ("bucket-uri", _with("storage:\n  bucket: s3://my-bucket\n"), [], ["storage.bucket", "give the name"]),
    ("kms-bad", _with("security:\n  output_kms_key: 'my key'\n"), [], ["security.output_kms_key", "not a KMS key"]),
    ("subnet-without-sg", _with("security:\n  subnets: [subnet-0123456789abcdef0]\n"), [],
     ["security.security_group_ids", "needs both"]),
    ("subnet-bad", _with("security:\n  subnets: [net-1]\n  security_group_ids: [sg-01234567]\n"), [],
     ["not a subnet id"]),
    ("instance-unknown", "name: t\nlegs:\n  - {name: a, instance_type: ml.trn1.32xlarg}\n  - {name: b, "
                         "instance_type: ml.m5.xlarge}\n", [], ["spec.yaml:3", "did you mean 'ml.trn1.32xlarge'?"]),
    ("backend-mismatch", "name: t\nlegs:\n  - {name: a, instance_type: ml.p4d.24xlarge, backend: neuron}\n"
                         "  - {name: b, instance_type: ml.m5.xlarge}\n", [], ["legs[0].backend", "cannot run on"]),
    ("no-efa-multinode", "name: t\nlegs:\n  - {name: a, instance_type: ml.trn1.2xlarge, instance_count: 2}\n"
                         "  - {name: b, instance_type: ml.m5.xlarge}\n", [], ["legs[0].instance_count", "EFA"]),
    ("torchneuron-no-image", "name: t\ntraining: {global_batch_size: 64}\nlegs:\n  - {name: a, instance_type: "
                             "ml.trn2.48xlarge, backend: torchneuron}\n  - {name: b, instance_type: ml.m5.xlarge}\n",
     [], ["legs[0].image", "no published training image"]),
    ("image-other-region", "name: t\nlegs:\n  - {name: a, instance_type: ml.g5.xlarge, image: "
                           "123456789012.dkr.ecr.eu-west-1.amazonaws.com/x:1}\n  - {name: b, instance_type: "
                           "ml.m5.xlarge}\n", [], ["legs[0].image", "only from its own region"]),
    ("baseline-unknown", _with("parity:\n  baseline: p5\n"), [], ["parity.baseline", "is not a leg"]),
    ("one-leg", "name: t\nlegs:\n  - {name: a, instance_type: ml.g5.xlarge}\n", [], ["at least two legs"]),
    ("duplicate-leg", "name: t\nlegs:\n  - {name: a, instance_type: ml.g5.xlarge}\n  - {name: a, "
                      "instance_type: ml.m5.xlarge}\n", [], ["legs[1].name", "duplicate leg name"]),
    ("name-spaces", "name: my bakeoff\nlegs:\n  - {name: a, instance_type: ml.g5.xlarge}\n  - {name: b, "
                    "instance_type: ml.m5.xlarge}\n", [], ["spec.yaml:1", "name"]),
    ("leg-name-long", "name: t\nlegs:\n  - {name: " + "a" * 60 + ", instance_type: ml.g5.xlarge}\n  - {name: b, "
                      "instance_type: ml.m5.xlarge}\n", [], ["does not match", "shorten the leg name"]),
    ("test-unknown", _with("parity:\n  test: superiority\n"), [], ["parity.test", "superiority"]),
    # --- --set arguments ---
    ("set-no-equals", BASE, ["--set", "seeds"], ["--set seeds", "expected KEY=VALUE"]),
    ("set-list-name", BASE, ["--set", "legs.x=1"], ["--set legs.x=1", "no leg named 'x'"]),
    ("set-list-range", BASE, ["--set", "legs.9=1"], ["--set legs.9=1", "there is no legs[9]"]),
    ("set-into-scalar", BASE, ["--set", "name.x=1"], ["--set name.x=1", "is a value", "not a group"]),
    ("set-bad-yaml", BASE, ["--set", "seeds=[1,"], ["--set seeds=[1,", "not valid YAML", "quote it"]),
    ("set-empty-key", BASE, ["--set", "=5"], ["--set =5", "not a field path"]),
    ("set-bad-value", BASE, ["--set", "training.max_steps=0"], ["--set training.max_steps=0", "training.max_steps"]),
    ("set-unknown-leaf", BASE, ["--set", "legs[1].instnce_type=ml.m5.xlarge"],
     ["--set legs[1].instnce_type=ml.m5.xlarge", "did you mean 'instance_type'?"]),
    ("set-by-name-bad", BASE, ["--set", "legs.g5.precision=fp16"], ["--set legs.g5.precision=fp16",
                                                                    "legs[1].precision"]),
]


def _run(tmp_path, capsys, text, extra):
    spec = tmp_path / "spec.yaml"
    spec.write_bytes(text if isinstance(text, bytes) else text.encode())
    code = main(["validate", str(spec), *extra])
    err = capsys.readouterr().err
    return code, err


@pytest.mark.parametrize("case,text,extra,expect", CASES, ids=[c[0] for c in CASES])
def test_bad_input_is_one_located_line_and_exit_2(tmp_path, capsys, case, text, extra, expect):
    code, err = _run(tmp_path, capsys, text, extra)
    lines = err.strip().splitlines()
    assert code == 2, err
    assert len(lines) == 1 and lines[0].startswith("bakeoff: error: "), err
    assert "Traceback" not in err
    for piece in expect:
        assert piece in lines[0], (piece, lines[0])


def test_the_corpus_covers_every_class():
    assert len(CASES) >= 60


@pytest.mark.parametrize("key", ["legs[1].precision", "legs.1.precision", "legs.g5.precision"])
def test_a_leg_is_selected_by_index_or_name(tmp_path, capsys, key):
    spec = tmp_path / "spec.yaml"
    spec.write_text(BASE)
    from bakeoff.pipelines.spec.loader import load_spec

    assert load_spec(spec, [f"{key}=fp32"]).legs[1].precision == "fp32"


def _tree(tmp_path):
    (tmp_path / "proj" / "code").mkdir(parents=True)
    (tmp_path / "proj" / "code" / "train.py").write_text("print('hi')\n")
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "train.py").write_text("print('hi')\n")
    return tmp_path / "proj"


@pytest.mark.parametrize("source_dir", ["../elsewhere", "/etc", "link"])
def test_source_dir_stays_inside_the_specs_folder(tmp_path, capsys, source_dir):
    proj = _tree(tmp_path)
    os.symlink(tmp_path / "elsewhere", proj / "link")
    spec = proj / "spec.yaml"
    spec.write_text(BASE + f"entrypoint: {{source_dir: '{source_dir}', script: train.py}}\n")
    code = main(["validate", str(spec)])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1
    assert "spec.yaml:7" in err and "entrypoint.source_dir" in err and "outside the spec's folder" in err
    spec.write_text(BASE + f"entrypoint: {{source_dir: '{source_dir}', script: train.py, "
                           "allow_outside_spec_dir: true}\n")
    if source_dir != "/etc":
        assert main(["validate", str(spec)]) == 0  # the documented opt-out (a monorepo)


def test_a_symlink_inside_the_source_dir_may_not_leave_it(tmp_path, capsys):
    proj = _tree(tmp_path)
    os.symlink(tmp_path / "elsewhere" / "train.py", proj / "code" / "other.py")
    spec = proj / "spec.yaml"
    spec.write_text(BASE + "entrypoint: {source_dir: code, script: train.py}\n")
    assert main(["validate", str(spec)]) == 2
    assert "other.py in the source dir links to" in capsys.readouterr().err


def test_the_bundle_never_packs_secrets_and_has_a_size_limit(tmp_path, capsys):
    from bakeoff.pipelines.plan.model import build_plan
    from bakeoff.pipelines.spec.loader import load_spec

    proj = _tree(tmp_path)
    for name in (".env", "id_rsa", "server.pem", "credentials"):
        (proj / "code" / name).write_text("secret\n")
    (proj / "code" / ".git").mkdir()
    (proj / "code" / ".git" / "config").write_text("[core]\n")
    spec = proj / "spec.yaml"
    spec.write_text(BASE + "entrypoint: {source_dir: code, script: train.py}\n")
    names = [n for n, _ in build_plan(load_spec(spec)).bundle.files]
    assert "train.py" in names
    assert not [n for n in names if n.split("/")[-1] in (".env", "id_rsa", "server.pem", "credentials", "config")]
    (proj / "code" / "weights.bin").write_bytes(b"\0" * 2_000_000)
    spec.write_text(BASE + "entrypoint: {source_dir: code, script: train.py, max_bundle_mb: 1}\n")
    assert main(["validate", str(spec)]) == 2
    err = capsys.readouterr().err
    assert "more than entrypoint.max_bundle_mb" in err and "weights.bin" in err


def test_validate_finds_what_synth_would_refuse(tmp_path, capsys):
    spec = tmp_path / "spec.yaml"
    spec.write_text(BASE + "entrypoint: {source_dir: code, script: train.py}\n")
    assert main(["validate", str(spec)]) == 2
    assert "source_dir" in capsys.readouterr().err
    (tmp_path / "code").mkdir()
    spec.write_text(BASE + "entrypoint: {source_dir: code, script: nope.py}\n")
    assert main(["validate", str(spec)]) == 2
    assert "script 'nope.py' not found" in capsys.readouterr().err
    # A value SageMaker caps (an Environment value holds at most 512 characters).
    spec.write_text(BASE.replace("instance_type: ml.g5.xlarge", "instance_type: ml.g5.xlarge\n    environment: {X: "
                                 + "y" * 600 + "}"))
    assert main(["validate", str(spec)]) == 2
    err = capsys.readouterr().err
    assert "SageMaker would refuse the pipeline" in err and "legs.1.environment" in err and "spec.yaml:" in err


def test_a_hundred_seeds_can_be_synthesized(tmp_path):
    from bakeoff.pipelines.sagemaker import compile_pipeline
    from bakeoff.pipelines.sagemaker.validate import check_definition
    from bakeoff.pipelines.spec.loader import load_spec

    spec = tmp_path / "spec.yaml"
    spec.write_text(BASE + "seeds: 100\n")
    compiled = compile_pipeline(load_spec(spec))
    check_definition(compiled.definition)
    evaluate = next(s for s in compiled.definition["Steps"] if s["Name"] == "Evaluate")
    args = evaluate["Arguments"]["AppSpecification"]["ContainerArguments"]
    assert "--execution-arn" in args and len(args) <= 100


CREDENTIALS = (".git-credentials", ".pgpass", ".envrc", ".bash_history", ".zsh_history", ".docker/config.json",
               ".kube/config", "terraform.tfstate", "application_default_credentials.json", ".huggingface/token",
               ".cache/huggingface/token", ".vault-token", ".s3cfg", ".boto", ".databrickscfg", "wandb/settings")


def test_credential_files_are_never_packed_and_what_was_left_out_is_said_once(tmp_path, capsys):
    from bakeoff.pipelines.plan.model import build_plan
    from bakeoff.pipelines.spec.loader import load_spec

    proj = _tree(tmp_path)
    code = proj / "code"
    for rel in CREDENTIALS:
        (code / rel).parent.mkdir(parents=True, exist_ok=True)
        (code / rel).write_text("secret\n")
    # A service-account key is a secret whatever its file is called.
    (code / "gcp-ci.json").write_text(json.dumps({"type": "service_account", "private_key": "-----BEGIN"}))
    (code / "tokenizer.json").write_text("{}")  # named like nothing secret: packed, silently
    (code / "db_password.txt").write_text("hunter2\n")  # packed, but said
    spec = proj / "spec.yaml"
    spec.write_text(BASE + "entrypoint: {source_dir: code, script: train.py}\n")
    bundle = build_plan(load_spec(spec)).bundle
    names = {n for n, _ in bundle.files}
    assert not names & {*CREDENTIALS, "gcp-ci.json"}, names & {*CREDENTIALS, "gcp-ci.json"}
    assert {"train.py", "tokenizer.json", "db_password.txt"} <= names
    assert main(["validate", str(spec)]) == 0
    out = capsys.readouterr().out  # validate's warnings
    left = next(line for line in out.splitlines() if "left out of the code bundle" in line)
    assert ".bash_history" in left and "and 9 more" in left  # 17 left out, named up to 8 on one line
    assert set(bundle.left_out) == {*CREDENTIALS, "gcp-ci.json"}  # every one of them, in the API
    assert "db_password.txt" in next(line for line in out.splitlines() if "named like a secret" in line)


def test_ignore_files_are_honoured_and_a_run_directory_inside_the_source_dir_is_never_packed(tmp_path):
    from bakeoff.pipelines.plan.model import build_plan
    from bakeoff.pipelines.spec.loader import load_spec

    proj = _tree(tmp_path)
    code = proj / "code"
    (code / ".gitignore").write_text("# build output\n*.log\ncache/\n!keep.log\n/top-only.txt\n")
    (code / ".bakeoffignore").write_text("notes/**\n")
    for rel in ("run.log", "keep.log", "cache/x.bin", "sub/cache/y.bin", "top-only.txt", "sub/top-only.txt",
                "notes/a/b.md", "src/model.py"):
        (code / rel).parent.mkdir(parents=True, exist_ok=True)
        (code / rel).write_text("x\n")
    (code / "runs" / "first").mkdir(parents=True)  # `bakeoff run --out code/runs/first`: a run directory
    (code / "runs" / "first" / ".bakeoff.lock").write_text("")
    (code / "runs" / "first" / "evaluation.json").write_text("{}")
    spec = proj / "spec.yaml"
    spec.write_text(BASE + "entrypoint: {source_dir: code, script: train.py}\n")
    bundle = build_plan(load_spec(spec)).bundle
    names = {n for n, _ in bundle.files if not n.startswith("bakeoff_runtime/")}
    assert {"keep.log", "sub/top-only.txt", "src/model.py", "train.py"} <= names
    assert not names & {"run.log", "cache/x.bin", "sub/cache/y.bin", "top-only.txt", "notes/a/b.md",
                        "runs/first/evaluation.json"}
    assert "runs/first/ (a bakeoff run directory)" in bundle.notes()[0]
    # A second run inside it changes nothing: the bundle (and so every job's cache key) is the same.
    (code / "runs" / "first" / "jobs").mkdir()
    (code / "runs" / "first" / "jobs" / "big.bin").write_bytes(b"\0" * 1000)
    assert build_plan(load_spec(spec)).bundle.sha256 == bundle.sha256


def test_a_seed_list_has_the_counts_cap_and_a_huge_bad_value_is_not_echoed_whole(tmp_path, capsys):
    spec = tmp_path / "spec.yaml"
    spec.write_text(BASE + f"seeds: {list(range(5000))}\n")
    assert main(["validate", str(spec)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "seeds lists 5,000 seeds; at most 100" in err and len(err) < 200
    spec.write_text(BASE + "seeds: " + "x" * 10_000 + "\n")
    assert main(["validate", str(spec)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "(10,002 characters)" in err and len(err) < 300
