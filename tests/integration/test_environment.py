"""Environment variables that change what runs: each is pinned by training, in the run key, or
refused with a one-line message, before anything is trained, on every executor."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import torch

from attnrank.cli import main
from attnrank.core import train
from attnrank.core.errors import ConfigError
from attnrank.core.profiles import resolve_config
from attnrank.runs import grid, store

SRC = str(Path(__file__).resolve().parents[2] / "src")


@pytest.fixture
def runs(tmp_path, monkeypatch):
    monkeypatch.setenv("ATTNRANK_RUNS", str(tmp_path / "runs"))
    return tmp_path / "runs"


def _clean_env(**extra) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ACCELERATE_") and k not in train.KEYED_VARIABLES}
    env.pop("OMP_NUM_THREADS", None)
    env.pop("MKL_NUM_THREADS", None)
    env.pop("ATEN_CPU_CAPABILITY", None)
    return {**env, "PYTHONPATH": SRC, **extra}


def test_accelerate_precision_is_refused_in_one_line_before_training(runs, monkeypatch, capsys):
    monkeypatch.setenv("ACCELERATE_MIXED_PRECISION", "bf16")
    assert main(["train", "--arch", "gpt2", "--profile", "ci", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("attnrank: error: ACCELERATE_MIXED_PRECISION: got 'bf16'; ") and err.count("\n") == 1
    assert "fp32" in err and "unset it or set it to 'no'" in err
    assert not runs.exists() or not list(runs.iterdir())
    monkeypatch.setenv("ACCELERATE_MIXED_PRECISION", "no")  # what a float32 run uses: accepted
    train.check_environment()


@pytest.mark.parametrize(
    "name, value",
    [
        ("ACCELERATE_DYNAMO_BACKEND", "inductor"),
        ("ACCELERATE_USE_DEEPSPEED", "true"),
        ("ACCELERATE_GRADIENT_ACCUMULATION_STEPS", "4"),
        ("ACCELERATE_TORCH_DEVICE", "meta"),
        ("ACCELERATE_SOMETHING_NEW", "1"),
    ],
)
def test_accelerate_variables_are_refused_on_every_executor(runs, monkeypatch, name, value):
    monkeypatch.setenv(name, value)
    monkeypatch.setattr(grid, "_run_process", lambda *a, **k: pytest.fail("a pool started"))
    monkeypatch.setattr(grid, "_run_ray", lambda *a, **k: pytest.fail("ray started"))
    for executor in grid.EXECUTORS:
        with pytest.raises(ConfigError, match=f"^{name}: got {value!r}; "):
            grid.sweep([resolve_config("gpt2", "ci")], executor=executor, progress=False)
    monkeypatch.setenv("ACCELERATE_DEBUG_MODE", "1")  # changes nothing a run computes: allowed
    monkeypatch.delenv(name)
    train.check_environment()


def test_training_pins_accelerates_precision(monkeypatch, one_thread):
    """With the refusal bypassed, ACCELERATE_MIXED_PRECISION=bf16 still trains in float32 (it
    ran under bf16 autocast before: 6.053699 -> 6.053679 on the first logged step)."""
    cfg = resolve_config("gpt2", "ci", max_steps=4, rank_every=2)
    plain = train.train(cfg, progress=False, keep_model=False)
    monkeypatch.setattr(train, "check_environment", lambda *a, **k: None)
    monkeypatch.setenv("ACCELERATE_MIXED_PRECISION", "bf16")
    args = train.training_arguments(cfg, "unused")
    assert args.mixed_precision == "no"
    pinned = train.train(cfg, progress=False, keep_model=False)
    pd.testing.assert_frame_equal(plain.train_log, pinned.train_log, check_exact=True)
    pd.testing.assert_frame_equal(plain.ranks, pinned.ranks, check_exact=True)
    assert pinned.summary["precision"] == "fp32"


def test_a_trainer_set_up_otherwise_than_the_key_trains_nothing(monkeypatch):
    cfg = resolve_config("gpt2", "ci", max_steps=2)
    monkeypatch.setattr(train, "ran_as", lambda trainer: {"device_type": "cpu", "precision": "bf16", "world_size": 1})
    with pytest.raises(RuntimeError, match="the Trainer was set up as .*'bf16'.* the run key says .*'fp32'"):
        train.train(cfg, progress=False)


def test_a_callers_matmul_precision_is_pinned_and_restored(one_thread):
    cfg = resolve_config("modernbert", "ci", max_steps=3)
    plain = train.train(cfg, progress=False, keep_model=False)
    old = torch.get_float32_matmul_precision()
    torch.set_float32_matmul_precision("medium")
    try:
        medium = train.train(cfg, progress=False, keep_model=False)
        assert torch.get_float32_matmul_precision() == "medium"
    finally:
        torch.set_float32_matmul_precision(old)
    pd.testing.assert_frame_equal(plain.train_log, medium.train_log, check_exact=True)


_TRAIN = """
import json, sys
from attnrank.runs import store; from attnrank.core import train
from attnrank.core.profiles import resolve_config
cfg = resolve_config("modernbert", "ci", max_steps=6, rank_every=3)
r = train.train(cfg, progress=False, keep_model=False)
r.train_log.to_csv(sys.argv[1] + "-train.csv", index=False)
r.ranks.to_parquet(sys.argv[1] + "-ranks.parquet")
print(json.dumps({"key": store.run_key(cfg)}))
"""


def test_thread_variables_are_pinned_by_training(tmp_path):
    """OMP_NUM_THREADS and MKL_NUM_THREADS change no bit: training sets the run's thread count."""
    out = {}
    for name, extra in {"unset": {}, "set": {"OMP_NUM_THREADS": "2", "MKL_NUM_THREADS": "2"}}.items():
        done = subprocess.run(
            [sys.executable, "-c", _TRAIN, str(tmp_path / name)],
            env=_clean_env(ATTNRANK_RUNS=str(tmp_path / "runs"), **extra),
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert done.returncode == 0, done.stderr[-3000:]
        out[name] = json.loads(done.stdout.strip().splitlines()[-1])["key"]
    assert out["unset"] == out["set"]
    for suffix, read in (("-train.csv", pd.read_csv), ("-ranks.parquet", pd.read_parquet)):
        pd.testing.assert_frame_equal(
            read(str(tmp_path / "unset") + suffix), read(str(tmp_path / "set") + suffix), check_exact=True
        )


_KEY = """
import json
from attnrank.runs import store; from attnrank.core import train
from attnrank.core.profiles import resolve_config
print(json.dumps({"key": store.run_key(resolve_config("gpt2", "ci")), "env": train.run_environment()}))
"""


def test_kernel_variables_are_in_the_run_key(tmp_path):
    def key(**extra) -> dict:
        done = subprocess.run(
            [sys.executable, "-c", _KEY],
            env=_clean_env(ATTNRANK_RUNS=str(tmp_path / "runs"), **extra),
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, done.stderr[-3000:]
        return json.loads(done.stdout.strip().splitlines()[-1])

    base = key()
    assert base["env"]["variables"] == {}
    lowered = key(ATEN_CPU_CAPABILITY="default")
    assert lowered["env"]["cpu_capability"] == "DEFAULT" and lowered["key"] != base["key"]
    for name, value in (("MKL_CBWR", "COMPATIBLE"), ("ONEDNN_DEFAULT_FPMATH_MODE", "BF16")):
        other = key(**{name: value})
        assert other["env"]["variables"] == {name: value} and other["key"] != base["key"]


def test_the_summary_records_the_environment_that_ran(runs, one_thread):
    r = store.run(resolve_config("gpt2", "ci", max_steps=2))
    s = r.summary
    assert (s["device_type"], s["precision"], s["world_size"]) == ("cpu", "fp32", 1)
    assert s["cpu_capability"] == torch.backends.cpu.get_cpu_capability() and s["variables"] == {}
