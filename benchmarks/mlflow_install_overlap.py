"""Time to first step of a compiled training job that logs to MLflow where its image has none: the client
installed before the training (the baseline) against beside it (this checkout), in one run.

Each tree compiles the same spec (examples/quickstart.yaml, one seed, an MLflow tracking URI) and runs its own
`Train-p4d-s0` request as the container would (tests/sagemaker_shaped.py of that tree: the /opt/ml tree, only the
request's Environment), the GPU leg on this CPU (BAKEOFF_BACKEND=cpu), with an interpreter that cannot import
this environment's mlflow (tests/assets/no_mlflow of this checkout), so the job installs the pinned client from
the package index, as on SageMaker with AWS's images. The tracking URI answers nothing (port 9): what is timed
is the job reaching its first step, not logging. Rounds alternate the trees; medians and the ratio.

    git worktree add /tmp/bakeoff-base REV    # the code to compare against (before the install moved)
    .venv/bin/python benchmarks/mlflow_install_overlap.py --baseline /tmp/bakeoff-base [--rounds 2]

Needs the package index (the install is what is measured).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NO_MLFLOW = ROOT / "tests" / "assets" / "no_mlflow"

ONE_JOB = r"""
import json, sys, tempfile, time
from pathlib import Path
tree, no_mlflow = Path(sys.argv[1]), sys.argv[2]
sys.path[:0] = [str(tree / "tests"), str(tree / "entrypoints"), str(tree)]
from sagemaker_shaped import put_assets, run_training
from bakeoff_runtime.contract import ENV, MLFLOW_TARGET_ENV
from bakeoff.pipelines.local.definition import Context, parameter_values, resolve
from bakeoff.pipelines.local.store import LocalS3
from bakeoff.pipelines.sagemaker.compiler import compile_pipeline
from bakeoff.pipelines.spec.loader import load_spec
spec = load_spec(str(tree / "examples" / "quickstart.yaml"),
                 ["seeds=1", "training.max_steps=20", "mlflow.tracking_uri=http://127.0.0.1:9"])
compiled = compile_pipeline(spec, bucket="b")
root = Path(tempfile.mkdtemp(prefix="mlflow-overlap-"))
store = LocalS3(root / "s3")
put_assets(compiled, store)
step = next(s for s in compiled.definition["Steps"] if s["Name"] == "Train-p4d-s0")
request = resolve(step["Arguments"], Context(parameter_values(compiled.definition), "exec1", "arn:exec1"))
assert request["Environment"].get(ENV["mlflow_install"]) == "1", request["Environment"]
started = time.time()
proc, opt_ml = run_training(request, "job", root / "job", store,
                            {ENV["backend"]: "cpu", "PYTHONPATH": no_mlflow,
                             MLFLOW_TARGET_ENV: str(root / "mlflow-client")})
wall = time.time() - started
summary = json.loads((opt_ml / "model" / "summary.json").read_text())
log = proc.stdout + proc.stderr
print(json.dumps({"rc": proc.returncode, "wall_s": wall, "status": summary.get("status"),
                  "time_to_first_step_s": summary.get("time_to_first_step_s"),
                  "installed": [l for l in log.splitlines() if "mlflow:" in l][:2]}))
"""


def one(tree: Path) -> dict:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    proc = subprocess.run([sys.executable, "-c", ONE_JOB, str(tree), str(NO_MLFLOW)], capture_output=True, text=True,
                          env=env, cwd=tempfile.gettempdir(), timeout=1800)
    if proc.returncode != 0:
        sys.exit(f"{tree}: {proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--baseline", required=True, type=Path, help="a checkout of the code to compare against")
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    runs: dict[str, list[dict]] = {"baseline": [], "new": []}
    for i in range(args.rounds):
        for name, tree in (("baseline", args.baseline), ("new", ROOT)) if i % 2 == 0 else \
                (("new", ROOT), ("baseline", args.baseline)):
            result = one(tree.resolve())
            runs[name].append(result)
            print(f"round {i + 1} {name}: {json.dumps(result)}", flush=True)
    med = {k: {m: statistics.median(r[m] for r in v) for m in ("time_to_first_step_s", "wall_s")}
           for k, v in runs.items()}
    print(json.dumps({"median": med, "ratio_new_over_baseline": {
        m: med["new"][m] / med["baseline"][m] for m in ("time_to_first_step_s", "wall_s")}}, indent=2))


if __name__ == "__main__":
    main()
