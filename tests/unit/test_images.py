"""The image catalog against AWS's published list (a snapshot in tests/assets), and the
synthesized pipelines naming only published images, from the right region's registry."""
import json

import pytest

from bakeoff.estimators import images
from bakeoff.pipelines.errors import SpecError
from bakeoff.pipelines.sagemaker.compiler import compile_pipeline
from bakeoff.pipelines.spec.loader import load_spec
from conftest import ROOT, tiny_spec, write_spec

SNAPSHOT = json.loads((ROOT / "tests" / "assets" / "dlc_published_tags.json").read_text())
QUICKSTART = ROOT / "examples" / "quickstart.yaml"


def _uris(definition):
    out = []

    def walk(steps):
        for s in steps:
            args = s.get("Arguments", {})
            if "AlgorithmSpecification" in args:
                out.append(args["AlgorithmSpecification"]["TrainingImage"])
            if "AppSpecification" in args:
                out.append(args["AppSpecification"]["ImageUri"])
            walk(args.get("IfSteps", []) + args.get("ElseSteps", []))
    walk(definition["Steps"])
    return out


def _published(uri):
    repo, tag = uri.split("/", 1)[1].split(":")
    return tag in SNAPSHOT.get(repo, [])


def test_every_catalog_image_is_in_awss_published_list():
    for image in images.CATALOG:
        assert image.tag in SNAPSHOT[image.repository], image
    defaults = {i.backend for i in images.CATALOG if i.default}
    assert defaults == {"neuron", "cuda", "cpu"}
    # the tag an earlier release pinned, and that AWS never published
    assert "2.9.0-neuronx-py310-sdk2.27.0-ubuntu24.04" not in SNAPSHOT["pytorch-training-neuronx"]


@pytest.mark.parametrize("region", ["us-east-1", "us-west-2", "af-south-1", "eu-south-1"])
def test_the_synthesized_quickstart_names_only_published_images_of_its_region(region):
    compiled = compile_pipeline(load_spec(QUICKSTART), region=region)
    uris = _uris(compiled.definition)
    assert len(uris) == 10 + 1  # 10 training jobs and the Evaluate step
    account = SNAPSHOT["registry_accounts_differing_from_763104351884"].get(region, "763104351884")
    for uri in uris:
        assert _published(uri), uri
        assert uri.startswith(f"{account}.dkr.ecr.{region}.amazonaws.com/"), uri


def test_china_regions_use_their_dns_suffix_and_registry():
    assert images.default_image_uri("cuda", "cn-north-1").startswith(
        "727897471807.dkr.ecr.cn-north-1.amazonaws.com.cn/pytorch-training:")
    assert images.partition("cn-north-1") == "aws-cn" and images.partition("us-gov-west-1") == "aws-us-gov"


def test_an_explicit_image_is_taken_as_given_but_must_be_in_the_pipelines_region(tmp_path):
    mine = "123456789012.dkr.ecr.us-east-1.amazonaws.com/my-neuron:1"
    data = tiny_spec()
    data["legs"][0]["image"] = mine
    spec = load_spec(write_spec(tmp_path / "s.yaml", data))
    assert _uris(compile_pipeline(spec).definition)[0] == mine
    data["storage"] = {"region": "eu-west-1"}
    with pytest.raises(SpecError) as err:
        load_spec(write_spec(tmp_path / "s.yaml", data))
    assert err.value.field == "legs[0].image" and "pulls images only from its own region" in err.value.message
    with pytest.raises(SpecError, match="pulls images only from its own region"):
        compile_pipeline(spec, region="eu-west-1")


def test_an_unknown_region_is_refused_with_the_nearest(tmp_path):
    data = tiny_spec(storage={"region": "eu-westt-1"})
    with pytest.raises(SpecError) as err:
        load_spec(write_spec(tmp_path / "s.yaml", data))
    assert err.value.field == "storage.region" and "did you mean 'eu-west-1'" in err.value.message


def test_bakeoff_images_prints_the_table_with_sources(cli):
    proc = cli("images", "--region", "af-south-1")
    assert proc.returncode == 0, proc.stderr
    assert "626614931356.dkr.ecr.af-south-1.amazonaws.com/pytorch-training-neuronx:2.9.0-neuronx-py312-sdk2.29.1" \
           in proc.stdout
    assert "aws-neuron/deep-learning-containers" in proc.stdout
    rows = json.loads(cli("images", "--json").stdout)
    assert {r["backend"] for r in rows if r["default"]} == {"neuron", "cuda", "cpu"}


def test_images_past_awss_end_of_patch_are_said_to_be():
    """The PyTorch 2.9 GPU/CPU images' patching ended 2026-10-15 (PYTORCH_DLC): after that day `images` says
    so, in its rows and its text; before it, not."""
    from bakeoff.estimators.images import CATALOG

    cuda = next(i for i in CATALOG if i.backend == "cuda" and i.default)
    assert cuda.end_of_patch == "2026-10-15"
    assert cuda.unpatched_on("2026-10-16") and not cuda.unpatched_on("2026-10-15")
    assert not any(i.unpatched_on("2099-01-01") for i in CATALOG if i.backend == "neuron")  # no date AWS gave
