"""The image catalog: which AWS Deep Learning Container a backend runs, in which region.

Every row names where it was looked up. A user's explicit `image:` on a leg is taken
as given; these are only the defaults. `bakeoff images` prints this table and
`tests/unit/test_images.py` checks it against the snapshot of AWS's published list kept
in `tests/assets/dlc_published_tags.json`.

Sources, looked up 2026-12-02:
- NEURON_DLC: aws-neuron/deep-learning-containers README.md, section pytorch-training-neuronx
  (HEAD 2be9ed1d, 2026-08-17), and aws/deep-learning-containers
  docs/src/data/pytorch-training-neuronx/2.9-neuronx-sdk*.yml, from which available_images.md
  is generated (HEAD e0ecedea, 2026-08-21). PyTorch 2.9.0 is published only for py312.
- NEURON_EOL: aws-neuron/aws-neuron-sdk about-neuron/announcements/neuron2.x/
  announce-no-longer-publish-pytorch-training-dlc.rst (2026-06-28): "Starting with Neuron SDK
  2.31.0, the PyTorch/XLA training Deep Learning Container (pytorch-training-neuronx) is no
  longer published"; sdk2.30.0 is the last.
- NEURON_2_30_DRIVER: aws-neuron/aws-neuron-sdk release-notes/components/containers.rst, 2.30.0
  known issues: its runtime library 2.32 "is not backward-compatible with Neuron Driver 2.26 or
  earlier on the host". SageMaker's host driver is not documented, hence sdk2.29.1 by default.
- PYTORCH_DLC: aws/deep-learning-containers docs/src/data/pytorch-training/2.9-{gpu,cpu}-sagemaker.yml
  (last changed a913958f, 2026-05-20): GA 2025-10-15, end of patch 2026-10-15.
- REGISTRIES: the SageMaker Python SDK's image_uri_config/pytorch.json (sagemaker-core 2.27.0 on
  PyPI), training.versions["2.9.0"].registries; every region it shares with aws/deep-learning-
  containers docs/reference/region_availability.md (19c7d1f1, 2026-08-10) has the same account.
  The SDK has no 2.9 Neuron training config; its only pytorch-training-neuronx entry
  (hyperpod-recipes-neuron.json) uses the same account in every region, so Neuron images take it too.
- DNS suffix and partition: botocore data/endpoints.json (amazonaws.com, amazonaws.com.cn for aws-cn).
- NEURON_TRANSFORMERS: aws-neuron/deep-learning-containers tag 2.29.1, common/nxdt_requirements.txt
  (installed into the pytorch-training-neuronx image): `transformers==4.56.*`.
- PYTORCH_DLC_PACKAGES: aws/deep-learning-containers pytorch/training/docker/2.9/py3/cu130/Dockerfile.gpu
  (959ce8a4) installs torch, torchvision, torchaudio, torchtnt, torchdata, triton, s3torchconnector, fastai,
  accelerate, spacy and others, and no transformers; the CPU image likewise.
- PYTORCH_DLC_IMPORTS: what a script can import in the 2.9 GPU and CPU images, from their Dockerfiles'
  pip installs (aws/deep-learning-containers branch master f06ada0e, pytorch/training/docker/2.9/py3/cu130/
  Dockerfile.gpu L84-149 and L256-298, py3/Dockerfile.cpu L163-322, both last changed 959ce8a4; built with
  `target: sagemaker` by pytorch/training/buildspec-2-9-sm.yml L44-75) and the dependencies their package
  metadata names (sagemaker-training 5.1.4, torchtnt 0.2.4, fastai 2.8.12, accelerate 1.16, smclarify 0.5).
- NEURON_DLC_IMPORTS: the same for pytorch-training-neuronx 2.9.0 sdk2.29.1 (aws-neuron/deep-learning-
  containers tag 2.29.1 = 12641304, pytorch/training/2.9.0/Dockerfile.neuronx L126-302 and
  common/nxdt_requirements.txt L1-50).
- TORCHNEURON: aws-neuron/aws-neuron-sdk frameworks/torch/pytorch-native-overview.rst (2026-05-29):
  TorchNeuron is a closed beta on Trn2/Trn3; no container image for it is published (none in
  NEURON_DLC nor in aws/deep-learning-containers).
"""
from __future__ import annotations

from dataclasses import dataclass

from bakeoff_runtime.contract.backend_table import BACKENDS

LOOKED_UP = "2026-12-02"


@dataclass(frozen=True)
class Image:
    """One published training image (a repository and tag in AWS's DLC registries)."""

    backend: str
    repository: str
    tag: str
    framework: str
    python: str
    detail: str
    source: str
    default: bool = False
    note: str = ""
    # Python packages a training script may import that the image has (NEURON_TRANSFORMERS,
    # PYTORCH_DLC_PACKAGES): a job whose image lacks one installs bakeoff's pin of it at start.
    ships: tuple[str, ...] = ()
    # Every top-level module a script can import without installing anything (PYTORCH_DLC_IMPORTS,
    # NEURON_DLC_IMPORTS): `validate` names an import that is neither here nor in requirements.txt.
    imports: frozenset[str] = frozenset()
    # The last day AWS patches the image (PYTORCH_DLC's eop), or the day the line stopped (NEURON_EOL): after
    # it the image gets no security fixes, and a platform account's image scanning will flag it.
    end_of_patch: str | None = None

    def unpatched_on(self, day: str) -> bool:
        """Whether the image is past its end of patch on `day` (YYYY-MM-DD)."""
        return self.end_of_patch is not None and day > self.end_of_patch

    def uri(self, region: str) -> str:
        return f"{registry_account(region)}.dkr.ecr.{region}.{dns_suffix(region)}/{self.repository}:{self.tag}"


# PYTORCH_DLC_IMPORTS: the GPU image's top-level modules (the CPU image lacks the CUDA-only ones).
_PYTORCH_COMMON = frozenset((
    "Cython", "cryptography", "OpenSSL", "pybind11", "parso", "packaging", "yaml", "numpy", "scipy", "click", "psutil",
    "IPython", "ipykernel", "PIL", "h5py", "fsspec", "idna", "tqdm", "requests", "setuptools", "urllib3", "pyasn1",
    "wheel", "cv2", "mpi4py", "jinja2", "tornado", "filelock", "tzdata", "torch", "torchvision", "torchaudio",
    "torchtnt", "torchdata", "s3torchconnector", "fastai", "fastcore", "accelerate", "spacy", "thinc", "blis", "s3fs",
    "awscli", "boto3", "botocore", "s3transfer", "smclarify", "sagemaker", "smexperiments",
    "sagemaker_pytorch_container", "sagemaker_training", "sniffio", "bokeh", "imageio", "numba", "pandas", "plotly",
    "shap", "sklearn", "seaborn",
    "cloudpickle", "langcodes", "black", "tensorboard", "matplotlib", "fastprogress", "fastdownload",
    "huggingface_hub", "safetensors", "pyarrow", "sagemaker_core", "omegaconf", "google", "attr", "attrs", "docker",
    "fastapi", "uvicorn", "llvmlite", "gevent", "werkzeug", "paramiko", "retrying", "six", "inotify_simple", "sympy",
    "networkx", "typing_extensions", "pip"))
PYTORCH_GPU_IMPORTS = _PYTORCH_COMMON | {"triton", "ninja", "flash_attn", "transformer_engine", "nvidia"}
PYTORCH_CPU_IMPORTS = _PYTORCH_COMMON
# NEURON_DLC_IMPORTS
NEURON_IMPORTS = frozenset((
    "scipy", "click", "cryptography", "sagemaker", "sagemaker_pytorch_container", "sagemaker_training", "psutil",
    "dataset", "PIL", "uv", "attr", "attrs", "etcd", "bokeh", "imageio", "cv2", "plotly", "seaborn", "shap", "graphviz",
    "tensorboard", "accelerate", "Cython", "wheel", "torch_neuronx", "neuronxcc", "neuronx_distributed", "nki",
    "neuronx_distributed_training", "apex", "hydra", "omegaconf", "yaml", "torchmetrics", "transformers", "wandb",
    "webdataset", "pandas", "sentencepiece", "youtokentome", "h5py", "ijson", "matplotlib", "sacremoses", "sacrebleu",
    "einops", "faiss", "sentence_transformers", "nltk", "jieba", "ftfy", "gdown", "inflect", "opencc", "pangu",
    "rapidfuzz", "pybind11", "pytorch_lightning", "lightning", "ipadic", "MeCab", "google", "datasets", "dill", "nemo",
    "regex", "requests", "daemon", "huggingface_hub", "multiprocess", "numba", "rouge_score", "setuptools",
    "ml_dtypes", "boto3", "botocore", "s3transfer", "s3fs", "numpy", "megatron", "torch", "torchvision", "torch_xla",
    "libneuronxla", "sklearn", "safetensors", "tokenizers", "pyarrow", "sagemaker_core", "onnx", "ruamel", "pip"))


def _neuron(sdk: str, default: bool = False, note: str = "") -> Image:
    # No end-of-patch date: AWS announced that no pytorch-training-neuronx image is published after SDK 2.30.0
    # (NEURON_EOL), not a date after which these tags stop being patched.
    return Image("neuron", "pytorch-training-neuronx", f"2.9.0-neuronx-py312-sdk{sdk}-ubuntu24.04", "PyTorch 2.9.0",
                 "py312", f"Neuron SDK {sdk}, Ubuntu 24.04", "NEURON_DLC", default, note, ships=("transformers",),
                 imports=NEURON_IMPORTS)


CATALOG: tuple[Image, ...] = (
    _neuron("2.27.1"),
    _neuron("2.28.0"),
    _neuron("2.29.0"),
    _neuron("2.29.1", default=True, note="default: the newest without 2.30.0's host-driver requirement"),
    _neuron("2.30.0", note="last pytorch-training-neuronx ever published (NEURON_EOL); needs a host Neuron driver "
                           "newer than 2.26 (NEURON_2_30_DRIVER)"),
    Image("cuda", "pytorch-training", "2.9.0-gpu-py312-cu130-ubuntu22.04-sagemaker", "PyTorch 2.9.0", "py312",
          "CUDA 13.0, Ubuntu 22.04", "PYTORCH_DLC", default=True,
          note="PyTorch 2.9 to match the last Neuron training image; AWS's end of patch was 2026-10-15",
          imports=PYTORCH_GPU_IMPORTS, end_of_patch="2026-10-15"),
    Image("cpu", "pytorch-training", "2.9.0-cpu-py312-ubuntu22.04-sagemaker", "PyTorch 2.9.0", "py312",
          "Ubuntu 22.04; python3 and boto3 (also runs the Evaluate step)", "PYTORCH_DLC", default=True,
          note="end of patch 2026-10-15", imports=PYTORCH_CPU_IMPORTS, end_of_patch="2026-10-15"),
)

# region -> DLC registry account (REGISTRIES). Regions not listed have no DLC registry.
REGISTRY_ACCOUNTS: dict[str, str] = {
    "af-south-1": "626614931356", "ap-east-1": "871362719292", "ap-east-2": "975050140332",
    "ap-northeast-1": "763104351884", "ap-northeast-2": "763104351884", "ap-northeast-3": "364406365360",
    "ap-south-1": "763104351884", "ap-south-2": "772153158452", "ap-southeast-1": "763104351884",
    "ap-southeast-2": "763104351884", "ap-southeast-3": "907027046896", "ap-southeast-4": "457447274322",
    "ap-southeast-5": "550225433462", "ap-southeast-6": "633930458069", "ap-southeast-7": "590183813437",
    "ca-central-1": "763104351884", "ca-west-1": "204538143572", "cn-north-1": "727897471807",
    "cn-northwest-1": "727897471807", "eu-central-1": "763104351884", "eu-central-2": "380420809688",
    "eu-north-1": "763104351884", "eu-south-1": "692866216735", "eu-south-2": "503227376785",
    "eu-west-1": "763104351884", "eu-west-2": "763104351884", "eu-west-3": "763104351884",
    "il-central-1": "780543022126", "me-central-1": "914824155844", "me-south-1": "217643126080",
    "mx-central-1": "637423239942", "sa-east-1": "763104351884", "us-east-1": "763104351884",
    "us-east-2": "763104351884", "us-gov-east-1": "446045086412", "us-gov-west-1": "442386744353",
    "us-west-1": "763104351884", "us-west-2": "763104351884",
}

SOURCES = {
    "PYTORCH_DLC_IMPORTS": "aws/deep-learning-containers master f06ada0e pytorch/training/docker/2.9/py3/cu130/"
                           "Dockerfile.gpu and py3/Dockerfile.cpu (959ce8a4), target sagemaker",
    "NEURON_DLC_IMPORTS": "aws-neuron/deep-learning-containers tag 2.29.1 (12641304) pytorch/training/2.9.0/"
                          "Dockerfile.neuronx and common/nxdt_requirements.txt",
    "NEURON_DLC": "aws-neuron/deep-learning-containers README (2be9ed1d, 2026-08-17); aws/deep-learning-containers "
                  "docs/src/data/pytorch-training-neuronx/2.9-neuronx-sdk*.yml (e0ecedea, 2026-08-21)",
    "PYTORCH_DLC": "aws/deep-learning-containers docs/src/data/pytorch-training/2.9-{gpu,cpu}-sagemaker.yml "
                   "(a913958f, 2026-05-20)",
    "REGISTRIES": "SageMaker Python SDK image_uri_config/pytorch.json (sagemaker-core 2.27.0), training 2.9.0",
    "NEURON_EOL": "aws-neuron/aws-neuron-sdk announce-no-longer-publish-pytorch-training-dlc.rst (2026-06-28)",
    "NEURON_2_30_DRIVER": "aws-neuron/aws-neuron-sdk release-notes/components/containers.rst, 2.30.0 known issues",
}


class NoDefaultImage(ValueError):
    """The backend has no published image; the leg must name one."""


def partition(region: str) -> str:
    if region.startswith("cn-"):
        return "aws-cn"
    if region.startswith("us-gov-"):
        return "aws-us-gov"
    return "aws"


def dns_suffix(region: str) -> str:
    return "amazonaws.com.cn" if partition(region) == "aws-cn" else "amazonaws.com"


def registry_account(region: str) -> str:
    try:
        return REGISTRY_ACCOUNTS[region]
    except KeyError:
        raise NoDefaultImage(f"AWS publishes no Deep Learning Containers in region {region!r}; give the leg an "
                             "`image:` from a registry in that region") from None


def default_image(backend: str) -> Image:
    known = BACKENDS.get(backend)
    if known is not None and known.no_image:
        raise NoDefaultImage(f"backend {backend!r} {known.no_image}; give the leg an explicit `image:`")
    for image in CATALOG:
        if image.backend == backend and image.default:
            return image
    raise NoDefaultImage(f"no default image for backend {backend!r}; give the leg an explicit `image:`")


def default_image_uri(backend: str, region: str) -> str:
    return default_image(backend).uri(region)


def image_region(uri: str) -> str | None:
    """The region of an ECR image URI (ACCOUNT.dkr.ecr.REGION.amazonaws.com/...), or None."""
    host = uri.split("/", 1)[0]
    parts = host.split(".")
    if len(parts) >= 6 and parts[1:3] == ["dkr", "ecr"]:
        return parts[3]
    return None
