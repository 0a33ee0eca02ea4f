"""Secrets by what they are, not only by what they are called: the token formats of
bakeoff.pipelines.spec.fields.SECRET_RULES (pipelines/plan/secret_scan.py), applied to a leg's `environment:`
values (refused, one line) and to every text file a code bundle packs (left out, said once), each
never echoed. Every format has a hostile case and a benign one that looks like it. The fake tokens,
keys and passwords are assembled at run time, so this file holds none whole (the scanner passes it)."""
import pytest
import yaml

from bakeoff.pipelines.plan.secret_scan import HEAD_BYTES, describe, is_binary, scan_head, scan_text
from conftest import ROOT, write_spec

QUICKSTART = ROOT / "examples" / "quickstart.yaml"
A = "a1B2c3D4e5F6g7H8i9J0"  # 20 mixed letters and digits: the random body tokens have
UPPER = "ABCDEFGHJKLMNPQRSTUV"
JWT_PARTS = ("eyJhbGciOiJIUzI1NiJ9", "eyJzdWIiOiIxMjM0NTY3ODkwIn0")  # {"alg":"HS256"} and {"sub":"1234567890"}
JWT = ".".join((*JWT_PARTS, A))
PW = "hun" + "ter2pw"  # a password
PEM = "-----BEGIN {}PRIVATE " + "KEY-----"

# (kind, hostile text, benign text that resembles it)
FORMATS = [
    ("an AWS access key id", "aws_access_key_id = AKIA" + UPPER[:12] + "2345",
     "aws_access_key_id = AKIAIOSFODNN7EXAMPLE  # the placeholder AWS's documentation uses"),
    ("an AWS access key id", "export KEY=ASIA" + UPPER[4:16] + "7Z2Q", "TODAYINASIAASACKOFRICEFELLOVER"),
    ("an AWS secret access key", "aws_secret_access_key = " + (A * 2)[:40],
     "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"),
    ("a GitHub token", "token: ghp_" + (A * 2)[:36], "the ghp_ prefix marks a personal access token"),
    ("a GitHub token", "gho_" + (A * 2)[:36], "ghp_" + "x" * 36),
    ("a GitHub token", "GH=ghs_" + (A * 2)[:36], "ghs_short"),
    ("a GitHub token", "github_pat_" + (A * 5)[:82], "see https://github.com/settings/tokens for a github_pat_"),
    ("a GitLab token", "glpat-" + A, "glpat-XXXXXXXXXXXXXXXXXXXX"),
    ("a Slack token", "SLACK=xoxb-" + "1234567890-1234567890-" + A, "set xoxb-your-bot-token in the app settings"),
    ("a Slack token", "xoxp-" + "123456789012-123456789012-123456789012-" + A + "abcd", "xoxp-1234"),
    ("a Slack webhook URL", "https://hooks.slack.com/services/T000/B000/" + A + A,
     "post to https://hooks.slack.com/services/... (the webhook URL)"),
    ("a Hugging Face token", "HfApi(token='hf_" + (A + UPPER)[:34] + "')",
     "from huggingface_hub import hf_hub_download; hf_token = os.environ['HF_TOKEN']"),
    ("an OpenAI API key", "sk-proj-" + A + "T3BlbkFJ" + A, "sk-learn is not a key"),
    ("an Anthropic API key", "sk-ant-api03-" + (A * 5)[:93] + "AA", "sk-ant-api03-..."),
    ("a PyPI upload token", "password = pypi-AgEIcHlwaS5vcmc" + (A * 4)[:60], "pypi-package-name"),
    ("an npm token", "//registry.npmjs.org/:_authToken=npm_" + (A * 2)[:36], "npm_config_cache=/tmp"),
    ("a Stripe key", "stripe.api_key = 'sk_live_" + A + "'", "task_live_" + A),
    ("a Google API key", "key=AIza" + (A * 2)[:35], "AIzaXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX"),
    ("an Azure storage account key", "AccountName=x;AccountKey=" + (A * 3)[:44] + "==",
     "AccountKey=<your key>"),
    ("a JSON Web Token", "Authorization: Bearer " + JWT,
     "tokens start with eyJ (base64 of '{\"')"),
    ("a JSON Web Token", "jwt = '" + ".".join((*JWT_PARTS, "")) + "'",  # an unsigned one (alg none)
     "a.b.c is a dotted name, eyJ.eyJ. is not a token"),
    ("a bearer token", "curl -H 'Authorization: Bearer " + A + "xyz'",
     "headers = {'Authorization': f'Bearer {token}'}  # Bearer YOUR_ACCESS_TOKEN_HERE"),
    ("a private key", PEM.format("RSA ") + "\nMIIEpAIBAAKCAQEA...", "-----BEGIN PUBLIC KEY-----\nMII"),
    ("a private key", PEM.format("OPENSSH "), "-----BEGIN CERTIFICATE-----"),
    ("a private key", "PuTTY-User-" + "Key-File-3: ssh-ed25519", "PuTTY is an SSH client"),
    ("a URL with a password", f"DATABASE_URL=postgresql://admin:{PW}@db.internal:5432/app",
     "DATABASE_URL=postgresql://admin@db.internal:5432/app  # the password comes from PGPASSWORD"),
    ("a URL with a password", f"redis://:{PW}@cache:6379/0", "https://example.com:8443/path?user=me"),
    ("a URL with a password", f"engine = create_engine('postgresql://scott:{PW}@localhost/test')",
     "create_engine('postgresql://scott:tiger@localhost/test') and postgres://postgres:postgres@db, ssh://u:p@h"),
    ("a URL with a password", "git clone https://oauth2:tok3n" + A + "@gitlab.example.com/x.git",
     "postgresql://app:${DB_PASSWORD}@db/app and mysql://root:{password}@h/ and http://u:%s@h/ and ftp://u:***@h"),
]


@pytest.mark.parametrize(("kind", "hostile", "benign"), FORMATS, ids=[f"{k}-{i}" for i, (k, _, _) in
                                                                       enumerate(FORMATS)])
def test_each_format_is_found_and_its_look_alike_is_not(kind, hostile, benign):
    found = scan_text("# line one\n" + hostile + "\n")
    assert [f.kind for f in found][:1] == [kind], found
    assert found[0].where == "line 2"
    # Never the secret: the format's marker, 4 characters at most, and an ellipsis.
    assert len(found[0].shown) <= 5 and found[0].shown.endswith("\u2026")
    secretive = hostile.split("=", 1)[-1][8:]
    assert secretive not in str(found[0]) and secretive not in describe(found)
    assert scan_text(benign) == [], scan_text(benign)


def test_hashes_prose_and_ordinary_code_hold_no_secret():
    text = "\n".join([
        "sha256:" + "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
        "commit 3b18e512dba79e4c8300dd08aeb37f8e728b8dad",
        "The tokenizer splits text into tokens; a token is not a secret, nor is the word password.",
        "model = AutoModel.from_pretrained('meta-llama/Llama-3.1-8B', token=os.environ['HF_TOKEN'])",
        "url = f'https://{user}:{password}@{host}/db'",
        "data = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=='",
    ])
    assert scan_text(text) == []


def test_a_binary_head_is_not_scanned_and_only_the_head_is_read():
    token = ("ghp_" + A * 2)[:40].encode()
    assert is_binary(b"\x89PNG\r\n\x1a\n\0\0") and scan_head(b"\0" + token) == []
    assert scan_head(token)[0].kind == "a GitHub token"
    assert scan_head(b"x" * HEAD_BYTES + b"\n" + token) == []  # past the bounded head


# --- a leg's environment -----------------------------------------------------------------------------------------

def _quickstart_with(tmp_path, env=None, local_env=None):
    spec = yaml.safe_load(QUICKSTART.read_text())
    if env is not None:
        spec["legs"][1]["environment"] = {"NEURON_RT_LOG_LEVEL": "INFO", **env}
    if local_env is not None:
        spec["legs"][1]["local"] = {"environment": local_env}
    return write_spec(tmp_path / "bakeoff.yaml", spec)


@pytest.mark.parametrize(("name", "value", "said"), [
    ("GH_AUTH", "ghp_" + (A * 2)[:36], "a GitHub token (ghp_"),
    ("DATABASE_URL", f"postgresql://app:{PW}@db.internal/app", "a URL with a password (post"),
    ("MY_SERVICE_URL", f"https://svc:{PW}@api.example.com/v1", "a URL with a password (http"),
    ("HEADER", "Bearer " + JWT, "a JSON Web Token (eyJ"),
    ("SLACK_HOOK", "https://hooks.slack.com/services/T0/B0/" + A + A, "a Slack webhook URL (hook"),
    ("HUB", "hf_" + (A + UPPER)[:34], "a Hugging Face token (hf_"),
    ("KEY_ID", "AKIA" + UPPER[:16], "an AWS access key id (AKIA"),
])
def test_an_environment_value_holding_a_secret_is_one_located_line_that_never_shows_it(tmp_path, cli, name, value,
                                                                                       said):
    proc = cli("validate", _quickstart_with(tmp_path, {name: value}))
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1, proc.stderr
    assert f"legs[1].environment.{name}" in lines[0] and f"{name}'s value holds {said}" in lines[0], lines[0]
    assert "DescribeTrainingJob" in lines[0] and "Do not include any security-sensitive information" in lines[0]
    assert "execution role" in lines[0] and "Secrets Manager" in lines[0]
    assert value[6:] not in proc.stderr + proc.stdout


@pytest.mark.parametrize("name", ["GITHUB_PAT", "GL_PAT", "PGPASS", "PGPASSWORD", "MYSQL_PWD", "DB_PASS",
                                  "REDIS_PASSWORD"])
def test_more_secret_names_are_refused(tmp_path, cli, name):
    proc = cli("validate", _quickstart_with(tmp_path, {name: "x"}))
    assert proc.returncode == 2 and f"legs[1].environment.{name}" in proc.stderr
    assert f"{name} looks like a secret" in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


def test_the_local_environment_is_checked_and_named_as_such(tmp_path, cli):
    proc = cli("validate", _quickstart_with(tmp_path, local_env={"DB": f"mysql://root:{PW}@localhost/x"}))
    assert proc.returncode == 2 and "legs[1].local.environment.DB" in proc.stderr, proc.stderr
    assert PW not in proc.stderr


@pytest.mark.parametrize(("name", "value"), [
    ("DATABASE_URL", "postgresql://app@db.internal:5432/app"),  # a URL without a password
    ("MLFLOW_URL", "https://mlflow.example.com:5000/"),
    ("PG_URL", "postgresql://app:${PGPASSWORD}@db/app"),  # a template: the job fills it in
    ("TOKENIZERS_PARALLELISM", "false"), ("PWD", "/opt/ml/code"), ("PASSTHROUGH_MODE", "1"),
    ("NOTE", "the token is read from Secrets Manager"), ("CHECKSUM", "9f86d081884c7d659a2feaa0c55ad015"),
])
def test_ordinary_environment_values_pass(tmp_path, cli, name, value):
    proc = cli("validate", _quickstart_with(tmp_path, {name: value}))
    assert proc.returncode == 0, proc.stderr


# --- the code bundle ---------------------------------------------------------------------------------------------

BASE = """name: t
legs:
  - name: trn1
    instance_type: ml.trn1.2xlarge
  - name: g5
    instance_type: ml.g5.xlarge
entrypoint: {source_dir: code, script: train.py}
"""


def _project(tmp_path, files: dict[str, str]):
    code = tmp_path / "code"
    code.mkdir()
    (code / "train.py").write_text("print('hi')\n")
    for rel, body in files.items():
        (code / rel).parent.mkdir(parents=True, exist_ok=True)
        (code / rel).write_text(body)
    spec = tmp_path / "spec.yaml"
    spec.write_text(BASE)
    return spec


def test_a_file_holding_a_secret_is_left_out_and_said_once_without_the_secret(tmp_path, cli):
    from bakeoff.pipelines.plan.model import build_plan
    from bakeoff.pipelines.spec.loader import load_spec

    token = "ghp_" + (A * 2)[:36]
    spec = _project(tmp_path, {
        "config.py": f"GITHUB = '{token}'\n",
        "conf/db.yaml": f"url: postgresql://app:{PW}@db.internal/app\n",
        "notes.md": "Tokens go in AWS Secrets Manager; the tokenizer is in tokenizer.json.\n",
        "model.py": "import torch\n# see https://pytorch.org/docs\n",
        "weights.bin": "\0\0" + token,  # binary: not read for secrets
    })
    bundle = build_plan(load_spec(spec)).bundle
    names = {n for n, _ in bundle.files}
    assert {"train.py", "notes.md", "model.py", "weights.bin"} <= names
    assert not names & {"config.py", "conf/db.yaml"}
    assert {"config.py", "conf/db.yaml"} <= set(bundle.left_out)  # the API names every file not packed
    assert dict(bundle.holds_secrets) == {"config.py": "a GitHub token (ghp_\u2026, line 1)",
                                          "conf/db.yaml": "a URL with a password (post\u2026, line 1)"}
    proc = cli("validate", spec)
    assert proc.returncode == 0, proc.stderr
    said = [line for line in proc.stdout.splitlines() if "holds a secret" in line]
    assert len(said) == 1 and "config.py (a GitHub token (ghp_" in said[0] and "conf/db.yaml" in said[0], said
    assert "Secrets Manager" in said[0]
    assert token[4:] not in proc.stdout and PW not in proc.stdout
    assert not [line for line in proc.stdout.splitlines() if "left out of the code bundle:" in line
                and "config.py" in line]  # said once, on its own line


def test_a_script_holding_a_secret_is_refused_in_one_line(tmp_path, cli):
    spec = _project(tmp_path, {})
    (tmp_path / "code" / "train.py").write_text("import os\nKEY = 'AKIA" + UPPER[:16] + "'\n")
    proc = cli("validate", spec)
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1, proc.stderr
    assert "script 'train.py' holds an AWS access key id (AKIA\u2026, line 2)" in lines[0]
    assert "never packed" in lines[0] and UPPER[:16] not in lines[0]


NAMED = ("kubeconfig", "prod.kubeconfig", ".netrc", ".netrc.bak", ".my.cnf", ".pgpass", ".config/gh/hosts.yml",
         ".azure/msal_token_cache.json", "rclone.conf", ".m2/settings.xml", ".kaggle/kaggle.json", ".dockercfg",
         ".config/containers/auth.json", ".git-credentials", ".npmrc", ".pypirc")


def test_credential_files_known_by_name_or_place_are_left_out(tmp_path):
    from bakeoff.pipelines.plan.bundle import build_bundle, is_secret

    spec = _project(tmp_path, dict.fromkeys(NAMED, "x = 1\n") | {"settings.xml": "<settings/>",
                                                                 "azure/readme.md": "x", "auth.json": "{}"})
    bundle = build_bundle(spec.parent / "code", "train.py")
    names = {n for n, _ in bundle.files}
    assert not names & set(NAMED), names & set(NAMED)
    assert {"settings.xml", "azure/readme.md", "auth.json"} <= names  # the same names elsewhere are not secrets
    assert set(NAMED) <= set(bundle.left_out)
    assert is_secret("credentials", ".aws/credentials") and is_secret("config", "home/.aws/config")


def test_a_data_channel_holding_a_credential_file_by_its_place_is_refused(tmp_path):
    from bakeoff.pipelines.errors import SpecError
    from bakeoff.pipelines.sagemaker import compile_pipeline
    from bakeoff.pipelines.spec.loader import load_spec

    spec = _project(tmp_path, {})
    data = tmp_path / "data"
    (data / ".config" / "gh").mkdir(parents=True)
    (data / "train.jsonl").write_text("{}\n")
    (data / ".config" / "gh" / "hosts.yml").write_text("github.com:\n  oauth_token: x\n")
    spec.write_text(BASE + "data: {channels: {train: data}}\n")
    with pytest.raises(SpecError) as refused:
        compile_pipeline(load_spec(spec))
    assert "channel 'train' holds files that look like secrets (.config/gh/hosts.yml)" in str(refused.value)
    assert refused.value.field == "data.channels.train"


def test_bakeoffs_own_examples_and_test_scripts_hold_no_secret():
    """What a user copies as a source dir, and bakeoff's own container code: real code, read as a bundle is."""
    from bakeoff.pipelines.plan.bundle import secrets_in

    files = [p for root in ("examples", "tests/assets", "entrypoints") for p in (ROOT / root).rglob("*")
             if p.is_file() and "__pycache__" not in p.parts]
    assert len(files) > 50
    assert [(p, secrets_in(p)) for p in files if secrets_in(p)] == []
