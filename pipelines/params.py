"""The parameters bakeoff's messages name, each as both its callers spell it: the Python API's keyword
argument and the command line's flag (`bakeoff.pipelines.errors.Param`). A message built with
`bakeoff.pipelines.errors.words` names `bucket=` to a Python caller and `--bucket` on the command line."""
from __future__ import annotations

from bakeoff.pipelines.errors import Either, Param

OVERRIDES = Param("overrides", "--set", listed=True)
BUCKET = Param("bucket", "--bucket")
REGION = Param("region", "--region")
PROFILE = Param("profile", "--profile")
ROLE_ARN = Param("role_arn", "--role")
FROM_RUN = Param("from_run", "--from")          # plan
PREVIOUS_RUN = Param("previous_run", "--from")  # validate
OUT_DIR = Param("out_dir", "--out")
WRITE = Param("write", "--write", switch=True)
MAX_SEEDS = Param("max_seeds", "--max-seeds")
UNTIL_DECIDED = Param("until_decided", "--until-decided", switch=True)
JOBS = Param("jobs", "--jobs")
PARAMETERS = Param("parameters", "--param")
STACK = Param("stack", "--stack")
POLL = Param("poll_s", "--poll")
MAX_PARALLEL = Param("max_parallel_steps", "--max-parallel")
LEGS = Param("legs", "--leg", listed=True)
FORCE = Param("force", "--force", switch=True)
RULE_CHANGE = Param("rule_change", "--rule-change")
FRESH_START = Param("fresh_start", "--fresh-start")

# A parameter with a placeholder for the reader's own text, quoted as each reader would write it.
RULE_CHANGE_WHY = Either("rule_change='WHY'", "--rule-change 'WHY'")
FRESH_START_REASON = Either("fresh_start='REASON'", "--fresh-start REASON")


def run_into(out: object) -> Either:
    """A run of the bake-off into `out`, as each reader starts one."""
    return Either(f"run_local(SPEC, {str(out)!r})", f"bakeoff run SPEC --out {out}")
