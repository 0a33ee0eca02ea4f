"""What a job's files can hold, generated: the fuzz tests' strategies and their seed corpus (tests/unit/
test_fuzz_evaluation.py, tests/engine/test_engine_fuzz.py). A job writes its own summary.json,
metrics.jsonl and trainer_state.json, so each may hold anything: JSON of any shape and depth, junk
lines, odd steps, non-finite numbers, a list where an object goes."""
from __future__ import annotations

import json

from hypothesis import strategies as st

LEGS = ("trn", "gpu")
JSON_LEAVES = st.one_of(st.none(), st.booleans(), st.integers(min_value=-10**20, max_value=10**20),
                        st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=20))
JSON = st.recursive(JSON_LEAVES, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                         st.dictionaries(st.text(max_size=8), inner, max_size=4)),
                    max_leaves=20)
SUMMARY_KEYS = ("status", "reason", "failure_kind", "leg", "seed", "metrics", "throughput", "compile", "model",
                "evidence", "mlflow", "warnings", "validation_history", "time_to_first_step_s", "wall_time_s",
                "steps_completed", "peak_host_memory_bytes", "peak_device_memory_bytes", "first_train_loss",
                "final_train_loss", "world_size", "mode", "environment", "schema")


def nested(depth: int) -> str:
    """A JSON document nested `depth` levels deep (deeper than Python's json recursion limit when large)."""
    return "[" * depth + "]" * depth


def summaries(leg: str, seed: int):
    """summary.json bodies (bytes): a plausible one with some keys replaced by anything, or junk."""
    plausible = st.fixed_dictionaries({
        "status": st.sampled_from(["completed", "failed", "diverged", "weird"]),
        "leg": st.just(leg), "seed": st.just(seed),
        "metrics": st.one_of(st.dictionaries(st.sampled_from(["val_loss", "x"]), JSON, max_size=2),
                             st.fixed_dictionaries({"val_loss": st.floats(allow_nan=True, allow_infinity=True)})),
    })
    changed = st.tuples(plausible, st.dictionaries(st.sampled_from(SUMMARY_KEYS), JSON, max_size=4)).map(
        lambda pair: {**pair[0], **pair[1]})
    as_bytes = changed.map(lambda body: json.dumps(body, allow_nan=True).encode())
    junk = st.one_of(st.binary(max_size=200), st.sampled_from([b"", b"[]", b"null", b"{", b"\xff\xfe",
                                                               nested(100_000).encode()]))
    return st.one_of(as_bytes, as_bytes, junk)


def metric_lines():
    """metrics.jsonl bodies: records of odd types and junk lines between them."""
    record = st.fixed_dictionaries({"kind": st.sampled_from(["train", "eval", 3, None]),
                                    "step": st.one_of(st.integers(-5, 10**6), st.text(max_size=4), st.none(),
                                                      st.floats(allow_nan=True)),
                                    "train_loss": st.one_of(st.floats(allow_nan=True, allow_infinity=True),
                                                            st.text(max_size=4), st.none()),
                                    "val_loss": JSON})
    line = st.one_of(record.map(lambda r: json.dumps(r, allow_nan=True).encode()), st.binary(max_size=60),
                     st.just(nested(50_000).encode()))
    return st.lists(line, max_size=12).map(lambda lines: b"\n".join(lines) + b"\n")


def trainer_states():
    """trainer_state.json bodies: a Trainer's log_history with odd steps and values, or junk."""
    entry = st.dictionaries(st.sampled_from(["loss", "eval_loss", "step", "epoch", "learning_rate"]),
                            st.one_of(JSON_LEAVES, st.lists(JSON_LEAVES, max_size=2)), max_size=4)
    history = st.fixed_dictionaries({"log_history": st.one_of(st.lists(entry, max_size=6), JSON)})
    return st.one_of(history.map(lambda b: json.dumps(b, allow_nan=True)), st.text(max_size=50),
                     st.just(nested(30_000)))


# The seed corpus: the cases the second security review found crashing the evaluation or `bakeoff run`.
CORPUS_SUMMARIES = [
    b'{"status": "completed", "leg": "trn", "seed": 0, "metrics": [1, 2]}',          # a list `metrics`
    nested(100_000).encode(),                                                        # nested too deep to read
    b'{"status": "completed", "leg": "trn", "seed": 0, "metrics": {"val_loss": 1e-11}, "throughput": [1]}',
    b'{"status": "completed", "leg": "trn", "seed": 0, "metrics": {"val_loss": 1e300}, "model": "x"}',
    b'{"status": "completed", "leg": "trn", "seed": "0", "metrics": {"val_loss": {"a": 1}}}',
    b'{"status": ["completed"], "leg": "trn", "seed": 0}',
    b'{"status": "completed", "leg": "trn", "seed": 0, "metrics": {"val_loss": 0.0}, "warnings": [null, false, []]}',
    b'{"status": "completed", "leg": "trn", "seed": 0, "metrics": {"val_loss": 2.5}, "evidence": [1, 2]}',
    b'{"status": "completed", "leg": "trn", "seed": 0, "metrics": {"val_loss": 2.5}, "evidence": {"xla": "x"}}',
    b'{"status": "diverged", "leg": "trn", "seed": 0, "metrics": {}, "model": {"": null}}',  # no parameter count
]
CORPUS_METRICS = [
    b'{"kind": "train", "step": 1, "train_loss": 2.0}\nnot json at all\n{"kind": "eval", "step": "x", '
    b'"val_loss": 1}\n',
    b'{"kind": "eval", "step": {"a": 1}, "val_loss": [1]}\n' + nested(50_000).encode() + b"\n",
]
CORPUS_TRAINER_STATES = [
    '{"log_history": [{"loss": 1.0, "step": "ten"}, {"eval_loss": 0.5, "step": null}]}',
    '{"log_history": {"loss": 1}}', nested(30_000), "[1, 2, 3]",
]
