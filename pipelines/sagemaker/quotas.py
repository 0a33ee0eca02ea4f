"""Whether this account's SageMaker quotas let the compiled pipeline run: the instances each quota must
hold at the pipeline's peak, against the values Service Quotas reports.

A new account's per-instance-type training quotas are small, often 0 (the ResourceLimitExceeded threads
below). A job over its quota fails with ResourceLimitExceeded; the training steps retry that
(compiler.RESOURCE_LIMIT_RETRY) for a few hours and then fail the execution with no verdict. Finding it
before the pipeline exists costs one paginated listing.

Quota names, as Service Quotas lists them for service code `sagemaker`:
- `<instance type> for training job usage` (on-demand) and `<instance type> for spot training job usage`
  (managed spot) are separate quotas: the ResourceLimitExceeded message names the first
  (github.com/gabehollombe-aws/jupyter-notebooks/issues/1: "The account-level service limit 'ml.p3.2xlarge
  for training job usage' is 0 Instances"); AWS's own sample raises one by name and code
  (github.com/aws-samples/amazon-sagemaker-promote-code-not-models, terraform/main/service_quotas.tf:
  "ml.g4dn.xlarge for training job usage" L-3F53BF0F, "ml.g4dn.xlarge for processing job usage" L-2F1EB012);
  the spot one is separate (github.com/vietanhdev/sagemaker-yolo-terraform, docs/increase-gpu-quota.md:
  "ml.g4dn.xlarge for spot training job usage").
- `<instance type> for processing job usage`: the Evaluate step (same terraform file).
- `Number of instances across all training jobs` (4 in a new account:
  github.com/awsdocs/amazon-sagemaker-developer-guide/issues/70). Whether spot jobs count towards it is
  not documented where we looked, so only on-demand instances are counted against it: that can miss a
  shortfall, never invent one. Absent from a listing, it is skipped without a word.
Codes (L-...) differ by quota, so they are read from the listing, never assumed.
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from bakeoff.pipelines.aws_session import aws
from bakeoff.pipelines.sagemaker.expressions import step_dependencies

SERVICE_CODE = "sagemaker"
ON_DEMAND = "{} for training job usage"
SPOT = "{} for spot training job usage"
PROCESSING = "{} for processing job usage"
ALL_TRAINING = "Number of instances across all training jobs"
# Service Quotas answers AccessDeniedException (botocore's service-quotas model lists it for both operations);
# the IAM actions carry the operations' names under the `servicequotas` prefix
# (docs.aws.amazon.com/service-authorization/latest/reference/list_servicequotas.html).
DENIED = ("AccessDeniedException", "AccessDenied")
LIST_ACTION = "servicequotas:ListServiceQuotas"
DEFAULTS_ACTION = "servicequotas:ListAWSDefaultServiceQuotas"
# One paginated listing of ~1,500 quotas: a couple of retries, not the pipeline calls' ten (ops.RETRIES).
RETRIES = {"max_attempts": 3, "mode": "standard"}


@dataclass(frozen=True)
class Job:
    """A pipeline step that runs a SageMaker job, and the per-type quota its instances count against."""

    step: str
    quota: str
    instances: int
    on_demand_training: bool = False  # also counts against ALL_TRAINING


@dataclass(frozen=True)
class Need:
    """A quota the pipeline draws on and the instances it holds at once: peaks[m] with at most m steps
    running, peaks[-1] under the pipeline's own limit (peaks[1] is its largest single job)."""

    quota: str
    peaks: tuple[int, ...]
    steps: tuple[str, ...]

    @property
    def needed(self) -> int:
        return self.peaks[-1]

    def fits(self, value: float) -> int | None:
        """The most steps at once, below the pipeline's limit, that keep this quota within `value`."""
        return next((m for m in range(len(self.peaks) - 2, 0, -1) if self.peaks[m] <= value), None)


@dataclass(frozen=True)
class Quota:
    """A quota as Service Quotas reports it."""

    name: str
    code: str
    value: float
    default: bool  # no applied value: AWS's default (ListServiceQuotas leaves such quotas out)


@dataclass(frozen=True)
class Findings:
    """What `check` found: problems are shortfalls (deploy stops), warnings what could not be checked."""

    needs: tuple[Need, ...]
    quotas: dict[str, Quota]
    problems: tuple[str, ...]
    warnings: tuple[str, ...]


# --- what the pipeline needs ---------------------------------------------------------------------
def jobs(definition: dict[str, Any]) -> list[Job]:
    """Every top-level Training and Processing step (the Condition steps hold only Fail steps)."""
    out = []
    for step in definition.get("Steps", []):
        args = step.get("Arguments", {})
        if step.get("Type") == "Training":
            res = args["ResourceConfig"]
            spot = bool(args.get("EnableManagedSpotTraining"))
            out.append(Job(step["Name"], (SPOT if spot else ON_DEMAND).format(res["InstanceType"]),
                           int(res["InstanceCount"]), not spot))
        elif step.get("Type") == "Processing":
            res = args["ProcessingResources"]["ClusterConfig"]
            out.append(Job(step["Name"], PROCESSING.format(res["InstanceType"]), int(res["InstanceCount"])))
    return out


def _ancestors(definition: dict[str, Any]) -> dict[str, set[str]]:
    direct = {s["Name"]: step_dependencies(s) for s in definition.get("Steps", [])}
    memo: dict[str, set[str]] = {}

    def up(name: str) -> set[str]:
        if name not in memo:
            memo[name] = set()  # a cycle (SageMaker refuses those) cannot recurse forever
            memo[name] = set().union(*[{d} | up(d) for d in direct.get(name, ()) if d in direct])
        return memo[name]

    return {name: up(name) for name in direct}


def _options(steps: list[Job], ancestors: dict[str, set[str]]) -> tuple[list[list[list[str]]], list[str]]:
    """The ways steps can run together. An antichain of the dependency order is what can run at once.
    Returns groups (steps that depend on one another, as levels: only steps of one level run together)
    and the steps that depend on, or are depended on by, every other job (they only ever run alone).
    A group that is not such a clean ladder is split into single steps: an upper bound, never less."""
    names = [j.step for j in steps]

    def related(a: str, b: str) -> bool:
        return a in ancestors[b] or b in ancestors[a]

    alone = [n for n in names if len(names) > 1 and all(related(n, o) for o in names if o != n)]
    rest = [n for n in names if n not in alone]
    groups: list[list[str]] = []
    seen: set[str] = set()
    for start in rest:  # connected components of "depends on", among the rest
        if start in seen:
            continue
        component, todo = [], [start]
        seen.add(start)
        while todo:
            n = todo.pop()
            component.append(n)
            for o in rest:
                if o not in seen and related(n, o):
                    seen.add(o)
                    todo.append(o)
        groups.append(component)
    laddered = []
    for component in groups:
        level = {n: len(ancestors[n] & set(component)) for n in component}
        clean = all(related(a, b) == (level[a] != level[b]) for a in component for b in component if a != b)
        if clean:
            by_level: dict[int, list[str]] = {}
            for n in component:
                by_level.setdefault(level[n], []).append(n)
            laddered.append([by_level[k] for k in sorted(by_level)])
        else:
            laddered += [[[n]] for n in component]
    return laddered, alone


def _peaks(weights: dict[str, int], groups: list[list[list[str]]], alone: list[str], limit: int) -> list[int]:
    """peaks[m]: the most instances held at once with at most m steps running (m = 0..limit). Each group
    contributes the heaviest k steps of one of its levels, the ks summing to at most m: a small knapsack
    over the groups of several steps; single steps are taken heaviest first."""
    singles = sorted((weights.get(g[0][0], 0) for g in groups if len(g) == 1 and len(g[0]) == 1), reverse=True)
    best = [0] * (limit + 1)  # best[b]: most instances from the groups of several steps, with b steps
    for group in groups:
        if len(group) == 1 and len(group[0]) == 1:
            continue
        choices: dict[int, int] = {}
        for level in group:
            total = 0
            for k, w in enumerate(sorted((weights.get(n, 0) for n in level), reverse=True)[:limit], start=1):
                total += w
                choices[k] = max(choices.get(k, 0), total)
        best = [max([best[b]] + [best[b - k] + w for k, w in choices.items() if k <= b]) for b in range(limit + 1)]
    prefix = [0]
    for w in singles:
        prefix.append(prefix[-1] + w)
    lone = max([0] + [weights.get(n, 0) for n in alone])
    return [0] + [max(lone, max(best[b] + prefix[min(m - b, len(singles))] for b in range(m + 1)))
                  for m in range(1, limit + 1)]


def needs(definition: dict[str, Any], max_parallel_steps: int | None) -> tuple[Need, ...]:
    """Each quota the pipeline draws on and the instances it holds at its peak. SageMaker runs at most
    ParallelismConfiguration.MaxParallelExecutionSteps steps at once ("The max number of steps that can be
    executed in parallel", docs.aws.amazon.com/sagemaker/latest/APIReference/API_ParallelismConfiguration.html);
    without one, every step whose dependencies are done."""
    steps = jobs(definition)
    if not steps:
        return ()
    groups, alone = _options(steps, _ancestors(definition))
    limit = min(max_parallel_steps or len(steps), len(steps))
    quotas: dict[str, dict[str, int]] = {}
    for job in steps:
        quotas.setdefault(job.quota, {})[job.step] = job.instances
        if job.on_demand_training:
            quotas.setdefault(ALL_TRAINING, {})[job.step] = job.instances
    return tuple(Need(quota, tuple(_peaks(weights, groups, alone, limit)), tuple(sorted(weights)))
                 for quota, weights in sorted(quotas.items()))


# --- what the account has ------------------------------------------------------------------------
def _listing(client: Any, operation: str) -> dict[str, Quota]:
    # ListServiceQuotas and ListAWSDefaultServiceQuotas page with NextToken, at most 100 a page
    # (docs.aws.amazon.com/servicequotas/2019-06-24/apireference/API_ListServiceQuotas.html).
    out: dict[str, Quota] = {}
    default = operation == "list_aws_default_service_quotas"
    for page in client.get_paginator(operation).paginate(ServiceCode=SERVICE_CODE,
                                                        PaginationConfig={"PageSize": 100}):
        for q in page.get("Quotas", []):
            if "Value" in q and q.get("QuotaName"):
                name = " ".join(q["QuotaName"].split())
                out[name] = Quota(name, q.get("QuotaCode", "?"), float(q["Value"]), default)
    return out


def _code(exc: Any) -> str:
    return str(exc.response.get("Error", {}).get("Code") or exc.response.get("ResponseMetadata", {})
               .get("HTTPStatusCode", "?"))


def read_quotas(client: Any, wanted: set[str], region: str) -> tuple[dict[str, Quota], list[str]]:
    """The account's values of `wanted` in `region`, and one warning per thing that could not be read.
    ListServiceQuotas gives applied values and leaves out a quota that has none ("If the applied quota value
    is not available for a quota, the quota is not retrieved", API_ListServiceQuotas.html): those are read
    from AWS's defaults (ListAWSDefaultServiceQuotas, "A default value does not reflect any quota increases",
    docs.aws.amazon.com/servicequotas/2019-06-24/apireference/API_ListAWSDefaultServiceQuotas.html).
    A refusal from Service Quotas is a warning (the check is advice; deploy goes on); no credentials, no
    region or no network is an AwsError, as for every other AWS call."""
    from botocore.exceptions import ClientError

    found: dict[str, Quota] = {}
    for operation, action in (("list_service_quotas", LIST_ACTION),
                              ("list_aws_default_service_quotas", DEFAULTS_ACTION)):
        missing = wanted - set(found)
        if not missing:
            break
        with aws(f"read SageMaker quotas in {region}"):
            try:
                listed = _listing(client, operation)
            except ClientError as exc:
                code = _code(exc)
                if code in DENIED:
                    why = f"the caller is denied {action} ({code}); grant it, or deploy with --skip-quota-check"
                else:
                    message = " ".join(str(exc.response.get("Error", {}).get("Message") or "").split())[:200]
                    said = f": {message}" if message and not message.startswith("<") else ""  # not an HTML page
                    why = f"Service Quotas in {region} answered {code}{said}"
                if found:
                    return found, [f"{len(missing)} quota(s) without an applied value not checked "
                                   f"({', '.join(sorted(missing))}): {why}"]
                return found, [f"quotas not checked: {why}"]
        found.update({name: q for name, q in listed.items() if name in missing})
    return found, [f"quota {name!r} is not listed by Service Quotas in {region} (is the instance type offered "
                   "there?): not checked" for name in sorted(wanted - set(found)) if name != ALL_TRAINING]


# --- the verdict ---------------------------------------------------------------------------------
def _count(value: float) -> str:
    return f"{value:g}"


def shortfalls(needs_: Iterable[Need], quotas: dict[str, Quota], region: str, max_parallel_steps: int | None,
               ) -> list[str]:
    """One line per quota below the pipeline's peak: the quota, its value, the need, and what to do."""
    lines = []
    for need in needs_:
        quota = quotas.get(need.quota)
        if quota is None or quota.value >= need.needed:
            continue
        where = f"{len(need.steps)} of its steps use it"
        at_once = f", at most {max_parallel_steps} steps run at once" if max_parallel_steps else ""
        basis = " (AWS default, no applied value)" if quota.default else ""
        # The CLI's synopsis: docs.aws.amazon.com/goto/cli2/service-quotas-2019-06-24/RequestServiceQuotaIncrease
        request = (f"request an increase to {need.needed} in Service Quotas: aws service-quotas "
                   f"request-service-quota-increase --service-code {SERVICE_CODE} --quota-code {quota.code} "
                   f"--desired-value {need.needed} --region {region}")
        fewer = need.fits(quota.value)
        alternative = f"; or set max_parallel_steps: {fewer} in the spec (jobs then queue)" if fewer else ""
        lines.append(f"quota {need.quota!r} ({quota.code}) is {_count(quota.value)} in {region}{basis}; the pipeline "
                     f"needs {need.needed} at once ({where}{at_once}): {request}{alternative}")
    return lines


def check(definition: dict[str, Any], max_parallel_steps: int | None, client: Any, region: str) -> Findings:
    """Needs, the account's values, shortfalls (problems) and what could not be checked (warnings)."""
    wanted = needs(definition, max_parallel_steps)
    quotas, warnings = read_quotas(client, {n.quota for n in wanted}, region)
    return Findings(wanted, quotas, tuple(shortfalls(wanted, quotas, region, max_parallel_steps)), tuple(warnings))
