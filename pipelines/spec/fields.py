"""The field types every model of the spec shares: names and URIs as regexes, the backend and
precision literals, numbers that refuse true/false, bounds with their sources, the cross-field error
that knows its field, the strict base model, and what marks a secret (by its name, and by its content:
the token formats below, which bakeoff.pipelines.plan.secret_scan applies to the files a bundle packs). A leaf below
bakeoff.pipelines.spec.legs and bakeoff.pipelines.spec.model (import these names from here or from
bakeoff.pipelines.spec.model, which
re-exports them)."""
from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict

from bakeoff_runtime.contract.backend_table import BACKENDS

NAME_RE = re.compile(r"^[A-Za-z0-9](-*[A-Za-z0-9])*$")
S3_URI_RE = re.compile(r"^s3://(?P<bucket>[a-z0-9][a-z0-9.\-]{1,61}[a-z0-9])(?P<key>/[^\s]*)?$")
BUCKET_RE = re.compile(r"^[a-z0-9][a-z0-9.\-]{1,61}[a-z0-9]$")
IMAGE_RE = re.compile(
    r"^(?P<registry>[a-z0-9.\-]+(:[0-9]+)?/)?(?P<repo>[a-z0-9._\-/]+)(:(?P<tag>[A-Za-z0-9._\-]{1,128}))?"
    r"(@sha256:[a-f0-9]{64})?$")
SCRIPT_RE = re.compile(r"[A-Za-z0-9._/-]+")
ROLE_ARN_RE = re.compile(r"^arn:aws[a-z\-]*:iam::\d{12}:role/[\w+=,.@\-/]{1,512}$")

if TYPE_CHECKING:
    Backend = str
else:
    # The table's rows, in its order: the JSON Schema's enum and the validator follow a new row.
    Backend = Literal[tuple(BACKENDS)]
Precision = Literal["fp32", "bf16"]


# Name parts that mark a secret (split on "_": TOKENIZERS_PARALLELISM is not HF_TOKEN), and AWS's
# own variables (credentials belong to the execution role, not the spec). PAT: a personal access token
# (GITHUB_PAT); PASS, PGPASS: PostgreSQL's password variable and file; PWD: MYSQL_PWD (never PWD alone, the
# shell's working directory). A part ending in PASSWORD/PASSWD (PGPASSWORD) counts as that word.
SECRET_NAME_PARTS = frozenset({"TOKEN", "SECRET", "PASSWORD", "PASSWD", "PASSPHRASE", "CREDENTIAL", "CREDENTIALS",
                               "APIKEY", "PRIVATE", "PAT", "PASS", "PGPASS", "PWD"})
SECRET_NAME_PAIRS = (("API", "KEY"), ("ACCESS", "KEY"), ("SECRET", "KEY"), ("AUTH", "KEY"))
_SECRET_NAME_ENDS = ("PASSWORD", "PASSWD")


def looks_like_secret(name: str) -> bool:
    upper = name.upper()
    parts = upper.split("_")
    if upper in ("PWD", "OLDPWD"):
        return False
    return (upper.startswith("AWS_") or bool(SECRET_NAME_PARTS & set(parts))
            or any(part.endswith(_SECRET_NAME_ENDS) for part in parts)
            or any(pair == tuple(parts[i:i + 2]) for pair in SECRET_NAME_PAIRS for i in range(len(parts) - 1)))


# --- Secrets by content ----------------------------------------------------------------------------------------
# Well-known token formats, each regex written here after the rule of the same token in the maintained scanners:
# gitleaks/gitleaks b58d3f102cf3a2c84cb7f923d05c25c9b1aed84b cmd/generate/config/rules/ aws.go (aws-access-token,
# its `.+EXAMPLE$` allowlist), github.go, gitlab.go, slack.go, huggingface.go, openai.go, anthropic.go, pypi.go,
# npm.go, stripe.go, gcp.go (gcp-api-key), jwt.go, privatekey.go; Yelp/detect-secrets
# 5e141933554a0b74e7341841f318be21e895339c detect_secrets/plugins/ aws.py (the secret key beside its name),
# basic_auth.py (a URL's password, `{}` templates excepted), private_key.py (the headers), azure_storage_key.py,
# slack.py, jwt.py. Where they are looser or stricter, said beside the rule. These run on a spec's environment
# values here (bakeoff.pipelines.spec.legs) and on every text file a code bundle packs
# (bakeoff.pipelines.plan.secret_scan): the
# spec layer cannot import the plan's, so the rules live in this leaf and the plan module builds on them.
_E = r"(?![A-Za-z0-9_])"  # a token ends where no word character follows (gitleaks: GenerateUniqueTokenRegex)


def _after(marker: int) -> str:
    """Placed after a token's marker of `marker` characters: no word character before the marker. (The
    regex then starts with the marker itself, which the engine searches for fast, instead of a lookbehind.)"""
    return rf"(?<![A-Za-z0-9_].{{{marker}}})"


@dataclass(frozen=True)
class SecretRule:
    kind: str  # what it is, said with its article ("a GitHub token")
    pattern: re.Pattern[str]
    shown: int  # how many leading characters of a match are the format's own marker (never the secret); -1: URL
    placeholder: Callable[[re.Match[str]], bool] | None = None  # a documented example or a template: let pass
    keywords: tuple[str, ...] = ()  # for a regex with no literal start: one of these is in any text it matches
    back: int = 0  # characters of the marker before where the match starts (a regex starts at a literal)


@dataclass(frozen=True)
class SecretFinding:
    """What kind of secret, and where (`line N` in a file; the caller names the field or file). The
    secret itself is never kept: `shown` is at most its format's marker, 4 characters and an ellipsis."""

    kind: str
    where: str
    shown: str

    def __str__(self) -> str:
        return f"{self.kind} ({self.shown}{', ' + self.where if self.where else ''})"


def _low_variety(match: re.Match[str], marker: int) -> bool:
    """A run of one or two characters after the marker (AKIAXXXXXXXXXXXXXXXX, ghp_000...): a placeholder."""
    return len(set(match.group(0)[marker:])) <= 2


def _template_password(match: re.Match[str]) -> bool:
    """A URL's password that is a template, a mask or a placeholder, as documentation writes them: `${PGPASSWORD}`,
    `{password}`, `<pw>`, `%s`/`%(pw)s`, `***`, `xxxx`, `password`, `pass`, `token`, one or two characters, the
    user's name again (`postgres:postgres`), scott/tiger (detect-secrets basic_auth.py excepts `{}`; the rest are
    their kin: a docstring's `https://user:pass@proxy` must not cost a module its place in the bundle)."""
    password = match.group("password")
    return (any(c in password for c in "{}$<>") or re.fullmatch(r"%(\([^)]*\))?[sdr]", password) is not None
            or re.fullmatch(r"[*xX.\-_]+", password) is not None or _PLACEHOLDER_WORD.fullmatch(password) is not None
            or len(password) < 3 or password == match.group("user"))


_PLACEHOLDER_WORD = re.compile(r"(?i)(your|my|the)?[-_]?(password|passwd|pass|pw|pwd|secret|token|api[-_]?key|key|"
                               r"changeme|example|tiger)")


def _opaque_placeholder(match: re.Match[str]) -> bool:
    """`Bearer YOUR_ACCESS_TOKEN_HERE`: a real bearer token mixes letters and digits (a JWT is told as one)."""
    token = match.group("token")
    mixed = re.search(r"[0-9]", token) and re.search(r"[A-Za-z]", token)
    return token.startswith("eyJ") or not mixed or _low_variety(match, 7)


SECRET_RULES: tuple[SecretRule, ...] = (
    # AWS: an access key id (AKIA long-term, ASIA temporary; ABIA/ACCA per gitleaks), 16 upper-case letters or
    # digits after it. The documentation's AKIAIOSFODNN7EXAMPLE is let through, as gitleaks does.
    SecretRule("an AWS access key id", re.compile(r"(?:AKIA|ASIA|ABIA|ACCA)" + _after(4) + r"[A-Z0-9]{16}" + _E), 4,
               lambda m: m.group(0).endswith("EXAMPLE") or _low_variety(m, 4)),
    # ... and its secret access key: 40 base64 characters, only beside its name (alone it is any base64).
    SecretRule("an AWS secret access key",
               re.compile(r"(?i:secret_?access_?key)[\"']?\s*[:=]\s*[\"']?[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])"), 4,
               lambda m: "EXAMPLE" in m.group(0), keywords=("ecret", "ECRET")),
    SecretRule("a GitHub token", re.compile(r"gh" + _after(2) + r"[pousr]_[A-Za-z0-9]{36,251}" + _E), 4,
               lambda m: _low_variety(m, 4)),
    SecretRule("a GitHub token", re.compile(r"github_pat_" + _after(11) + r"[A-Za-z0-9_]{50,244}" + _E), 4,
               lambda m: _low_variety(m, 11)),
    SecretRule("a GitLab token", re.compile(r"gl" + _after(2) + r"(?:pat|dt|ptt|rt)-[A-Za-z0-9_-]{20,300}" + _E), 4,
               lambda m: _low_variety(m, 6)),
    # Slack: bot, user, app, refresh and config tokens all go `xox?-` (`xapp-`, `xoxe.xoxp-`) then digits;
    # `xoxb-your-token` (a template) has none.
    SecretRule("a Slack token", re.compile(r"x" + _after(1) + r"(?:ox[abeoprs]|app)[.-](?:xox[bp]-)?\d+-"
                                           r"[A-Za-z0-9-]{8,}"), 4, lambda m: _low_variety(m, 5)),
    SecretRule("a Slack webhook URL",
               re.compile(r"hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9_+/-]{30,}"), 4,
               lambda m: _low_variety(m, 25)),
    # Hugging Face: `hf_` and 34 letters (gitleaks); taken as 30-40 letters or digits with a capital among them,
    # words around it excepted (`hf_hub_download`, `hf_token` are names, not tokens).
    SecretRule("a Hugging Face token", re.compile(r"hf_" + _after(3) + r"[A-Za-z0-9]{30,40}" + _E), 3,
               lambda m: _low_variety(m, 3) or not re.search(r"[A-Z]", m.group(0)[3:])),
    # OpenAI keys carry `T3BlbkFJ` (base64 of "OpenAI"); Anthropic's end in AA.
    SecretRule("an OpenAI API key", re.compile(r"sk-" + _after(3) + r"(?:(?:proj|svcacct|admin)-)?[A-Za-z0-9_-]{20,}"
                                               r"T3BlbkFJ[A-Za-z0-9_-]{20,}"), 3),
    SecretRule("an Anthropic API key", re.compile(r"sk-ant-(?:api|admin)\d\d-[A-Za-z0-9_-]{80,}"), 4,
               lambda m: _low_variety(m, 14)),
    SecretRule("a PyPI upload token", re.compile(r"pypi-AgEIcHlwaS5vcmc[A-Za-z0-9_-]{50,}"), 4),
    SecretRule("an npm token", re.compile(r"npm_" + _after(4) + r"[A-Za-z0-9]{36}" + _E), 4,
               lambda m: _low_variety(m, 4)),
    SecretRule("a Stripe key", re.compile(r"k_(?<=[sr]k_)" + _after(3) + r"(?:live|test|prod)_[A-Za-z0-9]{10,99}"
                                          + _E), 3, lambda m: _low_variety(m, 7), back=1),
    SecretRule("a Google API key", re.compile(r"AIza" + _after(4) + r"[A-Za-z0-9_-]{35}" + _E), 4,
               lambda m: _low_variety(m, 4)),
    SecretRule("an Azure storage account key", re.compile(r"AccountKey=[A-Za-z0-9+/]{40,}={0,2}"), 4),
    # A JWT: a base64url JSON header and payload, each `{"` and so `eyJ` (a bearer token or bare).
    SecretRule("a JSON Web Token", re.compile(r"eyJ" + _after(3) + r"[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{10,}\."
                                              r"[A-Za-z0-9_-]*"), 3),
    # An opaque bearer token written out (`Authorization: Bearer 8f2c...`); `Bearer {token}` is code.
    SecretRule("a bearer token", re.compile(r"(?<![A-Za-z])(?:Bearer|bearer|BEARER)\s+(?P<token>[A-Za-z0-9._~+/-]{20,}"
                                            r"=*)"), 4, _opaque_placeholder, keywords=("earer", "EARER")),
    SecretRule("a private key", re.compile(r"-----BEGIN[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----"), 4,
               keywords=("PRIVATE KEY",)),
    SecretRule("a private key", re.compile(r"PuTTY-User-Key-File-\d+:"), 4),
    # scheme://user:password@host (the user may be empty: redis://:pw@host). The match starts at `://`; shown:
    # the scheme before it, its first letters.
    SecretRule("a URL with a password",
               re.compile(r"://(?P<user>[^\s:/?#@'\"`<>\\]{0,256}):(?P<password>[^\s/?#@'\"`<>\\]{1,256})@"
                          r"(?=[A-Za-z0-9\[_-])"),
               -1, _template_password),
)
_SCHEME_BEFORE = re.compile(r"[A-Za-z][A-Za-z0-9+.-]{0,30}$")


def secret_findings(text: str, most: int = 5) -> list[SecretFinding]:
    """The secrets `text` holds (at most `most`), by kind and line, in the order they appear; none
    of them echoed (a finding shows its format's marker, 4 characters at most)."""
    found: list[tuple[int, SecretFinding]] = []
    for rule in SECRET_RULES:
        if rule.keywords and not any(k in text for k in rule.keywords):
            continue
        for m in rule.pattern.finditer(text):
            if rule.placeholder is not None and rule.placeholder(m):
                continue
            start = m.start()
            if rule.shown < 0:
                scheme = _SCHEME_BEFORE.search(text, max(0, start - 31), start)
                marker = scheme.group(0) if scheme else "://"
            else:
                start -= rule.back
                marker = text[start:start + rule.shown]
            line = text.count("\n", 0, start) + 1
            found.append((start, SecretFinding(rule.kind, f"line {line}", marker[:4] + "\u2026")))
            if len(found) >= most * 4:
                break
    found.sort(key=lambda f: f[0])
    return [f for _, f in found[:most]]


class SpecFieldError(ValueError):
    """A cross-field check that knows which field is to blame (relative to the model)."""

    def __init__(self, field: str | tuple, message: str):
        super().__init__(message)
        self.field = (field,) if isinstance(field, str) else tuple(field)


def _no_bool(value: Any) -> Any:
    # YAML's `true` is Python's 1: `seeds: true` would quietly mean one seed.
    if isinstance(value, bool):
        raise ValueError("a number is expected, not true/false")
    return value


Int = Annotated[int, BeforeValidator(_no_bool)]
MAX_SEEDS = 100  # per leg, as a count or as a list
Float = Annotated[float, BeforeValidator(_no_bool)]

# Bounds with their source. SageMaker's own (botocore's sagemaker service model and its docs):
MAX_RUNTIME_S = 2_419_200  # StoppingCondition.MaxRuntimeInSeconds: "The maximum value is 28 days"
DEFAULT_RUNTIME_QUOTA_S = 432_000  # AWS's default quota "Longest run time for a training job" (5 days)
# bakeoff's own, so that a typo (1e30 steps) is caught before it is a bill:
MAX_STEPS = 100_000_000
MAX_GLOBAL_BATCH = 1_048_576


class _Model(BaseModel):
    # NaN and infinities are never a setting (`margin: .inf` would pass every comparison).
    model_config = ConfigDict(extra="forbid", validate_assignment=True, use_attribute_docstrings=False,
                              allow_inf_nan=False)
