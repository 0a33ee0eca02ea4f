"""What a script-mode spec will do to its script, said before any job starts.

From the spec and what the script's source says (script_scan.py): the refusals (a hyperparameter
that an argparse `store_true` flag cannot take; a script that is not distributed on several
instances) and the warnings `bakeoff validate` prints and `bakeoff run` repeats at its start (how
many processes run the script and on how many of the instance's devices; a trn leg with no route to
PyTorch/XLA; a script that picks its device through `torch.accelerator`; CUDA a local run cannot
give; a module that neither the image nor requirements.txt provides, or that this Python lacks; a
requirements.txt line that takes packages from elsewhere than PyPI, refused when the jobs run with network
isolation and it needs the network or a path outside the source dir: requirements_file.py).

The facts it rests on:
* SageMaker's PyTorch toolkit starts a script once per instance unless a distribution is enabled,
  and with `torch_distributed` runs torchrun with one process per GPU or NeuronCore
  (aws/sagemaker-pytorch-training-toolkit d9298721 src/sagemaker_pytorch_container/training.py
  L78-95; aws/sagemaker-training-toolkit 33839372 src/sagemaker_training/torch_distributed.py
  L107-136, runner.py L76-87); `torch_distributed` is the only distribution the SageMaker Python
  SDK accepts on Trainium (sagemaker-python-sdk v2.257.6 fw_utils.py L164, L979-998).
* Hyperparameters become `--key value`, a boolean `str()`-ed to `True`/`False`
  (sagemaker-training-toolkit mapping.to_cmd_args L65-99; test_mapping.py L119).
* `torch.accelerator` reports CUDA, MTIA, XPU, HIP, MPS, HPU or a PrivateUse1 backend, never XLA
  (pytorch/pytorch docs/source/torch.rst, "Accelerators"; aten/src/ATen/DeviceAccelerator.cpp).
  TorchNeuron, the native backend for Trn2/Trn3 (Neuron 2.33, public beta), registers as PrivateUse1,
  and "code written against torch.accelerator selects Trainium without a change"
  (awsdocs-neuron torch/reference/api/torch-neuron-module.html, torch/about-pytorch-neuron.html).
"""
from __future__ import annotations

import re
import sys
from dataclasses import dataclass

from bakeoff.pipelines.errors import SpecError
from bakeoff.pipelines.plan.bundle import SHIPPED_FILES, Bundle
from bakeoff.pipelines.plan.requirements_file import Requirements, read
from bakeoff.pipelines.plan.script_scan import ScriptScan, process_model, scan
from bakeoff_runtime.contract.backend_table import row

ACCELERATOR_FIX = (
    "torch.accelerator does not see PyTorch/XLA, which torch-neuronx on trn1 is: the smallest change is to choose "
    "torch_xla.device() when asked, e.g. a `--device` option (`device = torch_xla.device() if args.device == "
    "\"xla\" else torch.accelerator.current_accelerator()`) that the trn leg sets with `arguments: [--device, xla]`; "
    "on trn2, TorchNeuron (backend `torchneuron`, Neuron 2.33 public beta) registers Trainium as a PrivateUse1 "
    "device, which torch.accelerator reports, so the script runs there unchanged")
# requirements.txt names whose module is called otherwise (distribution -> import name).
_IMPORT_NAMES = {"scikit_learn": "sklearn", "opencv_python": "cv2", "opencv_python_headless": "cv2", "pillow": "PIL",
                 "pyyaml": "yaml", "pyopenssl": "OpenSSL", "beautifulsoup4": "bs4", "protobuf": "google",
                 "python_dateutil": "dateutil", "faiss_cpu": "faiss", "faiss_gpu": "faiss", "hydra_core": "hydra",
                 "pytorch_lightning": "pytorch_lightning", "attrs": "attr", "tensorboardx": "tensorboardX",
                 "torch_xla": "torch_xla", "sentence_transformers": "sentence_transformers"}
_PIP_NAMES = {v: k.replace("_", "-") for k, v in _IMPORT_NAMES.items()}


@dataclass(frozen=True)
class ScriptFindings:
    distributed: bool
    why: str  # how the process model was decided, for `validate`
    warnings: tuple[str, ...]
    missing_here: tuple[str, ...]  # what this Python lacks that the script imports for certain (`bakeoff run` refuses)


def _error(spec, path: tuple, message: str) -> SpecError:
    from bakeoff.pipelines.spec.loader import locate

    file, line = locate(spec, path)
    return SpecError(message, file=file, line=line, field=".".join(str(p) for p in path))


def scan_of(bundle: Bundle) -> ScriptScan:
    return scan(bundle.files, bundle.script, SHIPPED_FILES)


def findings(spec, bundle: Bundle, local_gpu: bool = False) -> ScriptFindings:
    """The refusals (raised, located) and the warnings of a script-mode spec; nothing for a Runtime one."""
    if spec.entrypoint.mode != "script":
        return ScriptFindings(False, "", (), ())
    found = scan_of(bundle)
    distributed, why = process_model(spec, found)
    _refuse_flag_values(spec, found)
    warnings: list[str] = _package_sources(spec, bundle)
    for i, leg in enumerate(spec.legs):
        if not distributed and leg.instance_count > 1:
            raise _error(spec, ("legs", i, "instance_count"), (
                f"{why}, so SageMaker would start a copy of it on each of the {leg.instance_count} instances, each "
                "training alone; set entrypoint.script_mode.distributed: true if it runs under torchrun, or use "
                "instance_count: 1"))
        devices = leg.instance.devices
        if not distributed and devices > 1:
            single = sorted(n for n, inst in leg.kind.instances.items() if inst.devices == 1)
            smaller = f", or a one-device instance ({single[0]})" if single else ""
            warnings.append(f"leg {leg.name}: {why}, as SageMaker starts a script with no distribution, so it uses "
                            f"the devices one process uses (one, unless it spreads over them itself) of the {devices} "
                            f"of {leg.instance_type} the bill counts; set entrypoint.script_mode.distributed: true if "
                            f"it runs under torchrun{smaller}")
        warnings += _device_route(spec, leg, found, local_gpu)
    warnings += _configurator(spec, found)
    warnings += _unknown_arguments(spec, found)
    image_gaps, missing_here = _imports(spec, bundle, found)
    warnings += image_gaps
    warnings += [f"this Python ({sys.executable}) lacks {m}: `bakeoff run` cannot start the script here"
                 for m in missing_here]
    return ScriptFindings(distributed, why, tuple(warnings), tuple(missing_here))


def _refuse_flag_values(spec, found: ScriptScan) -> None:
    """A hyperparameter that becomes `--flag True` for an option that takes no value: argparse stops
    the script with "unrecognized arguments: True" (or "ignored explicit argument" for --flag=True)."""
    places: list[tuple[tuple, str, object]] = [(("hyperparameters", k), k, v) for k, v in spec.hyperparameters.items()]
    places += [(("legs", i, "hyperparameters", k), k, v) for i, leg in enumerate(spec.legs)
               for k, v in leg.hyperparameters.items()]
    seed = spec.entrypoint.script_mode.seed.argument
    for path, key, value in places:
        option = found.option_for_hyperparameter(key)
        if option is None or not option.takes_no_value or key == seed:
            continue
        shown = str(value) if not isinstance(value, str) else value
        flag = option.flags[-1] if option.flags[-1].startswith("--") else option.flags[0]
        put = (f"put `{flag}` in `arguments:` (every leg) or in a leg's `arguments:`" +
               ("" if option.action == "count" else ", and leave it out where it should be off"))
        raise _error(spec, path, (
            f"{key}: {value!r} reaches the script as `{flag} {shown}` (SageMaker passes every hyperparameter as "
            f"`--key value`), but {option.file}:{option.line} declares {flag} with action='{option.action}', which "
            f"takes no value: argparse would stop the script (\"unrecognized arguments: {shown}\"); {put}"))


def _mentions_xla(values) -> bool:
    return any(re.search(r"(^|[=\s:])xla\b", str(v)) for v in values)


def _device_route(spec, leg, found: ScriptScan, local_gpu: bool) -> list[str]:
    """How the script reaches the leg's device: a trn leg with no route to PyTorch/XLA, torch.accelerator
    on a trn leg, and CUDA insisted on where a local run has none."""
    out: list[str] = []
    name = found.script.rsplit("/", 1)[-1]
    backend = row(leg.backend_name)
    given = [*spec.arguments, *leg.arguments, *leg.environment.values(), *leg.hyperparameters.values()]
    if backend.torch_device == "xla":
        routes = found.xla or found.xla_frameworks or _mentions_xla(given)
        device_option = found.option("device")
        if found.accelerator:
            out.append(f"leg {leg.name}: {name} picks its device through torch.accelerator ({found.accelerator[0]}), "
                       f"so on {leg.instance_type} it would train on the host CPU and the verdict's backend check "
                       f"would fail it: {ACCELERATOR_FIX}")
        elif not routes:
            how = (f"give it `arguments: [{device_option.flags[-1]}, xla]` (the script's {device_option.flags[-1]} "
                   f"option, {device_option.file}:{device_option.line})" if device_option else
                   "make the script choose torch_xla.device() (an option the leg's `arguments:` set, say)")
            out.append(f"leg {leg.name} has no way to reach PyTorch/XLA, what torch-neuronx on {leg.instance_type} is: "
                       f"{name} never imports torch_xla nor names an `xla` device, and neither do the leg's arguments "
                       f"or environment, so it would train on the host CPU (the backend check would fail it); {how}")
    local = leg.local
    emulated_on_cpu = backend.accelerator == "gpu" and not local_gpu
    insists = [f for f in found.cuda if "option defaults" in f.what or not found.cuda_checked]
    if emulated_on_cpu and insists and not (local and (local.arguments or local.environment)):
        option = found.option("device")
        fix = (f"local: {{arguments: [{option.flags[-1]}, cpu]}}" if option and "option defaults" in insists[0].what
               else "local: {arguments: [...]} with what makes it use the CPU")
        out.append(f"leg {leg.name}: `bakeoff run` runs it on this machine's CPU (no GPU here), but {name} insists on "
                   f"CUDA ({insists[0]}): give the leg `{fix}` (used by `bakeoff run` only, never deployed)")
    return out


def _configurator(spec, found: ScriptScan) -> list[str]:
    sm = spec.entrypoint.script_mode
    if found.keyvalue_configurator and sm.argument_style != "equals" and \
            (spec.hyperparameters or any(leg.hyperparameters for leg in spec.legs)):
        return [f"{found.keyvalue_configurator[0]}: its hyperparameters should arrive as `--key=value`; set "
                "entrypoint.script_mode.argument_style: equals"]
    return []


def _unknown_arguments(spec, found: ScriptScan) -> list[str]:
    """Options the spec gives that the script's parser does not declare (argparse stops at them)."""
    if not found.options or spec.entrypoint.script_mode.argument_style == "equals":
        return []
    flags = {f for o in found.options for f in o.flags}
    given = {f"--{k}" if len(k) > 1 else f"-{k}" for k in spec.hyperparameters}
    given |= {f"--{k}" if len(k) > 1 else f"-{k}" for leg in spec.legs for k in leg.hyperparameters}
    seed = spec.entrypoint.script_mode.seed.argument
    if seed:
        given.add(f"--{seed}" if len(seed) > 1 else f"-{seed}")
    given |= {a.split("=", 1)[0] for a in [*spec.arguments, *(a for leg in spec.legs for a in leg.arguments)]
              if a.startswith("-")}
    # argparse also takes an unambiguous prefix of a long option
    unknown = sorted(g for g in given if g not in flags and not (
        g.startswith("--") and len([f for f in flags if f.startswith(g)]) == 1))
    if not unknown:
        return []
    name = found.script.rsplit("/", 1)[-1]
    return [f"{name}'s parser declares no {', '.join(unknown)} (it has {', '.join(sorted(flags))}): argparse would "
            "stop it with \"unrecognized arguments\""]


def _requirements_file(bundle: Bundle) -> Requirements | None:
    """requirements.txt beside the script (what the job's pip installs), and the files it includes."""
    folder = bundle.script.rsplit("/", 1)[0] + "/" if "/" in bundle.script else ""
    files = dict(bundle.files)
    name = f"{folder}requirements.txt"
    return read(files, name) if name in files else None


def _requirements(bundle: Bundle) -> set[str]:
    """The modules requirements.txt beside the script provides (import names, by its distribution names)."""
    found = _requirements_file(bundle)
    out = set()
    for name in found.names if found else ():
        dist = name.lower().replace("-", "_").replace(".", "_")
        out.add(_IMPORT_NAMES.get(dist, dist))
    return out


def _package_sources(spec, bundle: Bundle) -> list[str]:
    """requirements.txt's lines that take packages from elsewhere than PyPI: a warning, or a refusal when the jobs
    run with network isolation and a line needs the network or a path outside the source dir (pip could reach
    neither: CreateTrainingJob's EnableNetworkIsolation, security.network_isolation)."""
    if not spec.entrypoint.script_mode.install_requirements:
        return []  # not installed: what it says is not what the jobs run
    found = _requirements_file(bundle)
    if found is None or not found.sources:
        return []
    unreachable = [s for s in found.sources if s.beyond]
    if spec.security.network_isolation and unreachable:
        more = f" (and {len(unreachable) - 1} more)" if len(unreachable) > 1 else ""
        raise _error(spec, ("security", "network_isolation"), (
            f"the jobs run with network isolation, but {unreachable[0]}{more} takes packages from where an isolated "
            "job cannot reach: put those packages' wheels in a wheels/ folder beside requirements.txt (`pip download "
            "-d wheels ...`) and list them by name (`lib==1.2`) instead, or set "
            "entrypoint.script_mode.install_requirements: false if the image has them"))
    shown = "; ".join(str(s) for s in found.sources[:4])
    more = f"; and {len(found.sources) - 4} more" if len(found.sources) > 4 else ""
    return [f"requirements.txt takes packages from elsewhere than PyPI: {shown}{more}; every job's pip installs "
            "from there as it starts: check each is a source you trust"]


def _imports(spec, bundle: Bundle, found: ScriptScan) -> tuple[list[str], list[str]]:
    """(an image lacks it, this Python lacks it): each third-party module the script imports for
    certain (not under a caught ImportError, nor in a branch some runs skip) that requirements.txt
    does not list."""
    from importlib.util import find_spec

    from bakeoff.estimators.images import NoDefaultImage, default_image
    from bakeoff.pipelines.plan.packages import INSTALLABLE

    listed = {m.lower() for m in _requirements(bundle)}
    certain: dict[str, str] = {}
    for imp in found.imports:
        if imp.guarded or imp.conditional or imp.module in found.local_modules \
                or imp.module in sys.stdlib_module_names or imp.module in ("bakeoff_runtime", "__future__"):
            continue
        certain.setdefault(imp.module, f"{imp.file}:{imp.line}")
    image_gaps: list[str] = []
    for leg in spec.legs:
        if leg.image:
            continue  # a user's image is taken as given
        try:
            image = default_image(leg.backend_name)
        except NoDefaultImage:
            continue
        lacking = [m for m in certain if m not in image.imports and m.lower() not in listed and m not in INSTALLABLE]
        if lacking:
            image_gaps.append(
                f"leg {leg.name}: the script imports {', '.join(f'{m} ({certain[m]})' for m in lacking)}, which AWS's "
                f"{image.repository}:{image.tag} image does not have and requirements.txt does not list: the job "
                "would stop at ModuleNotFoundError; list it in a requirements.txt beside the script")
    missing_here = []
    for module, where in certain.items():
        try:
            present = find_spec(module) is not None
        except (ImportError, ValueError):
            present = False
        if not present:
            pip = _PIP_NAMES.get(module, module)
            missing_here.append(f"{module} ({where}; `{sys.executable} -m pip install {pip}`"
                                + (", or `-r requirements.txt`" if module.lower() in listed else "") + ")")
    return image_gaps, missing_here
