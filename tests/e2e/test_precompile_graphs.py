"""The Precompile-<leg> job compiles the graphs its leg's training jobs run, so that they find them in
the compile cache: the Neuron persistent cache is looked up per compiled graph (aws-neuron-sdk,
about-neuron/arch/neuron-features/neuron-caching.rst), and a graph the trial run did not extract is
compiled again by every training job (aws-first-run-review-4.md, finding 3).

Both compiled requests run verbatim in a SageMaker-shaped /opt/ml tree (tests/sagemaker_shaped.py: the
request's own Environment, its process count, `neuron_parallel_compile` running its command unchanged,
PyTorch/XLA's CPU device), the Precompile job first, as the pipeline orders them, both on the compile-cache
location the compiler gives the leg. What each compiled is read in two independent ways:

* PT_XLA_DEBUG_LEVEL=2 (the only variable added): PyTorch/XLA prints a "Compilation Analysis" block for
  every graph it compiles, with its "Graph Hash", input and output counts, and the Python frames that
  triggered it (pytorch/xla docs/source/learn/troubleshoot.md, "Compilation & Execution Analysis"). The
  frames tell the eval graph (train.py's `evaluate`) and the step graphs (the Runtime's `optimizer_step`)
  from the rest. It prints analysis, not graphs: the hashes are the cache keys below.
* The XLA persistent cache the Runtime opens at that location on the CPU device (graph_cache.py): one
  file per compiled graph, named by the graph hash in decimal (pytorch/xla
  torch_xla/csrc/runtime/cache.h, PersistentCache::GetPath); the training job's own summary counts its
  lookups that found no file (PersistentCacheMiss, same file). On CPU a found file cannot be loaded
  (pytorch/xla issue 9094) and is compiled again, so a miss here is a graph the trial run never made.
"""
import json

from sagemaker_shaped import put_assets, run_training

from bakeoff.pipelines.local.definition import Context, parameter_values, resolve
from bakeoff.pipelines.local.store import LocalS3
from bakeoff.pipelines.sagemaker.compiler import compile_pipeline
from bakeoff.pipelines.spec.loader import load_spec
from conftest import tiny_spec, write_spec

# PJRT_DEVICE: a trn leg here (the harness's EMULATED); PT_XLA_DEBUG_LEVEL: the measurement.
HERE = {"PJRT_DEVICE": "CPU", "PT_XLA_DEBUG_LEVEL": "2"}
PREFIX = "Compilation Analysis: "


def compiled_graphs(output: str) -> dict[str, dict]:
    """Graph hash -> inputs, outputs and triggering frames, for each graph a job compiled."""
    graphs: dict[str, dict] = {}
    current: dict | None = None
    for line in output.splitlines():
        if not line.startswith(PREFIX):
            continue
        text = line[len(PREFIX):].strip()
        if text.startswith("Graph Hash:"):
            current = graphs.setdefault(text.split(":", 1)[1].strip(), {"frames": []})
        elif current is None:
            continue
        elif text.startswith("Number of Graph Inputs:"):
            current["inputs"] = int(text.split(":", 1)[1])
        elif text.startswith("Number of Graph Outputs:"):
            current["outputs"] = int(text.split(":", 1)[1])
        elif text.startswith("=") or text.startswith("-"):
            current = None
        elif text.endswith(")") and " (" in text:
            current["frames"].append(text)
    return graphs


def of_kind(graphs: dict[str, dict], frame: str) -> set[str]:
    return {h for h, g in graphs.items() if any(f.startswith(frame) for f in g["frames"])}


def test_the_precompile_job_compiles_every_graph_a_training_job_of_its_leg_compiles(tmp_path):
    spec = tiny_spec(seeds=1)
    # Two evaluations inside the loop and the last: the graphs after one are extracted too.
    spec["training"].update(max_steps=12, eval_interval=4)
    spec["legs"][0]["precompile"] = True
    compiled = compile_pipeline(load_spec(str(write_spec(tmp_path / "spec.yaml", spec))), bucket="b")
    store = LocalS3(tmp_path / "s3")
    put_assets(compiled, store)
    steps = {s["Name"]: s for s in compiled.definition["Steps"]}
    params = parameter_values(compiled.definition)
    requests = {name: resolve(steps[name]["Arguments"], Context(params, "exec1", "arn:exec1"))
                for name in ("Precompile-trn1", "Train-trn1-s0")}
    cache = {name: r["Environment"]["BAKEOFF_COMPILE_CACHE"] for name, r in requests.items()}
    assert len(set(cache.values())) == 1, cache  # the cache the Precompile job fills is the one training reads
    assert requests["Precompile-trn1"]["Environment"]["BAKEOFF_NPROC_PER_NODE"] == "2"  # trn1.2xlarge's 2 cores

    runs = {}
    for name, request in requests.items():  # in the pipeline's order: Precompile, then training
        proc, opt_ml = run_training(request, f"{name}-job", tmp_path / name, store, HERE)
        assert proc.returncode == 0, proc.stderr[-3000:]
        summary = json.loads((opt_ml / "model" / "summary.json").read_text())
        assert summary["status"] == "completed", summary.get("reason")
        runs[name] = (compiled_graphs(proc.stdout + proc.stderr), summary)
        if name == "Precompile-trn1":
            assert summary["precompile"] is True
            # The hashes read from the analysis are the cache's keys: each, and only those, is a file there.
            on_disk = {p.name for p in store.path(cache[name]).iterdir()}
            assert on_disk == {str(int(h, 16)) for h in runs[name][0]}, (sorted(on_disk), sorted(runs[name][0]))

    (pre, _), (train, train_summary) = runs["Precompile-trn1"], runs["Train-trn1-s0"]
    for graphs in (pre, train):
        assert of_kind(graphs, "evaluate (") and of_kind(graphs, "optimizer_step (")
    assert of_kind(train, "evaluate (") <= of_kind(pre, "evaluate (")
    missing = {h: {k: train[h].get(k) for k in ("inputs", "outputs")} |
               {"frames": [f.split(" (")[0] for f in train[h]["frames"]]} for h in sorted(set(train) - set(pre))}
    assert not missing, f"graphs the training job compiled that the Precompile job did not: {missing}; " \
                        f"the Precompile job's: { {h: (g.get('inputs'), g.get('outputs')) for h, g in pre.items()} }"
    # The same, from the cache: the training job looked up nothing the Precompile job had not left there.
    lookups = train_summary["compile"]["cache"]
    assert lookups["misses"] == 0 and lookups["new_entries"] == 0, lookups
