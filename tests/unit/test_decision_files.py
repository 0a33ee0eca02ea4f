"""The files that carry a decision are whole or the ones before them, never torn."""
import json

import pytest

from bakeoff.pipelines.local.files import write_json_atomically


def test_a_write_that_fails_midway_leaves_the_previous_file_and_no_debris(tmp_path):
    path = tmp_path / "parity-rule.json"
    write_json_atomically(path, {"rule": {"margin": 0.05}}, sort_keys=True)
    assert json.loads(path.read_text()) == {"rule": {"margin": 0.05}}
    with pytest.raises(TypeError):
        write_json_atomically(path, {"rule": {"margin": object()}})  # fails while writing
    assert json.loads(path.read_text()) == {"rule": {"margin": 0.05}}
    assert [p.name for p in tmp_path.iterdir()] == ["parity-rule.json"]


def test_a_rewrite_replaces_the_file_whole(tmp_path):
    path = tmp_path / "gate.json"
    write_json_atomically(path, [{"step": "Gate", "type": "Condition"}] * 500)
    inode = path.stat().st_ino
    write_json_atomically(path, [])
    assert json.loads(path.read_text()) == [] and path.stat().st_ino != inode  # renamed over, not rewritten
