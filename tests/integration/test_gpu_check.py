"""The GPU check (`attnrank gpu-check OUT`): the runs the learned gate and the temperature's loss effect need,
trained and summarised into a folder; here on the CPU at ci sizes."""

from __future__ import annotations

import pandas as pd

from attnrank.cli import main
from attnrank.sections import learned


def test_gpu_check_writes_the_runs_targets_and_verdicts(private_store, tmp_path, capsys):
    out = tmp_path / "check"
    args = ["gpu-check", str(out), "--profile", "ci", "--seeds", "2", "--max-steps", "20", "--executor", "serial"]
    assert main(args) == 0
    runs = pd.read_csv(out / "runs.csv")
    assert len(runs) == 8 and set(runs.arch) == {"gpt2", "modernbert"} and set(runs.tau) == {1.0, 0.001}
    assert set(runs.max_steps) == {20} and set(runs.seed) == {0, 1} and runs.status.eq("complete").all()
    assert runs.final_val_loss.notna().all() and runs.attention_gain.notna().all()
    # the gaps are the runs' final losses against their own count models
    assert (runs.gap_bigram - (runs.final_val_loss - runs.bigram)).abs().max() < 1e-9
    targets = pd.read_csv(out / "targets.csv").set_index("arch")
    assert list(targets.index) == ["gpt2", "modernbert"] and targets.runs.tolist() == [2, 2]
    assert not targets.met.any()  # 20 ci steps learn nothing: the gate says so
    text = (out / "verdicts.md").read_text()
    assert text in capsys.readouterr().out  # printed too
    for model in ("GPT-2", "ModernBERT"):
        assert f"{model}: final loss at τ = 1 minus at τ = 0.001" in text
    assert text.count("Welch t") == 2 and "not met" in text


def test_gpu_check_shortens_the_schedule_in_proportion_and_checks_its_input(tmp_path, capsys):
    c = learned.check_configs("ci", seeds=1, max_steps=20)
    assert {(x.arch, x.tau) for x in c} == {(a, t) for a in ("gpt2", "modernbert") for t in learned.CHECK_TAUS}
    full = learned.check_configs("ci", seeds=1)[0]
    assert c[0].warmup_steps == round(full.warmup_steps * 20 / full.max_steps) and c[0].max_steps == 20
    for bad, param in (
        (["--seeds", "0"], "seeds"),
        (["--max-steps", "-3"], "max_steps"),
        (["--profile", "x"], "profile"),
    ):
        assert main(["gpu-check", str(tmp_path / "o"), *bad]) == 2
        assert param in capsys.readouterr().err
        assert not (tmp_path / "o").exists()  # nothing written, nothing trained
