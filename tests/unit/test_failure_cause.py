"""Whose failure a failure is: the platform's exits non-zero (never cached, retried), the script's exits 0;
and the rest, classed by who must act, in the words the process said last."""
import pytest

from bakeoff_runtime.training.failure_cause import classify, infrastructure_cause, last_words


def test_a_broken_collective_or_rendezvous_is_the_platforms():
    assert infrastructure_cause("DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970, unhandled system "
                                "error") == "DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970, unhandled " \
                                            "system error"
    assert infrastructure_cause(None, "", "x\nDistNetworkError: failed to recv, got 0 bytes\n") == \
        "DistNetworkError: failed to recv, got 0 bytes"


def test_neuron_hardware_and_network_status_codes_are_the_platforms_but_memory_is_not():
    assert infrastructure_cause("RuntimeError: nrt_execute status=NRT_EXEC_HW_ERR_HBM_UE(1201)").startswith(
        "RuntimeError: nrt_execute status=NRT_EXEC_HW_ERR_HBM_UE")
    assert infrastructure_cause("RuntimeError: failed: NRT_NETWORK_PROXY_FAILURE") is not None
    # Out of memory repeats on a re-run: the script's (its batch or model is too big for the device).
    assert infrastructure_cause("RuntimeError: nrt_tensor_allocate status=NRT_RESOURCE(4)") is None
    assert infrastructure_cause("RuntimeError: NRT_HW_ERROR_X is not a status") is None  # whole names only


def test_a_worker_killed_by_a_signal_under_torchrun_is_read_from_its_report():
    tail = ("[ERROR] failed (exitcode: -9) local_rank: 1 (pid: 4242) of binary: python3\n"
            "  exitcode  : -9 (pid: 4242)\n  traceback : Signal 9 (SIGKILL) received by PID 4242\n")
    assert infrastructure_cause("the training process exited with code 1", None, tail) == \
        "a worker was killed by SIGKILL (often the out-of-memory killer)"


def test_a_script_error_is_the_scripts():
    assert infrastructure_cause("ValueError: bad port (planted)", "Traceback ...\nValueError: bad port", "") is None
    assert infrastructure_cause(None, None) is None


# --- what went wrong, in the process's own words, and who must act -------------------------------------
ARGPARSE_TAIL = """[bakeoff] script mode: train.py --accel True --epochs 1
usage: train.py [-h] [--epochs EPOCHS] [--accel]
train.py: error: unrecognized arguments: True
"""
TORCHRUN_TAIL = """Traceback (most recent call last):
  File "/opt/ml/code/train.py", line 12, in <module>
    local_rank = int(os.environ["LOCAL_RANK"])
KeyError: 'LOCAL_RANK'
E1206 13:01:02.000 torch/distributed/elastic/multiprocessing/api.py:882] failed (exitcode: 1) local_rank: 0
Traceback (most recent call last):
  File "/usr/bin/torchrun", line 8, in <module>
torch.distributed.elastic.multiprocessing.errors.ChildFailedError:
============================================================
train.py FAILED
------------------------------------------------------------
Failures:
  <NO_OTHER_FAILURES>
------------------------------------------------------------
Root Cause (first observed failure):
[0]:
  time      : 2026-12-06_13:01:02
  host      : algo-1
  rank      : 0 (local_rank: 0)
  exitcode  : 1 (pid: 42)
  error_file: <N/A>
  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html
============================================================
"""


def test_the_reason_is_what_the_process_said_last_not_its_exit_code():
    assert last_words(ARGPARSE_TAIL) == "train.py: error: unrecognized arguments: True"
    # torchrun's own report after a worker's traceback is never the cause.
    assert last_words(TORCHRUN_TAIL) == "KeyError: 'LOCAL_RANK'"
    assert last_words("step 1\n[bakeoff] one process\n") == "step 1"
    assert last_words("") is None


@pytest.mark.parametrize("text, emulated_on, kind, words", [
    ("ModuleNotFoundError: No module named 'wandb'", None, "missing-package", "requirements.txt"),
    ("urllib.error.URLError: <urlopen error [Errno -3] Temporary failure in name resolution>", None, "no-network",
     "data.channels"),
    ("RuntimeError: Error downloading train-images-idx3-ubyte.gz:\nTried https://...", None, "no-network", "channel"),
    (TORCHRUN_TAIL, None, "launcher", "distributed: true"),
    ("RuntimeError: Found no NVIDIA driver on your system.", "local cpu", "local-emulation", "local:"),
    # On the target hardware a missing GPU is not this machine's doing: the script's (or the platform's).
    ("RuntimeError: Found no NVIDIA driver on your system.", None, "script", None),
    ("ValueError: shapes do not match", "local cpu", "script", None),
])
def test_a_failure_is_classed_by_who_must_act(text, emulated_on, kind, words):
    found, advice = classify(text, emulated_on)
    assert found == kind
    assert (advice is None) if words is None else (words in advice), advice


def test_a_backend_that_did_not_start_is_the_platforms_whatever_it_says():
    from bakeoff_runtime.training.failure_cause import BackendStartError, infrastructure_cause

    text = f"{BackendStartError.__name__}: the neuron backend did not start on this instance: RuntimeError: " \
           "Bad StatusOr access: INTERNAL: something no list names"
    assert "did not start" in (infrastructure_cause(None, None, text) or "")
    assert infrastructure_cause("RuntimeError: Bad StatusOr access: INTERNAL") is None  # the same text, unwrapped


# --- before the first optimizer step: the platform's unless the failure carries the script's mark ------
CODE = "/opt/ml/code"


def _trace(frames, exception):
    lines = ["Traceback (most recent call last):"]
    for path, source in frames:
        lines.append(f'  File "{path}", line 12, in f')
        if source:
            lines.append(f"    {source}")
    return "\n".join([*lines, exception, ""])


SCRIPT_FRAME = (f"{CODE}/train.py", "main()")
RUNPY = ("<frozen runpy>", None)
TORCH_XLA = ("/usr/local/lib/python3.10/site-packages/torch_xla/core/xla_model.py",
             "torch_xla._XLAC._xla_step_marker(")


def test_an_error_a_library_raises_before_the_first_step_is_the_platforms_whatever_it_says():
    from bakeoff_runtime.training.failure_cause import before_first_step_cause

    pjrt = _trace([SCRIPT_FRAME, RUNPY, TORCH_XLA], "RuntimeError: Bad StatusOr access: UNAVAILABLE: socket closed")
    cause = before_first_step_cause(pjrt, CODE)
    assert cause is not None and cause.startswith("RuntimeError inside /usr/local/lib/python3.10/site-packages/")
    # Raised from C++ by the script's own call: the innermost frame is the script's, its line is not a raise.
    item = _trace([SCRIPT_FRAME, (f"{CODE}/train.py", "print(loss.item())")], "RuntimeError: INTERNAL: failed")
    assert before_first_step_cause(item, CODE) is not None
    # An exception class no list names, from an EFA or a cache download, under torchrun's [rank0]: prefix.
    efa = "[rank0]: " + _trace([SCRIPT_FRAME, ("/usr/lib/python3/dist-packages/botocore/x.py", "raise e")],
                               "[rank0]: botocore.exceptions.ClientError: SlowDown").replace("\n", "\n[rank0]: ")
    assert before_first_step_cause(efa, CODE) is not None


@pytest.mark.parametrize("text", [
    _trace([SCRIPT_FRAME, RUNPY, (f"{CODE}/train.py", "raise RuntimeError('my check failed')")],
           "RuntimeError: my check failed"),  # the script's own raise
    _trace([SCRIPT_FRAME, (f"{CODE}/model/blocks.py", "assert x.dim() == 3")], "AssertionError"),  # its own assert
    _trace([SCRIPT_FRAME, TORCH_XLA], "TypeError: forward() got an unexpected keyword argument 'mask'"),
    _trace([SCRIPT_FRAME, ("/usr/lib/python3.10/site-packages/torch/nn/functional.py", "return torch._C._nn.linear(")],
           "RuntimeError: mat1 and mat2 shapes cannot be multiplied (32x8 and 16x1)"),  # torch's words for a mistake
    _trace([SCRIPT_FRAME, TORCH_XLA], "RuntimeError: INTERNAL: neuronx-cc compilation failed."),  # the port's finding
    _trace([SCRIPT_FRAME], "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB"),
    "usage: train.py [-h] [--lr LR]\ntrain.py: error: unrecognized arguments: --bogus\n",  # argparse
    "the dataset is empty: nothing to train on\n",  # sys.exit("...") : nothing was raised
])
def test_a_failure_with_the_scripts_mark_is_the_scripts_before_the_first_step_too(text):
    from bakeoff_runtime.training.failure_cause import before_first_step_cause

    assert before_first_step_cause(text, CODE) is None


def test_a_raise_in_an_installed_library_under_the_code_dir_is_not_the_scripts_own():
    from bakeoff_runtime.training.failure_cause import before_first_step_cause

    vendored = _trace([SCRIPT_FRAME, (f"{CODE}/.venv/lib/python3.10/site-packages/lib/x.py", "raise RuntimeError(e)")],
                      "RuntimeError: device lost")
    assert before_first_step_cause(vendored, CODE) is not None
