"""Whose failure a failure is: the platform's exits non-zero (never cached, retried), the script's exits 0."""
from bakeoff_runtime.training.failure_cause import infrastructure_cause


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
