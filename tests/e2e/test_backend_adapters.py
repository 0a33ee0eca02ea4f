"""The container's backend adapters (bakeoff_runtime.training.backends, which import torch) are the backend
table's: the rest of what follows from a row is in tests/unit/test_backend_table.py."""
import dataclasses
import importlib

import pytest

from bakeoff_runtime.contract.backend_table import BACKENDS, row

NAMES = list(BACKENDS)


def test_the_container_registry_is_the_tables_adapters():
    from bakeoff_runtime.training import backends

    assert {name: r.adapter for name, r in BACKENDS.items()} == backends.REGISTRY
    with pytest.raises(ValueError, match="unknown backend 'tpu'"):
        backends.get_backend("tpu")


@pytest.mark.parametrize("name", NAMES)
def test_each_adapter_is_its_rows(name):
    module, _, cls = row(name).adapter.partition(":")
    adapter = getattr(importlib.import_module(module), cls)
    assert adapter.name == name
    assert adapter.autocast_device_type == row(name).torch_device


def test_a_new_row_finds_its_adapter_through_the_row(monkeypatch):
    from bakeoff_runtime.training.backends import get_backend

    # A CPU copy: no CUDA device needed here.
    monkeypatch.setitem(BACKENDS, "cpu2", dataclasses.replace(row("cpu"), name="cpu2"))
    assert get_backend("cpu2").device().type == "cpu"
