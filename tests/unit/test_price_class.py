"""`bakeoff validate` warns about a baseline of another price class and about a region that
does not sell a leg's instance type; specs made not to trigger them stay quiet."""
import json

import pytest

from bakeoff.pipelines.advice.price_class import PRICE_CLASS_RATIO, nearest_gpu, price_class_warnings
from bakeoff.pipelines.advice.price_list import parse_regions
from bakeoff.pipelines.advice.regions import SNAPSHOT, offered, region_warnings
from bakeoff.pipelines.spec.loader import load_spec
from conftest import tiny_spec, write_spec


@pytest.fixture(autouse=True)
def empty_cache(tmp_path, monkeypatch):
    """No Price List cache of the developer's machine leaks in: the bundled data decides."""
    monkeypatch.setenv("BAKEOFF_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


def _spec(tmp_path, **over):
    data = tiny_spec(**over)
    data["training"]["global_batch_size"] = 64  # divisible by trn1.32xlarge's 32 devices
    return load_spec(write_spec(tmp_path / "spec.yaml", data)), data


def _legs(trn="ml.trn1.32xlarge", gpu="ml.p4d.24xlarge"):
    return [{"name": "trn1", "instance_type": trn, "backend": "neuron", "precision": "fp32"},
            {"name": "p4d", "instance_type": gpu, "backend": "cuda", "precision": "fp32"}]


def test_similar_price_class_is_quiet(tmp_path):
    spec, _ = _spec(tmp_path, legs=_legs())  # 21.50 vs 21.96 USD/h in the bundled table
    assert price_class_warnings(spec) == []


def test_small_trn_against_p4d_warns_and_suggests_the_nearest_gpu(tmp_path):
    spec, _ = _spec(tmp_path, legs=_legs(trn="ml.trn1.2xlarge"))  # 1.34 vs 21.96 USD/h
    [line] = price_class_warnings(spec)
    assert "leg trn1 (ml.trn1.2xlarge" in line and "baseline p4d" in line
    assert f"beyond {PRICE_CLASS_RATIO:g}x" in line
    # 1.34 USD/h: the nearest catalog GPU is ml.g5.xlarge (1.408) before ml.g6.xlarge (1.127).
    assert "nearest to trn1's price is ml.g5.xlarge" in line


def test_price_override_moves_a_leg_into_the_baselines_class(tmp_path):
    legs = _legs(trn="ml.trn1.2xlarge")
    legs[1]["price_per_hour"] = 2.0
    spec, _ = _spec(tmp_path, legs=legs)
    assert price_class_warnings(spec) == []


def test_nearest_gpu_is_by_ratio_and_skips_the_current_instance():
    assert nearest_gpu(21.5).instance_type == "ml.p4d.24xlarge"
    assert nearest_gpu(21.5, exclude="ml.p4d.24xlarge").instance_type == "ml.p4de.24xlarge"


def test_region_without_trainium_warns_and_names_regions_that_have_it(tmp_path):
    spec, _ = _spec(tmp_path, legs=_legs(), storage={"region": "eu-west-1"})
    [line] = region_warnings(spec)  # p4d is sold in eu-west-1, trn1 is not
    assert "leg trn1: ml.trn1.32xlarge is not offered in eu-west-1" in line
    assert "us-east-1, us-east-2, us-west-2" in line and SNAPSHOT["ml.trn1.32xlarge"][0] in line


def test_region_that_has_both_is_quiet(tmp_path):
    spec, _ = _spec(tmp_path, legs=_legs(), storage={"region": "us-west-2"})
    assert region_warnings(spec) == []


def test_unknown_instance_availability_gives_no_warning(tmp_path):
    legs = _legs()
    legs[1] = {"name": "g5", "instance_type": "ml.g5.xlarge", "backend": "cuda", "precision": "fp32"}
    spec, _ = _spec(tmp_path, legs=legs, storage={"region": "us-west-2"}, parity={"metric": "val_loss",
                                                                               "margin": 0.2, "baseline": "g5"})
    assert offered("ml.g5.xlarge", "us-west-2")[0] is None
    assert region_warnings(spec) == []


def _product(instance, region, kind="Training", usd="1.0"):
    return json.dumps({"product": {"attributes": {"instanceName": instance, "regionCode": region,
                                                  "platoinstancetype": kind}},
                       "terms": {"OnDemand": {"t": {"priceDimensions": {"d": {"unit": "Hrs",
                                                                              "pricePerUnit": {"USD": usd}}}}}}})


def test_price_list_cache_of_the_region_overrides_the_snapshot(tmp_path, empty_cache):
    # The Price List says us-west-2 has no trn1 training rows: that wins over the snapshot.
    empty_cache.mkdir(parents=True)
    (empty_cache / "prices-us-west-2.json").write_text(json.dumps({
        "source": "AWS Price List API", "region": "us-west-2", "fetched_at": "2026-11-01T00:00:00+00:00",
        "prices": {"ml.p4d.24xlarge": {"on_demand": 30.0}}}))
    spec, _ = _spec(tmp_path, legs=_legs(), storage={"region": "us-west-2"})
    [line] = region_warnings(spec)
    assert "ml.trn1.32xlarge is not offered in us-west-2" in line and "2026-11-01" in line
    # ...and its price feeds the price class: 21.50 vs 30.0 is within 2x.
    assert price_class_warnings(spec, {"ml.p4d.24xlarge": {"usd_per_hour": 30.0}}) == []


def test_parse_regions_keeps_priced_training_rows_only():
    rows = [_product("ml.trn1.32xlarge", "us-east-1"), _product("ml.trn1.32xlarge", "us-west-2"),
            _product("ml.trn1.32xlarge", "eu-west-1", kind="Hosting"),
            _product("ml.trn1.32xlarge", "ap-south-1", usd="0.0000000000")]
    assert parse_regions(rows) == {"ml.trn1.32xlarge": ["us-east-1", "us-west-2"]}


def test_availability_cache_is_used_when_present(tmp_path, empty_cache):
    empty_cache.mkdir(parents=True)
    (empty_cache / "training-availability.json").write_text(json.dumps({
        "source": "AWS Price List API", "fetched_at": "2026-11-02T00:00:00+00:00",
        "regions": {"ml.trn1.32xlarge": ["ap-northeast-1", "us-east-1"]}}))
    ok, found, basis = offered("ml.trn1.32xlarge", "ap-northeast-1")
    assert ok is True and "2026-11-02" in basis and found.regions == ("ap-northeast-1", "us-east-1")


def test_validate_prints_both_warnings(tmp_path, empty_cache, cli):
    path = write_spec(tmp_path / "spec.yaml", tiny_spec(legs=_legs(trn="ml.trn1.2xlarge"),
                                                        storage={"region": "eu-west-1"}))
    big = tiny_spec(legs=_legs(), storage={"region": "us-east-1"})
    big["training"]["global_batch_size"] = 64
    out = cli("validate", path, env={"BAKEOFF_CACHE_DIR": str(empty_cache)})
    assert out.returncode == 0, out.stderr
    assert "warning: price class: leg trn1" in out.stdout
    assert "warning: region: leg trn1: ml.trn1.2xlarge is not offered in eu-west-1" in out.stdout
    quiet = write_spec(tmp_path / "quiet.yaml", big)
    out = cli("validate", quiet, env={"BAKEOFF_CACHE_DIR": str(empty_cache)})
    assert out.returncode == 0, out.stderr
    assert "price class" not in out.stdout and "region:" not in out.stdout


def test_refresh_availability_asks_for_training_rows_per_instance_and_caches_them(empty_cache):
    from bakeoff.pipelines.advice.price_list import cached_availability, refresh_availability

    calls = []

    class Pricing:
        def get_products(self, **kw):
            calls.append(kw)
            name = next(f["Value"] for f in kw["Filters"] if f["Field"] == "instanceName")
            if "NextToken" not in kw:
                return {"PriceList": [_product(name, "us-east-1")], "NextToken": "page2"}
            return {"PriceList": [_product(name, "us-west-2")]}

    class Session:
        def client(self, service, region_name=None, config=None):
            assert service == "pricing" and region_name == "us-east-1"
            return Pricing()

    body = refresh_availability(["ml.trn1.32xlarge"], session=Session())
    assert body["regions"] == {"ml.trn1.32xlarge": ["us-east-1", "us-west-2"]}
    assert {"Type": "TERM_MATCH", "Field": "platoinstancetype", "Value": "Training"} in calls[0]["Filters"]
    assert len(calls) == 2 and calls[1]["NextToken"] == "page2"
    assert cached_availability()["regions"] == body["regions"] and cached_availability()["fetched_at"]


def test_a_sweep_size_is_checked_for_its_region_too(tmp_path):
    legs = _legs(gpu="ml.p4d.24xlarge")
    legs[1]["scaling"] = [{"instance_type": "ml.p5.48xlarge", "instance_count": 1}]
    spec, _ = _spec(tmp_path, legs=legs, storage={"region": "us-east-1"})
    assert region_warnings(spec) == []  # p5 has no snapshot row: nothing known, nothing said
    legs[0]["scaling"] = [{"instance_type": "ml.trn1.32xlarge", "instance_count": 2}]
    spec, _ = _spec(tmp_path, legs=legs, storage={"region": "eu-west-1"})
    assert [w.split(":")[1].strip() for w in region_warnings(spec)] == ["leg trn1", "leg trn1-x2"]
