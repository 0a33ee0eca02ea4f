"""The checks that a verdict measured the target: each leg on its backend, the same model on
every leg, blockers on the first screen, and advice that fits the failure."""
import json
import re

import pytest
from validity_inputs import CONFIG, _bakeoff, _job

from bakeoff_runtime.report.document import render_html, render_markdown
from bakeoff_runtime.verdict.evaluation import evaluate
from bakeoff_runtime.verdict.job_outputs import load_jobs

UNTIED = {"parameters": 2024, "tensors": 4, "shapes": {"256x4": 2, "4": 1, "4x4": 1}}


def _check(ev, name):
    return next(c for c in ev["checks"] if c["name"] == name)


def test_legs_on_their_backends_training_one_model_pass(tmp_path):
    ev = _bakeoff(tmp_path)
    assert ev["verdict"] == "pass"
    assert [_check(ev, n)["status"] for n in ("backend:trn", "backend:gpu", "same-model", "blockers:trn")] == \
        ["passed"] * 4
    assert ev["measured"]["backend"]["trn"]["why"] == "trn trained on xla (3 parameter tensors on xla)"
    assert ev["measured"]["same_model"]["tolerance"] == 0.05
    assert ev["legs"]["trn"]["speed_representative"] is True


def test_a_trn_leg_that_trained_on_the_host_cpu_cannot_pass(tmp_path):
    ev = _bakeoff(tmp_path, trn={"devices": {"cpu": 3}, "graphs": 0})
    assert ev["verdict"] == "fail"
    check = _check(ev, "backend:trn")
    assert check["status"] == "failed"
    assert "trn did not train on its neuron backend" in check["why"] and "3 of 3 parameter tensors trained on cpu" \
        in check["why"] and "no XLA graph was compiled or run" in check["why"]
    # The first line names the cause: not a parity failure, a comparison that did not measure trn1.
    assert ev["summary"].startswith("not a valid comparison: backend:trn: trn did not train")
    assert ev["first_line"].startswith("fail: not a valid comparison: backend:trn: trn did not train")
    assert "did not train on its neuron backend" in render_markdown(ev).split("## ")[0]  # the first screen


def test_a_gpu_leg_with_no_cuda_memory_fails_but_an_emulated_one_is_not_checked(tmp_path):
    ev = _bakeoff(tmp_path / "a", gpu={"devices": {"cuda": 3}, "memory": None})
    assert _check(ev, "backend:gpu")["status"] == "failed" and "no CUDA memory" in _check(ev, "backend:gpu")["why"]
    config = json.loads(json.dumps(CONFIG))
    config["legs"]["gpu"]["emulated_on"] = "local cpu"
    for seed in range(3):
        _job(tmp_path / "b", "trn", seed, 2.4 + seed / 100, devices={"xla": 3})
        _job(tmp_path / "b", "gpu", seed, 2.4 + seed / 100, devices={"cpu": 3}, graphs=None)
    ev = evaluate(config, load_jobs(tmp_path / "b"))
    check = _check(ev, "backend:gpu")
    assert check["status"] == "unchecked" and "can only be shown on a GPU" in check["why"]
    assert ev["verdict"] == "pass"


def test_untied_weights_fail_the_same_model_check_and_say_what_differs(tmp_path):
    ev = _bakeoff(tmp_path, trn={"model": UNTIED})
    check = _check(ev, "same-model")
    assert ev["verdict"] == "fail" and check["status"] == "failed"
    assert "trn has 1,024 more parameters than gpu (2,024 vs 1,000; 1 more tensor of shape 256x4)" in check["why"]
    assert "un-tied" in check["why"]


def test_a_first_loss_that_differs_on_every_seed_is_shown_and_one_within_tolerance_passes(tmp_path):
    ev = _bakeoff(tmp_path / "off", trn={"first": 6.5})
    assert _check(ev, "same-model")["status"] == "warning" and ev["verdict"] == "pass"
    assert "first logged loss differs from gpu's on every paired seed" in _check(ev, "same-model")["why"]
    ev = _bakeoff(tmp_path / "near", trn={"first": 5.6})  # 1.8%: bf16 and device arithmetic
    assert _check(ev, "same-model")["status"] == "passed"


def test_fallbacks_and_recompiles_surface_without_failing_quality(tmp_path):
    ev = _bakeoff(tmp_path, trn={"compile": {"fallback_ops": ["aten::nonzero"], "recompiles_after_warmup": 17}})
    check = _check(ev, "blockers:trn")
    assert ev["verdict"] == "pass" and check["status"] == "warning"
    assert "CPU fallbacks of aten::nonzero" in check["why"] and "17 graph recompilations after warm-up" in check["why"]
    assert "bakeoff preflight" in check["why"] and ev["legs"]["trn"]["speed_representative"] is False
    first_screen = render_html(ev).split("<h2>")[0]
    assert "aten::nonzero" in first_screen and "What was measured" in first_screen
    assert "aten::nonzero" in ev["summary"] or "aten::nonzero" in render_markdown(ev).split("## ")[0]


def test_the_terminal_names_the_check_and_suggests_preflight(tmp_path):
    from rich.console import Console

    ev = _bakeoff(tmp_path, trn={"compile": {"fallback_ops": ["aten::nonzero"]}})
    from bakeoff.pipelines.cli.summary import render_summary

    console = Console(record=True, width=200)
    render_summary(ev, console)
    text = console.export_text()
    assert "note blockers:trn: trn: CPU fallbacks of aten::nonzero" in text
    assert "not representative" in text and "bakeoff preflight SPEC" in text


@pytest.mark.parametrize("kind, reason, expect", [
    ("no-metric", "the script reports no 'val_loss' (it reported: val_acc); log it with rt.log_validation",
     "more seeds will not help"),
    ("no-report", "the script exited 0 without reporting anything (no summary.json)", "use the Runtime"),
])
def test_a_script_that_reports_nothing_is_told_so_not_sent_to_re_run(tmp_path, kind, reason, expect):
    for leg in ("trn", "gpu"):
        for seed in range(3):
            _job(tmp_path, leg, seed, None, devices=None, status="failed", reason=reason, kind=kind)
    ev = evaluate(CONFIG, load_jobs(tmp_path))
    assert ev["verdict"] == "inconclusive"
    assert expect in ev["recommendation"]["why"] and "re-run the seeds" not in ev["recommendation"]["why"]
    assert "lost to the infrastructure" not in json.dumps(ev["checks"])


def test_completed_without_the_parity_metric_names_what_was_reported(tmp_path):
    from bakeoff_runtime.verdict.evaluation import classify

    job = {"summary": {"status": "completed", "metrics": {"val_acc": 0.9}}, "meta": {}}
    state, kind, why = classify(job, "val_loss")
    assert (state, kind) == ("failed", "no-metric")
    assert "reports no 'val_loss' (it reported: val_acc)" in why


def test_a_crashed_job_is_in_the_spend_not_in_the_cost_of_a_run(tmp_path):
    config = json.loads(json.dumps(CONFIG))
    for leg in config["legs"].values():
        leg["price"] = {"usd_per_hour": 36.0, "source": "test", "as_of": "today"}
    for seed in range(3):
        _job(tmp_path, "gpu", seed, 2.4, devices={"cuda": 3}, graphs=None, memory=2**30)
        if seed == 2:
            _job(tmp_path, "trn", seed, None, devices=None, status="failed", reason="OOM", kind="script",
                 wall_time_s=1000.0)
        else:
            _job(tmp_path, "trn", seed, 2.4, devices={"xla": 3})
    ev = evaluate(config, load_jobs(tmp_path))
    trn = ev["legs"]["trn"]
    assert trn["cost_per_run_usd_mean"] == pytest.approx(10.0 * 36 / 3600)  # the two runs of 10 s
    assert trn["cost_per_run"]["n"] == 2
    from bakeoff_runtime.report.spend import _spent

    assert _spent(ev)["cost_usd"] == pytest.approx((5 * 10.0 + 1000.0) * 36 / 3600)  # every job's spend


def test_seeds_that_give_bit_identical_results_say_the_script_ignores_its_seed(tmp_path):
    # The metric and the (continuous) training loss the same on every seed: one run counted three times.
    # Evidence about the harness, not the legs: undecided with the fix, never a fail of the verdict.
    ev = _bakeoff(tmp_path, trn={"first": 5.5}, vals=((2.40, 2.41), (2.40, 2.50), (2.40, 2.32)))
    check = _check(ev, "seeds:trn")
    assert check["status"] == "inconclusive" and "ignore its seed" in check["why"] and "seeds 0, 1, 2" in check["why"]
    assert "first training loss" in check["why"] and check["evidence"] == ["first training loss"]
    assert _check(ev, "seeds:gpu")["status"] == "passed" and ev["verdict"] == "inconclusive"
    assert ev["measured"]["seeds"]["trn"]["status"] == "inconclusive"
    assert "seeds:trn" in ev["undecided_checks"] and ev["failed_checks"] == "none"
    # The advice is the fix, not more seeds of the same script.
    assert "entrypoint.script_mode.seed" in ev["recommendation"]["why"] and ev["recommendation"]["seeds"] is None


def test_a_metric_that_ties_across_seeds_without_training_losses_is_unchecked_not_failed(tmp_path):
    # Accuracy on 1,000 examples moves in steps of 0.001: identical legs whose seeds land on the same
    # value, in script mode without a loss regex (no training loss at all), are no evidence of anything.
    vals = ((0.912, 0.912), (0.912, 0.912), (0.912, 0.912))
    ev = _bakeoff(tmp_path, trn={"first": None}, gpu={"first": None}, vals=vals)
    for leg in ("trn", "gpu"):
        check = _check(ev, f"seeds:{leg}")
        assert check["status"] == "unchecked", check
        assert "by chance" in check["why"] and "log the training loss" in check["why"]
    assert ev["verdict"] != "fail" and "seeds" not in ev["failed_checks"]


def test_a_metric_that_is_zero_on_every_run_is_not_a_failure(tmp_path):
    zero = ((0.0, 0.0), (0.0, 0.0), (0.0, 0.0))
    ev = _bakeoff(tmp_path / "none", trn={"first": None}, gpu={"first": None}, vals=zero)
    assert _check(ev, "seeds:trn")["status"] == "unchecked" and ev["verdict"] != "fail"
    # Training losses that differ show different runs: the tie of the metric was the metric's own.
    for seed in range(3):
        _job(tmp_path / "losses", "trn", seed, 0.0, devices={"xla": 3}, first=5.5 + seed / 100,
             final_train_loss=2.0 + seed / 100)
        _job(tmp_path / "losses", "gpu", seed, 0.0, devices={"cuda": 3}, graphs=None, memory=2**30,
             first=5.5 + seed / 100, final_train_loss=2.0 - seed / 100)
    ev = evaluate(CONFIG, load_jobs(tmp_path / "losses"))
    check = _check(ev, "seeds:trn")
    assert check["status"] == "passed" and "different first training loss and final training loss" in check["why"]
    assert ev["verdict"] != "fail" and "seeds" not in ev["failed_checks"]


def _runs(*summaries, curves=None):
    return [{"seed": i, "status": "completed", "summary": {"status": "completed", **s},
             "digest": {"train_curve": (curves or {}).get(i, [])}} for i, s in enumerate(summaries)]


def test_the_seeds_check_reads_logged_curves_and_leaves_the_parity_metric_out():
    from bakeoff_runtime.verdict.validity import seeds_check

    tie = {"metrics": {"val_acc": 0.9}}
    # Only the parity metric's own history: it ties by chance as the final value does.
    history = [{"step": 10, "val_acc": 0.8}, {"step": 20, "val_acc": 0.9}]
    check = seeds_check("trn", "val_acc", _runs(*[{**tie, "validation_history": history}] * 3))
    assert check["status"] == "unchecked"
    # Another metric's curve, the same on every seed: one run.
    with_loss = [{"step": 10, "val_acc": 0.8, "val_loss": 0.61234}, {"step": 20, "val_acc": 0.9, "val_loss": 0.4321}]
    check = seeds_check("trn", "val_acc", _runs(*[{**tie, "validation_history": with_loss}] * 3))
    assert check["status"] == "inconclusive" and "validation history" in check["why"]
    # The digest's training-loss curve: different on one seed, different runs.
    curves = {0: [[0, 2.5], [10, 1.25]], 1: [[0, 2.5], [10, 1.25]], 2: [[0, 2.5], [10, 1.2501]]}
    check = seeds_check("trn", "val_acc", _runs(tie, tie, tie, curves=curves))
    assert check["status"] == "passed" and "training-loss curve" in check["why"]
    same = {i: [[0, 2.5], [10, 1.25]] for i in range(3)}
    assert seeds_check("trn", "val_acc", _runs(tie, tie, tie, curves=same))["status"] == "inconclusive"
    # A kind only some seeds logged is not compared; one no seed logged leaves it unchecked.
    check = seeds_check("trn", "val_acc", _runs({**tie, "first_train_loss": 2.5}, tie, tie))
    assert check["status"] == "unchecked"
    # Different parity metrics: different runs, whatever else.
    assert seeds_check("trn", "val_acc", _runs({"metrics": {"val_acc": 0.9}},
                                                {"metrics": {"val_acc": 0.91}}))["status"] == "passed"
    for status in ("failed",):  # the check never fails a verdict
        assert all(seeds_check("trn", "val_acc", runs)["status"] != status for runs in (
            _runs(*[{**tie, "first_train_loss": 2.5, "final_train_loss": 1.0}] * 3), _runs(tie, tie)))


# --- positive evidence of the backend, whatever the script did (training/evidence.py) -----------------
HAND_UPDATE = {"optimizer_steps": 0, "training_forwards": 74, "processes": 1,
               "torch_accelerator": {"is_available": "False", "current_accelerator": "cuda"},
               "xla": {"executions": 0, "graphs_compiled": 0, "graphs_cached": 0, "tensors_created": 0}}


def test_a_trn_leg_that_updated_its_weights_by_hand_on_the_cpu_fails_on_positive_evidence(tmp_path):
    # No optimizer step: the model was recorded at its first training forward pass; XLA ran nothing.
    model = {"parameters": 1000, "tensors": 3, "shapes": {"256x4": 1, "4": 1, "4x4": 1},
             "source": "parameters of the outermost module at its first training forward pass"}
    ev = _bakeoff(tmp_path, trn={"devices": {"cpu": 3}, "model": model, "graphs": 0, "evidence": HAND_UPDATE})
    check = _check(ev, "backend:trn")
    assert check["status"] == "failed" and ev["verdict"] == "fail"
    assert "3 of 3 parameter tensors trained on cpu, not xla" in check["why"]
    assert "no XLA graph ran (PyTorch/XLA's counters: 0 executions" in check["why"]
    # What the script asked torch.accelerator, and the change that would reach XLA.
    assert "torch.accelerator, which does not see PyTorch/XLA" in check["why"]
    assert "is_available() -> False" in check["why"] and "torch_xla.device()" in check["why"]
    assert ev["first_line"].startswith("fail: not a valid comparison: backend:trn")


def test_a_trn_leg_that_showed_nothing_is_undecided_and_never_passes(tmp_path):
    ev = _bakeoff(tmp_path, trn={"devices": None})  # no parameters seen, no XLA counters
    check = _check(ev, "backend:trn")
    assert check["status"] == "inconclusive" and "cannot pass without it" in check["why"]
    assert ev["verdict"] == "inconclusive" and "backend:trn" in ev["undecided_checks"]


def test_an_emulated_gpu_leg_that_trained_on_xla_fails_and_one_on_the_cpu_says_what_it_showed(tmp_path):
    config = json.loads(json.dumps(CONFIG))
    config["legs"]["gpu"]["emulated_on"] = "local cpu"
    xla = {"optimizer_steps": 10, "training_forwards": 10, "processes": 1,
           "xla": {"executions": 28, "graphs_compiled": 3, "graphs_cached": 1, "tensors_created": 400}}
    for seed in range(3):
        _job(tmp_path / "xla", "trn", seed, 2.4 + seed / 100, devices={"xla": 3})
        _job(tmp_path / "xla", "gpu", seed, 2.4 + seed / 100, devices={"xla": 3}, graphs=None, evidence=xla)
    ev = evaluate(config, load_jobs(tmp_path / "xla"))
    check = _check(ev, "backend:gpu")
    assert check["status"] == "failed" and ev["verdict"] == "fail"
    assert "stands for a GPU and ran on this machine's cpu, but did not train there" in check["why"]
    assert "3 of 3 parameter tensors trained on xla, not cpu" in check["why"] and "USE_TORCH_XLA" in check["why"]


def test_legs_that_agree_to_the_last_bit_on_every_seed_are_flagged_as_one_computation(tmp_path):
    same = ((2.40, 2.40), (2.51, 2.51), (2.32, 2.32))
    ev = _bakeoff(tmp_path / "cpu", vals=same, trn={"devices": {"cpu": 3}, "graphs": 0})
    check = _check(ev, "same-computation:trn")
    assert check["status"] == "warning" and check["seeds_paired"] == [0, 1, 2]
    assert "the same computation ran on both legs" in check["why"] and "backend check" in check["why"]
    assert ev["measured"]["same_computation"]["trn"]["status"] == "warning"
    # Each leg showed its own device: the numbers agree only at the precision the script printed.
    shown = _check(_bakeoff(tmp_path / "shown", vals=same), "same-computation:trn")
    assert "though each showed it trained on its own backend" in shown["why"] and "more digits" in shown["why"]
    differ = _bakeoff(tmp_path / "differ")
    assert not [c for c in differ["checks"] if c["name"].startswith("same-computation")]


def test_a_leg_that_failed_a_validity_check_is_never_drawn_as_passed(tmp_path):
    ev = _bakeoff(tmp_path, trn={"devices": {"cpu": 3}, "graphs": 0})
    assert _check(ev, "parity:trn~gpu")["status"] == "passed"  # its numbers agree...
    assert ev["legs"]["trn"]["voided_by"] == ["backend:trn"]  # ...but they are not about trn1
    md, page = render_markdown(ev), render_html(ev)
    assert "| parity | void (backend:trn) | baseline |" in md
    decision = next(f for f in re.findall(r"<figure>.*?</figure>", page, re.S) if "The decision" in f)
    assert ">void<title>passed on val_loss, but void: backend:trn failed</title>" in decision
    assert ">passed<" not in decision


def test_a_model_of_another_size_that_the_spec_asks_for_is_not_called_un_tied_weights(tmp_path):
    config = json.loads(json.dumps(CONFIG))
    config["legs"]["trn"]["per_leg"] = {"arguments": [], "hyperparameters": {"n_layer": 2}, "environment": {}}
    bigger = {"parameters": 2016, "tensors": 5, "shapes": {"256x4": 1, "4": 2, "4x4": 2}}  # shapes repeat: a layer
    wider = {"parameters": 1536, "tensors": 3, "shapes": {"384x4": 1, "4": 1, "4x4": 1}}  # a shape of its own
    for seed in range(3):
        _job(tmp_path / "a", "trn", seed, 2.4, devices={"xla": 5}, model=bigger)
        _job(tmp_path / "a", "gpu", seed, 2.4, devices={"cuda": 3}, graphs=None, memory=2**30)
        _job(tmp_path / "b", "trn", seed, 2.4, devices={"xla": 3}, model=wider)
        _job(tmp_path / "b", "gpu", seed, 2.4, devices={"cuda": 3}, graphs=None, memory=2**30)
    deeper = _check(evaluate(config, load_jobs(tmp_path / "a")), "same-model")["why"]
    # The spec's own setting first; un-tied weights only as the other reading of repeated shapes.
    assert "(the spec gives trn hyperparameters n_layer=2 of its own, which may build another model" in deeper
    assert deeper.index("of its own") < deeper.index("un-tied")
    why = _check(evaluate(config, load_jobs(tmp_path / "b")), "same-model")["why"]
    assert "un-tied" not in why and "the spec gives trn hyperparameters n_layer=2 of its own" in why


def test_an_optimizer_made_before_the_model_moved_to_xla_is_named(tmp_path):
    # The DDP tutorial's order (optimizer, then model.to(device)) works on CUDA; on XLA the optimizer keeps
    # the CPU parameters the moved model no longer uses, while the forward passes run as XLA graphs.
    stale = {"optimizer_steps": 30, "training_forwards": 30, "processes": 1,
             "xla": {"executions": 62, "graphs_compiled": 3, "graphs_cached": 59, "tensors_created": 900}}
    model = {**{"parameters": 1000, "tensors": 3, "shapes": {"256x4": 1, "4": 1, "4x4": 1}},
             "source": "optimizer parameters at the first optimizer step"}
    ev = _bakeoff(tmp_path, trn={"devices": {"cpu": 3}, "model": model, "evidence": stale})
    why = _check(ev, "backend:trn")["why"]
    assert ev["verdict"] == "fail" and "62 XLA graphs ran, but the optimizer steps parameters on cpu" in why
    assert "make the optimizer after model.to(device)" in why
