"""The schema editors use (the `yaml-language-server` line of every example) is `bakeoff schema`'s."""
import json
import re
from unittest import mock

import pytest
import yaml

from conftest import ROOT

SCHEMA = ROOT / "bakeoff.schema.json"
EXAMPLES = (sorted((ROOT / "examples").glob("*.yaml"))
            + sorted((ROOT / "pipelines" / "cli" / "templates").glob("*/*.yaml")))


def test_committed_schema_is_what_bakeoff_schema_writes(cli):
    proc = cli("schema")
    assert proc.returncode == 0
    assert SCHEMA.read_text() == proc.stdout, "run `bakeoff schema -o bakeoff.schema.json` and commit it"


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_example_points_at_the_schema_and_passes_it(path):
    import jsonschema

    first = path.read_text().splitlines()[0]
    found = re.fullmatch(r"# yaml-language-server: \$schema=(\S+)", first)
    assert found, f"{path.name} does not start with a yaml-language-server schema line"
    target = found.group(1)
    if "templates" in path.parts:
        assert target == "./bakeoff.schema.json"  # `bakeoff init` writes it beside the spec
    else:
        assert (path.parent / target).resolve() == SCHEMA
    data = yaml.safe_load(path.read_text().replace("__NAME__", "x"))
    jsonschema.validate(data, json.loads(SCHEMA.read_text()))


def test_max_steps_default_is_the_one_the_schema_shows():
    from bakeoff.pipelines.spec.model import Training

    schema = json.loads(SCHEMA.read_text())["$defs"]["Training"]["properties"]["max_steps"]
    assert schema["default"] == 200 == Training().max_steps == Training().steps
    by_tokens = Training(total_tokens=10_000, global_batch_size=4, sequence_length=32)
    assert by_tokens.max_steps is None and by_tokens.steps == 79  # derived, rounded up
    with pytest.raises(ValueError, match="not both"):
        Training(total_tokens=10_000, max_steps=5)


def test_docs_python_snippet_is_the_quickstart_field_for_field():
    """The first tutorial says so; a spec that grew in one place and not the other would be a different job."""
    import bakeoff
    from bakeoff.pipelines.spec.loader import load_spec

    text = (ROOT / "docs" / "tutorials" / "first-bakeoff.md").read_text()
    block = re.search(r"```python\n(from bakeoff import .*?)```", text, re.S)
    assert block, "the tutorial's Python spec snippet is gone"
    code = block.group(1)  # the docs import the API as users do
    api = bakeoff
    namespace: dict = {}
    with mock.patch.object(api, "run_local", side_effect=StopIteration), pytest.raises(StopIteration):
        exec(code, namespace)
    quickstart = load_spec(str(ROOT / "examples" / "quickstart.yaml"))
    assert namespace["spec"].canonical() == quickstart.canonical()


def test_docs_and_custom_example_read_steps_the_same_way():
    tutorial = (ROOT / "docs" / "tutorials" / "your-own-script.md").read_text()
    example = (ROOT / "examples" / "custom_script" / "train.py").read_text()
    for text in (tutorial, example):
        assert "range(rt.max_steps)" in text and 'rt.hp("max_steps"' not in text
    # The example takes its rank's slice of the global batch, as the runtime expects.
    assert "rt.rank * per_rank" in example and "x[mine]" in example


def test_examples_say_device_not_devices_for_one(tmp_path, cli):
    proc = cli("validate", ROOT / "examples" / "custom_script.yaml")
    assert proc.returncode == 0
    assert "(1 device)" in proc.stdout and "1 devices" not in proc.stdout



def test_an_editor_sees_the_bounds_of_optional_numbers_too():
    import jsonschema

    schema = json.loads((ROOT / "bakeoff.schema.json").read_text())
    text = json.dumps(schema)
    assert not re.search(r'"(ge|le|gt|lt)": ', text)  # pydantic's names, which JSON Schema ignores
    spec = yaml.safe_load((ROOT / "examples" / "quickstart.yaml").read_text())
    spec["training"]["max_steps"] = 0  # optional (may be null), but at least 1 when given
    validator = jsonschema.Draft202012Validator(schema)
    errors = list(validator.iter_errors(spec))
    assert [list(e.absolute_path) for e in errors] == [["training", "max_steps"]]
    assert any("minimum of 1" in sub.message for sub in errors[0].context)
    spec["training"]["max_steps"] = 5
    assert not list(validator.iter_errors(spec))
