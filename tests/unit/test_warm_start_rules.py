"""Which jobs a leg's warm interpreter may fork, and with what (torch-free: the rules alone;
tests/e2e/test_job_start.py runs real jobs through it)."""
import sys

from bakeoff.pipelines.local import warm
from bakeoff_runtime.contract import ENV
from bakeoff_runtime.training import warm_server, warm_worker

LEG = {"BAKEOFF_BACKEND": "cpu", "PYTHONUNBUFFERED": "1", "PATH": "/usr/bin", "OMP_NUM_THREADS": "1",
       "MKL_NUM_THREADS": "1"}


def request(**env):
    return {"executable": sys.executable, "env": {**LEG, **env}}


def test_both_sides_name_the_same_variable():
    assert warm.ADDRESS_ENV == warm_worker.ADDRESS_ENV
    assert warm_worker.GO == warm_server.GO
    assert set(warm.PER_JOB) <= warm_server.per_job()


def test_a_job_of_the_leg_is_served_whatever_its_own_key_and_tree():
    assert warm_server.refusal(request(**{ENV["job_key"]: "abc", ENV["opt_ml"]: "/x/opt/ml", "PWD": "/x",
                                          "BAKEOFF_WORKER": "1", "BAKEOFF_PROCESS_START": "1.5"}), LEG) is None


def test_another_environment_is_refused_and_named():
    why = warm_server.refusal(request(XLA_FLAGS="--xla_dump_to=/tmp/x", PATH="/opt/bin"), LEG)
    assert why is not None and "PATH" in why and "XLA_FLAGS" in why
    assert "BAKEOFF_BACKEND" in (warm_server.refusal(request(BAKEOFF_BACKEND="neuron"), LEG) or "")
    missing = dict(LEG)
    del missing["PYTHONUNBUFFERED"]
    assert "PYTHONUNBUFFERED" in (warm_server.refusal({"executable": sys.executable, "env": missing}, LEG) or "")


def test_another_python_is_refused():
    assert "another Python" in (warm_server.refusal({**request(), "executable": "/usr/bin/python3"}, LEG) or "")


def test_thread_counts_are_set_in_the_child_only_when_they_can_be():
    bare = {k: v for k, v in LEG.items() if k not in ("OMP_NUM_THREADS", "MKL_NUM_THREADS")}
    # Set by the engine for this job, applied through torch.set_num_threads in the child.
    assert warm_server.refusal(request(OMP_NUM_THREADS="2", MKL_NUM_THREADS="2"), bare) is None
    # A job without the setting the interpreter imported torch with would get its value: refused.
    assert warm_server.refusal({"executable": sys.executable, "env": bare}, LEG) is not None
    assert warm_server.refusal(request(OMP_NUM_THREADS="2", MKL_NUM_THREADS="1"), bare) is not None
    assert warm_server.refusal(request(OMP_NUM_THREADS="2,1", MKL_NUM_THREADS="2,1"), bare) is not None
    # torch.compile's compile threads vary per job too, set on inductor's config in the child.
    assert warm_server.refusal(request(TORCHINDUCTOR_COMPILE_THREADS="1"), LEG) is None
    assert "TORCHINDUCTOR_COMPILE_THREADS" in (warm_server.refusal(request(TORCHINDUCTOR_COMPILE_THREADS="one"), LEG)
                                               or "")


def test_what_is_preloaded_follows_the_leg():
    assert warm_server.preload_modules({"BAKEOFF_BACKEND": "cpu"}) == ["torch", "torch._dynamo"]
    xla = warm_server.preload_modules({"BAKEOFF_BACKEND": "neuron", "PJRT_DEVICE": "CPU"})
    assert xla[:2] == ["torch", "torch._dynamo"] and "torch_xla" in xla
    # torch._dynamo reads inductor's settings at import, which the Runtime sets before compiling.
    assert warm_server.preload_modules({"BAKEOFF_BACKEND": "cpu", "BAKEOFF_TORCH_COMPILE": "1"}) == ["torch"]
    # A real Trainium (no PJRT_DEVICE=CPU) never gets torch_xla from here.
    assert "torch_xla" not in warm_server.preload_modules({"BAKEOFF_BACKEND": "neuron"})


def test_only_lone_workers_off_the_gpu_are_eligible():
    cpu = {ENV["backend"]: "cpu"}
    assert warm.eligible(cpu, hosts=1)
    assert not warm.eligible(cpu, hosts=2)
    assert not warm.eligible({**cpu, ENV["nproc_per_node"]: "2"}, hosts=1)
    assert not warm.eligible({ENV["backend"]: "cuda"}, hosts=1)  # a GPU leg run on the GPU
    assert not warm.eligible({}, hosts=1)


def test_the_interpreter_starts_without_what_differs_per_job():
    env = warm.server_environment({**LEG, ENV["job_key"]: "k", ENV["opt_ml"]: "/x", warm.ADDRESS_ENV: "/s",
                                   "PWD": "/x/code"})
    assert env == LEG


def test_the_switch():
    assert warm.warm_start_enabled({})
    assert not warm.warm_start_enabled({"BAKEOFF_WARM_START": "0"})
