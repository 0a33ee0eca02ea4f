"""What runs a training job: the Runtime a script uses, its backends (cpu, cuda, xla/neuron), the
telemetry, the graph caches, the probes, the script-mode launcher and the warm interpreter.

The only part of bakeoff_runtime that imports torch (tests/unit/test_boundaries.py): the host never
imports it.
"""
