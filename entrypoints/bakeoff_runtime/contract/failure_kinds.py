"""Who must act on a failed job: the `failure_kind` a job's summary.json records, written in the
container (training/failure_cause.py decides it, from the exception or the output) and read by the
Evaluate step (verdict/evaluation.py), which counts none of NOT_THE_LEGS as evidence about a leg.

Standard library only: both sides of the seam read it.
"""
from __future__ import annotations

SCRIPT = "script"                  # the script's own error: its author acts
MISSING_PACKAGE = "missing-package"  # a module its environment lacks: requirements.txt, the image, this Python
NO_NETWORK = "no-network"          # it could not reach the network: a data channel, a route out
LAUNCHER = "launcher"              # bakeoff did not start it the way it expects (torchrun's variables)
LOCAL_EMULATION = "local-emulation"  # this machine cannot emulate what it insists on (CUDA): a leg's `local:`
INFRASTRUCTURE = "infrastructure"  # the platform's: never cached, re-run

# Failures that say nothing about how a leg trains, and that more seeds will not cure.
NOT_THE_LEGS = (MISSING_PACKAGE, NO_NETWORK, LAUNCHER, LOCAL_EMULATION)

WHO_MUST_ACT = {
    SCRIPT: "the script failed",
    MISSING_PACKAGE: "a package the script imports is missing",
    NO_NETWORK: "the job could not reach the network",
    LAUNCHER: "bakeoff did not start the script as it expects",
    LOCAL_EMULATION: "this machine cannot emulate what the script insists on",
    INFRASTRUCTURE: "the platform failed",
    "killed": "the job was killed",
    "timeout": "the job ran past its max runtime",
    "interrupted": "the job was stopped",
    "no-output": "the job left no result",
    "no-metric": "the script reported no parity metric",
    "no-report": "the script reported nothing",
    "collective": "the collective check failed",
}
