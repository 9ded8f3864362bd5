"""The grid: executors give the same tables, workers are checked and retried; runs are keyed by
their environment; probes run in full precision; multi-process launches stop at once."""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pandas as pd
import pytest
import torch

from attnrank.cli import main
from attnrank.core.errors import ConfigError
from attnrank.core.profiles import resolve_config
from attnrank.runs import experiments, grid, store

SRC = str(Path(__file__).resolve().parents[2] / "src")
TABLES = ("train_log", "eval_log", "ranks", "rank_summary")


def _grid(n_steps: int = 20):
    return [resolve_config(a, "ci", tau=t, max_steps=n_steps) for a in ("modernbert", "gpt2") for t in (0.1, 1.0)]


def _tables(df: pd.DataFrame) -> dict:
    return {(k, t): store.Run(Path(p), {}, {}).table(t) for k, p in zip(df.key, df.path) for t in TABLES}


def _run_dirs(root: Path) -> list[Path]:
    return [p for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")] if root.exists() else []


def test_process_pool_and_serial_give_bit_identical_tables(tmp_path, monkeypatch):
    """Guarantee "Same numbers on every executor": serial and process sweeps give bit-identical tables."""
    configs = _grid()
    out = {}
    for executor, start in (("serial", None), ("process", "forkserver"), ("process", "spawn")):
        if start == "spawn":  # the pool as it starts when a variable torch reads has changed since the forkserver
            monkeypatch.setattr(grid, "pool_start_method", lambda gpus: "spawn")
        else:
            assert start is None or grid.pool_start_method([]) == start
        monkeypatch.setenv("ATTNRANK_RUNS", str(tmp_path / f"{executor}-{start}"))
        out[start] = grid.sweep(configs, executor=executor, workers=2, progress=False)
        assert out[start].attrs["sweep"]["trained"] == 4
    a = out[None]
    assert len(set(a.key)) == 4
    assert (a.status == "complete").all() and list(a.arch) == ["modernbert", "modernbert", "gpt2", "gpt2"]
    ta = _tables(a)
    for b in (out["forkserver"], out["spawn"]):
        assert list(a.key) == list(b.key)
        tb = _tables(b)
        for k in ta:
            pd.testing.assert_frame_equal(ta[k], tb[k], check_exact=True)
    # a second sweep finds everything stored and starts no pool
    monkeypatch.setattr(grid, "_run_process", lambda *a, **k: pytest.fail("started a pool"))
    again = grid.sweep(configs, executor="process", progress=False)
    assert again.attrs["sweep"]["trained"] == 0 and list(again.key) == list(b.key)


def test_the_pool_forks_while_the_variables_torch_loaded_with_are_unchanged(monkeypatch):
    """A CPU pool forks its workers from the forkserver, and spawns them when a variable that torch or its
    kernels read at load time differs from the forkserver's (or with GPUs)."""
    monkeypatch.delenv("MKL_CBWR", raising=False)
    assert grid.pool_start_method([]) == "forkserver"
    assert grid.pool_start_method(["0"]) == "spawn"
    monkeypatch.setenv("MKL_CBWR", "COMPATIBLE")
    assert grid.pool_start_method([]) == "spawn"
    monkeypatch.setenv("ATTNRANK_RUNS", "/elsewhere")  # passed to every worker: no reason to spawn
    monkeypatch.delenv("MKL_CBWR")
    assert grid.pool_start_method([]) == "forkserver"


def test_racing_workers_train_one_config_once(private_store):
    """Guarantee "Grid workers are checked and retried": racing workers train one config once."""
    cfg = resolve_config("gpt2", "ci", max_steps=30)
    df = grid.sweep([cfg, cfg], executor="process", workers=2, progress=False)
    assert df.attrs["sweep"]["trained"] == 1 and df.attrs["sweep"]["stored"] == 1
    assert len(_run_dirs(private_store)) == 1 and len(df) == 1


def test_code_hash_mismatch_fails_before_training(private_store):
    """Guarantee "Grid workers are checked and retried": a code-hash mismatch stops a worker before training."""
    configs = _grid()[:2]
    for executor in ("serial", "process"):
        with pytest.raises(grid.CodeMismatch, match="code hash"):
            grid.sweep(configs, executor=executor, workers=2, code_hash="0" * 16, progress=False)
    assert not private_store.exists() or not list(
        private_store.iterdir()
    )  # no run, no lock file: nothing started training


def test_a_run_that_raises_is_reported_after_the_others(private_store, monkeypatch, capsys):
    """A run that raises does not stop the sweep; the sweep then raises naming it."""
    good, bad = resolve_config("gpt2", "ci", max_steps=10), resolve_config("modernbert", "ci", max_steps=10)
    real = store.run

    def run(cfg, **kw):
        if cfg.arch == "modernbert":
            raise OSError("disk full")
        return real(cfg, **kw)

    monkeypatch.setattr(store, "run", run)
    with pytest.raises(
        RuntimeError, match="1 of 2 runs did not finish: modernbert tau=1 head_dim=16 seed=0: OSError: disk full"
    ):
        grid.sweep([bad, good], executor="serial")
    assert "modernbert tau=1 head_dim=16 seed=0: error OSError: disk full" in capsys.readouterr().out
    assert len(_run_dirs(private_store)) == 1
    with pytest.raises(RuntimeError, match="1 of 1 runs did not finish"):
        grid.sweep([bad], executor="serial", progress=False)


def test_killed_worker_is_retried_and_leaves_one_valid_run(private_store):
    """Guarantee "Grid workers are checked and retried": a killed worker's run is retried and leaves one valid run."""
    code = """
        from attnrank.runs import grid
        from attnrank.core.profiles import resolve_config
        df = grid.sweep([resolve_config("gpt2", "ci", max_steps=500)], executor="process", workers=1)
        print("TRAINED", df.attrs["sweep"]["trained"], df.status.iloc[0])
    """
    env = {**os.environ, "ATTNRANK_RUNS": str(private_store), "PYTHONPATH": SRC}
    driver = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(code)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    import psutil

    deadline = time.time() + 120
    while time.time() < deadline and not list(private_store.glob(".*.lock")):
        time.sleep(0.2)
    time.sleep(0.5)  # into training (500 steps take seconds; the retry line below proves the kill came mid-run)
    procs = psutil.Process(driver.pid).children(recursive=True)
    servers = {p.pid for p in procs if p.ppid() == driver.pid and "forkserver import main" in " ".join(p.cmdline())}
    assert len(servers) == 1, [p.cmdline() for p in procs]  # a CPU pool forks its workers from a forkserver
    workers = [p for p in procs if p.ppid() in servers]
    assert len(workers) == 1, [p.cmdline() for p in procs]
    workers[0].send_signal(signal.SIGKILL)
    out, _ = driver.communicate(timeout=900)
    assert driver.returncode == 0, out[-3000:]
    assert "worker process died; retrying 1 run" in out and "TRAINED 1 complete" in out
    (path,) = _run_dirs(private_store)
    assert store.load_runs().path.tolist() == [str(path)]


def test_ray_executor_gives_the_same_tables(tmp_path, monkeypatch):
    """Guarantee "Same numbers on every executor": serial and ray sweeps give bit-identical tables; a Ray worker
    with other code stops before training; on an instance the caller started, every task still carries the
    driver's variables as they are when the sweep starts."""
    ray = pytest.importorskip("ray")
    configs = _grid()[1::2]  # one ModernBERT, one GPT-2
    monkeypatch.setenv("ATTNRANK_RUNS", str(tmp_path / "serial"))
    a = grid.sweep(configs, executor="serial", progress=False)
    monkeypatch.setenv("ATTNRANK_RUNS", str(tmp_path / "ray"))
    b = grid.sweep(configs, executor="ray", address="local", workers=2, progress=False)
    assert b.attrs["sweep"]["trained"] == 2 and list(a.key) == list(b.key)
    ta, tb = _tables(a), _tables(b)
    for k in ta:
        pd.testing.assert_frame_equal(ta[k], tb[k], check_exact=True)
    assert not ray.is_initialized()  # the sweep shut down the instance it started
    # an instance the caller started, while ATTNRANK_RUNS named the "ray" store
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level=logging.ERROR)
    try:
        # a Ray worker with other code stops before training
        monkeypatch.setenv("ATTNRANK_RUNS", str(tmp_path / "ray-mismatch"))
        with pytest.raises(grid.CodeMismatch, match="code hash"):
            grid.sweep(configs, executor="ray", code_hash="0" * 16, progress=False)
        assert not _run_dirs(tmp_path / "ray-mismatch")
        # the workers write where the driver says now, not where it said when the instance started
        monkeypatch.setenv("ATTNRANK_RUNS", str(tmp_path / "ray-started"))
        c = grid.sweep(configs[:1], executor="ray", progress=False)
        assert c.attrs["sweep"]["trained"] == 1 and len(_run_dirs(tmp_path / "ray-started")) == 1
        assert ray.is_initialized()  # the caller's instance stays the caller's
    finally:
        ray.shutdown()


def test_thread_count_is_applied_restored_recorded_and_keyed(private_store, monkeypatch):
    """Guarantee "The run key holds every input of a result": thread count and precision change the key (and
    retrain); training applies, restores and records the thread count, device type, precision and world size."""
    base = resolve_config("gpt2", "ci", max_steps=10)
    two = resolve_config("gpt2", "ci", max_steps=10, threads=2)
    assert base.threads == 1 and store.run_key(base) != store.run_key(two)
    monkeypatch.setenv("ATTNRANK_THREADS", "2")
    assert resolve_config("gpt2", "ci", max_steps=10) == two
    monkeypatch.setenv("ATTNRANK_THREADS", "zero")
    with pytest.raises(ConfigError, match="ATTNRANK_THREADS"):
        resolve_config("gpt2", "ci")
    monkeypatch.delenv("ATTNRANK_THREADS")
    with pytest.raises(ConfigError) as e:
        resolve_config("gpt2", "ci", threads=0)
    assert e.value.param == "threads"
    old = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        r = store.run(base)
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(old)
    s = r.summary
    assert (s["torch_threads"], s["device_type"], s["precision"], s["world_size"], s["device"]) == (
        1,
        "cpu",
        "fp32",
        1,
        "cpu",
    )
    # another precision or device type is another run
    monkeypatch.setattr("attnrank.core.train.precision", lambda: "bf16")
    assert store.run_key(base) != r.key
    assert store.run(base).fresh
    monkeypatch.undo()


def test_probe_ignores_bf16_autocast():
    """Guarantee "Probes in full precision": under the Trainer's bf16 autocast wrapper the probe equals the
    float32 probe to 1e-6; TF32 is off inside the probe and restored."""
    from accelerate import Accelerator
    from accelerate.state import AcceleratorState

    from attnrank.core.models import build_model
    from attnrank.core.probe import RankProbe, attention_probabilities
    from attnrank.core.train import prepare_data

    for arch, tau in (("gpt2", 1e-3), ("modernbert", 4e-3)):
        cfg = resolve_config(arch, "ci", tau=tau)
        _, tokenizer, _, ids, val_batches = prepare_data(cfg)
        model = build_model(
            arch,
            hidden_size=cfg.hidden_size,
            num_layers=cfg.num_layers,
            num_heads=cfg.num_heads,
            tau=tau,
            max_len=cfg.max_len,
            vocab_size=len(tokenizer),
            dropout=0.0,
            pad_token_id=tokenizer.pad_token_id,
        )
        ref_probs = attention_probabilities(model, ids)
        ref = RankProbe(ids, val_batches)(model, 0)
        # what Trainer(bf16=True) does to the model: forward wrapped in bf16 autocast for the whole run
        AcceleratorState._reset_state(reset_partial_state=True)  # a Trainer earlier in this worker set fp32
        wrapped = Accelerator(cpu=True, mixed_precision="bf16").prepare_model(model)
        autocast_forward = vars(wrapped)["forward"]
        got = RankProbe(ids, val_batches)(wrapped, 0)
        with torch.autocast("cpu", dtype=torch.bfloat16):
            probs = attention_probabilities(wrapped, ids)
            assert torch.is_autocast_enabled("cpu")  # restored on exit
        assert vars(wrapped)["forward"] is autocast_forward
        assert probs.dtype == torch.float32
        # TF32 matmuls are off inside the probe and restored after it
        seen = []
        hook = wrapped.register_forward_pre_hook(
            lambda *a: seen.append(  # noqa: B023 (called within the iteration)
                torch.backends.cuda.matmul.allow_tf32
            )
        )
        old_tf32 = torch.backends.cuda.matmul.allow_tf32
        torch.backends.cuda.matmul.allow_tf32 = True
        try:
            RankProbe(ids[:2], val_batches[:1])(wrapped, 0)
            assert torch.backends.cuda.matmul.allow_tf32 is True
        finally:
            torch.backends.cuda.matmul.allow_tf32 = old_tf32
            hook.remove()
        assert seen and not any(seen)
        assert (probs - ref_probs).abs().max().item() <= 1e-6
        for k in ref:
            assert got[k] == pytest.approx(ref[k], abs=1e-6), (arch, k)


def test_one_gpu_per_run():
    """Guarantee "Probes in full precision" (one GPU per run): never DataParallel over several visible GPUs."""
    from attnrank.core.train import _one_device

    class Args:
        _n_gpu = 4
        n_gpu = property(lambda self: self._n_gpu)

    assert _one_device(Args()).n_gpu == 1


def test_world_size_above_one_stops_before_the_lock(private_store, monkeypatch, capsys):
    """Guarantee "No deadlock under torchrun": WORLD_SIZE > 1 stops before the lock with one line (exit 2)."""
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setattr("attnrank.core.train.train", lambda *a, **k: pytest.fail("trained"))
    assert main(["train", "--arch", "gpt2", "--profile", "ci"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("attnrank: error: WORLD_SIZE: got 2") and "--executor ray" in err and "\n" not in err
    assert not private_store.exists() or not list(private_store.glob(".*.lock"))


def test_torchrun_stops_at_once(private_store):
    """Guarantee "No deadlock under torchrun": torchrun --nproc_per_node=2 of a ci training exits with the
    message within a minute."""
    torchrun = Path(sys.executable).with_name("torchrun")
    if not torchrun.exists():
        pytest.skip("torchrun not installed")
    env = {**os.environ, "ATTNRANK_RUNS": str(private_store), "PYTHONPATH": SRC, "OMP_NUM_THREADS": "1"}
    p = subprocess.run(
        [
            str(torchrun),
            "--nproc_per_node=2",
            "--master_port=29517",
            "-m",
            "attnrank",
            "train",
            "--arch",
            "gpt2",
            "--profile",
            "ci",
            "--quiet",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=90,
    )
    assert p.returncode != 0
    out = p.stdout + p.stderr
    assert out.count("attnrank: error: WORLD_SIZE: got 2") == 2 and "--executor ray" in out
    assert not _run_dirs(private_store)


def test_sweep_command_dry_run_and_errors(private_store, capsys, monkeypatch):
    """``attnrank sweep --dry-run`` lists the runs to train and how many are stored; bad flags exit 2."""
    monkeypatch.setattr("attnrank.core.train.train", lambda *a, **k: pytest.fail("trained"))
    assert main(["sweep", "--profile", "ci", "--chapters", "temp", "--dry-run"]) == 0
    out = capsys.readouterr().out
    # the grid's 130 and the detailed tau = 2 (off the ci grid), both models, five seeds
    assert out.startswith("140 runs of the ci profile, 0 stored, 140 to train") and "process pool:" in out
    # runs that differ beyond arch, tau, heads and seed say how (the causal chapter's query/key scales)
    assert main(["sweep", "--profile", "ci", "--chapters", "causal", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "qk_init_scale=10" in out and "qk_lr_scale=10" in out and "max_grad_norm=0" in out
    # the theory chapter's sequence-length runs at n = 32 are the temperature grid's runs at tau = 1;
    # the causal chapter adds its 2 x 2 and twins; the learned chapter the study's BERT at tau = 1 (5 seeds); the
    # temperature chapter its detailed tau = 2, off the ci grid (2 models x 5 seeds); the loss chapter claim (ii)'s
    # init x s runs at tau = 1 (2 models x 5 seeds)
    assert len(experiments.book_runs("ci")) == 130 + 24 - 6 + 50 + 5 + 10 + 10
    assert experiments.book_runs("ci", ["target"]) == []
    for argv, param in (
        (["--executor", "dask"], "executor"),
        (["--executor", "dask", "--dry-run"], "executor"),  # a dry run prints the executor's plan: checked too
        (["--chapters", "nope"], "chapters"),
        (["--chapters", ""], "chapters"),  # no chapter is not every chapter
        (["--workers", "0"], "workers"),
        (["--threads-per-worker", "0"], "threads_per_worker"),
    ):
        assert main(["sweep", "--profile", "ci", *argv]) == 2
        assert capsys.readouterr().err.startswith(f"attnrank: error: {param}:")
    assert main(["recipe", "--profile", "ci", "--executor", "dask", "--dry-run"]) == 2
    assert capsys.readouterr().err.startswith("attnrank: error: executor: got 'dask'; allowed values: 'serial'")


def test_book_build_sweeps_up_front(monkeypatch, tmp_path):
    """The Sphinx extension trains the toc's runs up front (with the progress bar) before any chapter runs."""
    from types import SimpleNamespace

    from attnrank import sphinxext

    seen = {}
    monkeypatch.setattr(grid, "sweep", lambda configs, **kw: seen.update(configs=configs, **kw))
    monkeypatch.setenv("ATTNRANK_PROFILE", "ci")
    (tmp_path / "_toc.yml").write_text(
        "root: chapters/intro\nparts:\n  - chapters:\n      - file: chapters/theory\n      - file: chapters/temp\n"
    )
    app = SimpleNamespace(srcdir=str(tmp_path))
    sphinxext._sweep_up_front(app, SimpleNamespace(attnrank_sweep="process"))
    assert seen["configs"] == experiments.book_runs("ci", ["theory", "temp"]) and seen["executor"] == "process"
    assert seen["progress"] is True
    seen.clear()
    sphinxext._sweep_up_front(app, SimpleNamespace(attnrank_sweep="off"))
    assert not seen


def test_a_dry_run_refuses_what_the_sweep_would_refuse(tmp_path, monkeypatch, capsys):
    """A dry run once said "24 to train", rc 0, on a store nobody can write and on a corpus of whitespace, where the
    sweep refuses both: it now makes the sweep's first checks and says the same one line."""
    monkeypatch.setattr("attnrank.core.train.train", lambda *a, **k: pytest.fail("trained"))
    monkeypatch.setenv("ATTNRANK_RUNS", "/proc/attnrank-runs")
    assert main(["sweep", "--profile", "ci", "--chapters", "theory", "--dry-run"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("attnrank: error: ATTNRANK_RUNS:")
    monkeypatch.setenv("ATTNRANK_RUNS", str(tmp_path / "runs"))
    monkeypatch.setenv("ATTNRANK_DATA", str(tmp_path / "data"))
    blank = tmp_path / "blank"
    blank.mkdir()
    (blank / "train.txt").write_text(" \n\t " * 500)
    (blank / "validation.txt").write_text("  \n" * 100)
    assert main(["sweep", "--profile", "ci", "--chapters", "theory", "--dataset", f"hf:{blank}", "--dry-run"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("attnrank: error: dataset:"), err
