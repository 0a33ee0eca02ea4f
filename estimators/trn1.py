"""Trainium 1 (ml.trn1, ml.trn1n): torch-neuronx, i.e. PyTorch/XLA on NeuronCores.

TorchNeuron (the native "neuron" device) is Trn2/Trn3 only, so trn1 takes only
the `neuron` backend. Locally a trn1 leg runs the same XLA code path on
PyTorch/XLA's CPU device.
"""
from __future__ import annotations

from .base import DLC_ACCOUNT, LegKind, LocalEmulation, instance

# AWS stopped publishing this image from Neuron SDK 2.31.0: pin explicit tags.
NEURON_TRAINING_IMAGE = "pytorch-training-neuronx:2.9.0-neuronx-py310-sdk2.27.0-ubuntu24.04"


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
            instance("ml.trn1.2xlarge", "Trainium", 1, 2, 8, 32, 32),
            instance("ml.trn1.32xlarge", "Trainium", 16, 32, 128, 512, 512),
            instance("ml.trn1n.32xlarge", "Trainium", 16, 32, 128, 512, 512),
        )
    }

    def default_image(self, backend: str, region: str = "us-east-1") -> str:
        return f"{DLC_ACCOUNT}.dkr.ecr.{region}.amazonaws.com/{NEURON_TRAINING_IMAGE}"

    def environment(self, backend: str, precision: str) -> dict[str, str]:
        # Neuron 2.27 changed the --auto-cast default; state precision explicitly so
        # both legs train at the precision the spec declares.
        cast = "--auto-cast=none" if precision == "fp32" else "--auto-cast=none --enable-mixed-precision-accumulation"
        return {"NEURON_CC_FLAGS": f"--model-type=transformer -O1 {cast}",
                "NEURON_RT_STOCHASTIC_ROUNDING_EN": "0" if precision == "fp32" else "1"}

    def local_emulation(self, backend: str, gpu_available: bool) -> LocalEmulation:
        return LocalEmulation("neuron", "local xla:cpu", {"PJRT_DEVICE": "CPU"})


KIND = Trn1()
