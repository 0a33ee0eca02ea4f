"""Trainium 1 (ml.trn1, ml.trn1n): torch-neuronx, i.e. PyTorch/XLA on NeuronCores.

TorchNeuron (the native "neuron" device) is Trn2/Trn3 only, so trn1 takes only
the `neuron` backend. Locally a trn1 leg runs the same XLA code path on
PyTorch/XLA's CPU device.
"""
from __future__ import annotations

from .base import InstanceType, LegKind, LocalEmulation, instance


def neuron_network_environment(env: dict[str, str]) -> dict[str, str]:
    """The Neuron runtime's own EFA setting, added to a multi-node job's libfabric settings (empty for a
    single instance, which uses no fabric between hosts).

    FI_EFA_FORK_SAFE=1: "Older Linux (<5.15) kernels require environment variable FI_EFA_FORK_SAFE to be set
    to 1 for the libfabric to operate correctly ... When the variable is not set multi-node collective
    communication will be disabled" (aws-neuron-sdk neuron-runtime/nrt-troubleshoot.rst), and the Neuron
    multi-node setup lists it beside FI_PROVIDER=efa and FI_EFA_USE_DEVICE_RDMA=1 (aws-neuron-sdk
    frameworks/torch/torch-neuronx/setup-trn1-multi-node-execution.rst). Which kernel SageMaker's trn hosts
    run is not documented, so it is always set. On newer kernels it changes nothing: libfabric's EFA
    provider "Has no effect on kernels which set copy-on-fork for registered pages, generally 5.13 and
    later" (libfabric prov/efa/src/efa_env.c), and it reads RDMAV_FORK_SAFE, already set where the device
    has RDMA read, the same way (efa_fork_support.c); on older ones it turns on the fork support the
    Neuron runtime asks for."""
    if env:
        env["FI_EFA_FORK_SAFE"] = "1"
    return env


class Trn1(LegKind):
    name = "trn1"
    description = "AWS Trainium (trn1/trn1n), PyTorch/XLA via torch-neuronx"
    backends = ("neuron",)
    default_backend = "neuron"
    distribution = "xla"
    compiled_backends = ("neuron",)
    instances = {
        i.name: i
        for i in (
            instance("ml.trn1.2xlarge", "Trainium", 1, 2, 8, 32, 32, local_storage=True, network_gbps=25),
            instance("ml.trn1.32xlarge", "Trainium", 16, 32, 128, 512, 512, efa=True, efa_rdma=True,
                     local_storage=True, network_gbps=800),
            # trn1n: 16 EFA devices; Neuron's multi-node setup sets FI_EFA_USE_DEVICE_RDMA=1 on trn1 and trn1n.
            instance("ml.trn1n.32xlarge", "Trainium", 16, 32, 128, 512, 512, efa=True, efa_rdma=True,
                     local_storage=True, network_gbps=1600),
        )
    }

    def environment(self, backend: str, precision: str) -> dict[str, str]:
        # Neuron 2.27 changed the --auto-cast default; state precision explicitly so
        # both legs train at the precision the spec declares.
        cast = "--auto-cast=none" if precision == "fp32" else "--auto-cast=none --enable-mixed-precision-accumulation"
        # --retry_failed_compilation: a compile that was interrupted (a spot reclaim, a stop, max runtime) is
        # cached as failed, and every later job of the same cache key would skip it and crash ("Will skip
        # compilation, please set --retry_failed_compilation": Neuron docs, neuron-caching.rst and
        # pytorch-neuron-parallel-compile.rst; shared/reference/aws-first-run-review.md #7).
        return {"NEURON_CC_FLAGS": f"--model-type=transformer -O1 {cast} --retry_failed_compilation",
                "NEURON_RT_STOCHASTIC_ROUNDING_EN": "0" if precision == "fp32" else "1"}

    def network_environment(self, inst: InstanceType, instance_count: int) -> dict[str, str]:
        return neuron_network_environment(super().network_environment(inst, instance_count))

    def multi_node_refusal(self, inst) -> str | None:
        if inst.efa:
            return None
        # aws-neuron-sdk setup-trn1-multi-node-execution.rst: "EFA is currently not available on
        # the smaller instances sizes and they cannot be used for running multi-node jobs."
        return (f"{inst.name} has no EFA, and Neuron runs multi-node jobs only over EFA (the Neuron docs: "
                "smaller trn1 sizes \"cannot be used for running multi-node jobs\"); use ml.trn1.32xlarge "
                "or ml.trn1n.32xlarge for several instances")

    def local_emulation(self, backend: str, gpu_available: bool) -> LocalEmulation:
        return LocalEmulation("neuron", "local xla:cpu", {"PJRT_DEVICE": "CPU"})


KIND = Trn1()
