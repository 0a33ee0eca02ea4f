"""A run directory is data (pipelines/local/run_dir.py): one handed over with links in it makes bakeoff
write nothing outside it, records the verdict depends on cannot be deleted to get around them, and a
re-decision sends nothing where only the directory's own files say. Each attack beside its benign twin,
through the real CLI (`bakeoff run`, `bakeoff report`), the jobs in the fake container."""
import json
import os
import sqlite3

import pytest

from bakeoff.pipelines.errors import SpecError
from bakeoff.pipelines.local.lock import LOCK_FILE, RunLock
from fake_container import FakeContainer, bakeoff_cli, verdict_spec


@pytest.fixture
def finished(tmp_path, monkeypatch, capsys):
    """A finished two-leg, two-seed bake-off: its spec and its run directory."""
    spec = verdict_spec(tmp_path, seeds=2)
    out = tmp_path / "out"
    code, _, stderr = bakeoff_cli(monkeypatch, capsys, FakeContainer(), "run", spec, "--out", out, "--no-mlflow")
    assert code == 0, stderr[-2000:]
    return spec, out


def _victim_file(tmp_path):
    victim = tmp_path / "precious.txt"
    victim.write_text("the user's own data\n")
    return victim


def _victim_folder(tmp_path):
    folder = tmp_path / "precious"
    for name in ("model", "output", "code", "input"):
        (folder / name).mkdir(parents=True)
        (folder / name / "keep.txt").write_text(name)
    return folder


def _untouched(folder) -> dict[str, str]:
    return {str(p.relative_to(folder)): p.read_text() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_a_lock_file_linked_to_a_file_outside_is_refused_and_the_file_is_untouched(finished, tmp_path, monkeypatch,
                                                                                   capsys):
    spec, out = finished
    victim = _victim_file(tmp_path)
    (out / LOCK_FILE).unlink()
    (out / LOCK_FILE).symlink_to(victim)
    for command in (("run", spec, "--out", out, "--no-mlflow"), ("report", out)):
        code, _, stderr = bakeoff_cli(monkeypatch, capsys, None, *command)
        assert code == 2, (command, stderr[-2000:])
        assert ".bakeoff.lock is a symbolic link" in stderr and "Traceback" not in stderr, stderr
        assert victim.read_text() == "the user's own data\n"


def test_a_plain_lock_file_left_by_a_finished_run_is_the_benign_case(finished, monkeypatch, capsys):
    spec, out = finished
    assert (out / LOCK_FILE).is_file() and not (out / LOCK_FILE).is_symlink()
    code, stdout, stderr = bakeoff_cli(monkeypatch, capsys, None, "run", spec, "--out", out, "--no-mlflow")
    assert code == 0, stderr[-2000:]
    assert "unchanged, not re-run" in stdout + stderr


def test_a_jobs_opt_ml_linked_to_a_folder_outside_is_refused_and_the_folder_is_untouched(finished, tmp_path,
                                                                                         monkeypatch, capsys):
    spec, out = finished
    folder = _victim_folder(tmp_path)
    before = _untouched(folder)
    import shutil

    shutil.rmtree(out / "jobs" / "m5-s0" / "opt" / "ml")
    (out / "jobs" / "m5-s0" / "opt" / "ml").symlink_to(folder, target_is_directory=True)
    code, _, stderr = bakeoff_cli(monkeypatch, capsys, FakeContainer(), "run", spec, "--out", out, "--no-mlflow",
                                  "--force")
    assert code == 2, stderr[-2000:]
    assert "opt/ml is a symbolic link" in stderr, stderr
    assert _untouched(folder) == before


def test_an_evaluation_folder_linked_outside_is_refused_by_report_and_its_files_kept(finished, tmp_path,
                                                                                  monkeypatch, capsys):
    spec, out = finished
    folder = tmp_path / "elsewhere"
    folder.mkdir()
    for name in ("evaluation.json", "report.html", "report.md", "parity.svg", "log.txt"):
        (folder / name).write_text(f"mine: {name}")
    before = _untouched(folder)
    import shutil

    shutil.rmtree(out / "evaluation")
    (out / "evaluation").symlink_to(folder, target_is_directory=True)
    for command in (("report", out), ("run", spec, "--out", out, "--no-mlflow")):
        code, _, stderr = bakeoff_cli(monkeypatch, capsys, None, *command)
        assert code == 2 and "evaluation is a symbolic link" in stderr, (command, stderr[-2000:])
        assert _untouched(folder) == before


def test_a_run_directory_that_is_itself_a_link_is_the_users_choice(finished, tmp_path, monkeypatch, capsys):
    _, out = finished
    alias = tmp_path / "alias"
    alias.symlink_to(out, target_is_directory=True)
    code, _, stderr = bakeoff_cli(monkeypatch, capsys, None, "report", alias)
    assert code == 0, stderr[-2000:]


def test_a_deleted_looks_record_is_refused_once_jobs_finished(finished, monkeypatch, capsys):
    spec, out = finished
    (out / "looks.json").unlink()
    code, _, stderr = bakeoff_cli(monkeypatch, capsys, None, "run", spec, "--out", out, "--no-mlflow")
    assert code == 2, stderr[-2000:]
    assert "looks.json" in stderr and "a look nobody counted" in stderr
    # benign: fresh data is a first look
    code, _, stderr = bakeoff_cli(monkeypatch, capsys, FakeContainer(), "run", spec, "--out", out, "--no-mlflow",
                                  "--force")
    assert code == 0, stderr[-2000:]
    assert json.loads((out / "looks.json").read_text())["looks"]


def test_the_looks_record_exists_from_the_first_run_on(tmp_path, monkeypatch, capsys):
    spec = verdict_spec(tmp_path, seeds=2)
    out = tmp_path / "out"
    code, _, stderr = bakeoff_cli(monkeypatch, capsys, FakeContainer(), "run", spec, "--out", out, "--no-mlflow")
    assert code == 0, stderr[-2000:]
    assert (out / "looks.json").is_file()


def test_deleting_the_lock_file_during_a_run_does_not_let_a_second_run_in(tmp_path):
    out = tmp_path / "out"
    with RunLock(out):
        (out / LOCK_FILE).unlink()
        with pytest.raises(SpecError, match="in use by"), RunLock(out):
            pass
    with RunLock(out):  # benign: released, it is taken again
        assert json.loads((out / LOCK_FILE).read_text())["pid"] == os.getpid()


def test_report_sends_nothing_where_only_the_directorys_spec_says(finished, tmp_path, monkeypatch, capsys):
    spec, out = finished
    victim = tmp_path / "unrelated.db"
    with sqlite3.connect(victim) as db:
        db.execute("create table mine (x integer)")
    before = victim.read_bytes()
    body = json.loads((out / "spec.json").read_text())
    body.setdefault("mlflow", {})["tracking_uri"] = f"sqlite:///{victim}"
    (out / "spec.json").write_text(json.dumps(body))
    plan = json.loads((out / "plan.json").read_text())
    plan["local"]["mlflow"] = True  # as a run that logged to MLflow records it
    (out / "plan.json").write_text(json.dumps(plan))
    (out / "evaluation" / "evaluation.json").unlink()  # a re-decision
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    code, stdout, stderr = bakeoff_cli(monkeypatch, capsys, None, "report", out, "--write")
    assert code in (0, 1, 3), stderr[-2000:]
    assert victim.read_bytes() == before
    assert f"spec.json names sqlite:///{victim}" in stdout + stderr
