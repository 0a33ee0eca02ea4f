"""What `bakeoff run` prints off a terminal before and around its jobs: one line of substitutions (every
one with -v), and a job's reported phase reaching the display. The jobs run in the fake container
(fake_container.py); the pseudo-terminal view is tests/e2e/test_terminal_progress.py."""
from bakeoff_runtime.contract import phase_line
from conftest import tiny_spec, write_spec
from fake_container import FakeContainer, Recipe, bakeoff_cli


class CompilingFirst(FakeContainer):
    """The fake job, after a `[bakeoff] phase=compiling` line on the trn leg (as the runtime prints it)."""

    def __call__(self, job, job_dir, store, process, on_line):
        if job.leg == "trn1":
            on_line(phase_line("compiling"))
        return super().__call__(job, job_dir, store, process, on_line)


def test_one_substitution_line_and_the_phase_a_job_reports(monkeypatch, capsys, tmp_path):
    spec = write_spec(tmp_path / "tiny.yaml", tiny_spec(seeds=1))
    container = CompilingFirst(Recipe(metric="val_loss", base=3.0))
    code, _, err = bakeoff_cli(monkeypatch, capsys, container, "run", spec, "--out", tmp_path / "out",
                               "--no-mlflow", "--jobs", "1")
    assert code == 3, err[-2000:]  # one seed: inconclusive, a verdict all the same
    lines = err.splitlines()
    assert "bakeoff reading" not in err  # a terminal's first line only: off one, bad input stays one line
    said = [line for line in lines if line.startswith("bakeoff local:")]
    assert said == ["bakeoff local: trn1 on local xla:cpu, p4d on local cpu (-v: every substitution)"], said
    assert "[1/2] trn1-s0: compiling its graphs before the first step" in lines
    assert not [line for line in lines if "p4d-s0: compiling" in line]

    code, _, verbose = bakeoff_cli(monkeypatch, capsys, container, "run", spec, "--out", tmp_path / "out",
                                   "--no-mlflow", "--jobs", "1", "-v")
    assert code == 3, verbose[-2000:]
    assert verbose.count("bakeoff local: leg ") == 2
    assert f"local: every substitution for this machine (store, /opt/ml, images, batching, evaluation): " \
           f"{tmp_path / 'out' / 'substitutions.json'}" in verbose
