"""Multi-node jobs as SageMaker runs them: the host list from resourceconfig.json, the
rendezvous on the first host, EFA settings where the instance has EFA, and refusals where
it has none."""
import json

import pytest

from bakeoff.pipelines.errors import SpecError
from bakeoff.pipelines.sagemaker.compiler import compile_pipeline
from bakeoff.pipelines.sagemaker.validate import check_definition
from bakeoff.pipelines.spec.loader import load_spec
from bakeoff_runtime.contract import TrainingEnv
from conftest import ROOT, tiny_spec, write_spec


def _resourceconfig(tmp_path, current, hosts):
    config = tmp_path / current / "input" / "config"
    config.mkdir(parents=True)
    (config / "resourceconfig.json").write_text(json.dumps(
        {"current_host": current, "hosts": hosts, "network_interface_name": "eth0"}))
    return {"SM_INPUT_DIR": str(tmp_path / current / "input")}


def test_every_host_meets_on_the_first_sorted_host(tmp_path):
    hosts = ["algo-2", "algo-1", "algo-3"]  # ranked by name, whatever order they are listed in
    for current, rank in (("algo-1", 0), ("algo-2", 1), ("algo-3", 2)):
        env = TrainingEnv.from_environ(_resourceconfig(tmp_path, current, hosts))
        assert (env.master_addr, env.master_port, env.host_rank, env.host_count) == ("algo-1", 7777, rank, 3)
        assert env.network_interface == "eth0"


def _two_node_spec(tmp_path, leg, global_batch_size=64):
    data = tiny_spec()
    data["legs"] = [leg, {"name": "p4d", "instance_type": "ml.p4d.24xlarge", "instance_count": 2}]
    data["training"]["global_batch_size"] = global_batch_size
    return load_spec(write_spec(tmp_path / "two.yaml", data))


def test_a_two_node_trn1_leg_carries_efa_settings(tmp_path):
    spec = _two_node_spec(tmp_path, {"name": "trn1", "instance_type": "ml.trn1.32xlarge", "instance_count": 2})
    compiled = compile_pipeline(spec)
    check_definition(compiled.definition)
    steps = {s["Name"]: s for s in compiled.definition["Steps"]}
    trn = steps["Train-trn1-s0"]["Arguments"]
    assert trn["ResourceConfig"]["InstanceCount"] == 2
    env = trn["Environment"]
    assert (env["FI_PROVIDER"], env["FI_EFA_USE_DEVICE_RDMA"], env["RDMAV_FORK_SAFE"]) == ("efa", "1", "1")
    # The Neuron runtime disables multi-node collectives on older kernels without it (nrt-troubleshoot.rst).
    assert env["FI_EFA_FORK_SAFE"] == "1"
    assert env["BAKEOFF_NPROC_PER_NODE"] == "32"
    gpu = steps["Train-p4d-s0"]["Arguments"]["Environment"]
    assert gpu["FI_PROVIDER"] == "efa" and gpu["NCCL_PROTO"] == "simple"
    assert "FI_EFA_FORK_SAFE" not in gpu  # a Neuron runtime setting; NCCL legs keep the SDK driver's set
    one = compile_pipeline(load_spec(ROOT / "examples" / "quickstart.yaml"))
    single = next(s for s in one.definition["Steps"] if s["Name"] == "Train-trn1-s0")["Arguments"]["Environment"]
    assert "FI_PROVIDER" not in single  # one instance: no inter-node fabric to configure
    assert "FI_EFA_FORK_SAFE" not in single


def test_a_two_node_trn2_leg_gets_the_neuron_fork_setting_too(tmp_path):
    spec = _two_node_spec(tmp_path, {"name": "trn2", "instance_type": "ml.trn2.48xlarge", "instance_count": 2},
                          global_batch_size=128)  # 2 x 64 NeuronCores
    compiled = compile_pipeline(spec)
    check_definition(compiled.definition)
    env = next(s for s in compiled.definition["Steps"] if s["Name"] == "Train-trn2-s0")["Arguments"]["Environment"]
    assert (env["FI_PROVIDER"], env["FI_EFA_FORK_SAFE"]) == ("efa", "1")


@pytest.mark.parametrize("instance", ["ml.trn1.2xlarge", "ml.g5.xlarge", "ml.m5.xlarge"])
def test_instances_without_efa_refuse_several_instances(tmp_path, instance):
    data = tiny_spec()
    data["legs"][0] = {"name": "x", "instance_type": instance, "instance_count": 2}
    data["training"]["global_batch_size"] = 64
    with pytest.raises(SpecError) as err:
        load_spec(write_spec(tmp_path / "s.yaml", data))
    assert err.value.field == "legs[0].instance_count" and "EFA" in err.value.message
