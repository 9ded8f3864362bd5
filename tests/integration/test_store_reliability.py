"""The run store when things go wrong: a lock file that cannot be opened, a stopped lock holder, a
marker that lists too little, weights that do not fit the model, a full disk, a failed run's final
values; and ``attnrank train`` saying whether it trained or read a run."""

from __future__ import annotations

import errno
import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from attnrank.cli import main
from attnrank.core.errors import RunDamaged
from attnrank.core.profiles import resolve_config
from attnrank.runs import store

SRC = str(Path(__file__).resolve().parents[2] / "src")
CFG = dict(arch="gpt2", profile="ci", max_steps=3)


@pytest.fixture
def runs(tmp_path, monkeypatch):
    monkeypatch.setenv("ATTNRANK_RUNS", str(tmp_path / "runs"))
    return tmp_path / "runs"


def _error_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.startswith("attnrank: error:")]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


def test_a_lock_file_that_cannot_be_opened_is_named(runs, capsys):
    cfg = resolve_config(**CFG)
    key = store.run_key(cfg)
    runs.mkdir(parents=True)
    (runs / f".{key}.lock").mkdir()  # cannot be opened as a file, by anyone (root included)
    assert main(["train", "--arch", "gpt2", "--profile", "ci", "--max-steps", "3", "--quiet"]) == 2
    line = _error_line(capsys.readouterr().err)
    assert line.startswith(f"attnrank: error: ATTNRANK_RUNS: the lock path {runs}/.{key}.lock of run ")
    assert line.endswith("is a folder, not a lock file; remove that folder")


def test_a_lock_file_of_another_user_names_its_live_holder_and_never_says_remove_it(runs, monkeypatch):
    """On a shared store, a second user whose umask keeps them from the lock file was told "remove it (no process
    holds it)" while the holder was alive: the message now reads the holder file and says to wait; and a store the
    user cannot write (as --force on a read-only store) says so."""
    import json
    import os
    import socket
    import time

    runs.mkdir(parents=True)
    lock, exc = runs / ".k.lock", PermissionError(13, "Permission denied")
    lock.write_text("")
    text = store._lock_problem(lock, runs, "k", "gpt2-k", exc, "ATTNRANK_RUNS")
    assert "belongs to another user; if none of that user's processes is training this run" in text
    holder = {"pid": os.getpid(), "host": socket.gethostname(), "since": "2026-12-06T10:00:00", "started": time.time()}
    (runs / ".k.holder").write_text(json.dumps(holder))
    text = store._lock_problem(lock, runs, "k", "gpt2-k", exc, "ATTNRANK_RUNS")
    assert f"its lock is held by pid {os.getpid()}" in text and "wait for that process" in text
    assert "remove" not in text and "no process holds it" not in text
    monkeypatch.setattr(store.os, "access", lambda path, mode: False)
    text = store._lock_problem(lock, runs, "k", "gpt2-k", exc, "ATTNRANK_RUNS")
    assert f"the run store {runs} cannot be written by this user, and training it (or --force) writes there" in text


def test_a_stopped_lock_holder_is_named_while_waiting(runs, monkeypatch, capsys):
    cfg = resolve_config(**CFG)
    key = store.run_key(cfg)
    runs.mkdir(parents=True)
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            textwrap.dedent(
                f"""
                import sys, time
                from pathlib import Path
                from attnrank.runs import store
                lock = store._acquire(Path({str(runs)!r}), {key!r}, "x")
                print("HELD", flush=True)
                time.sleep(600)
                """
            ),
        ],
        env={**os.environ, "PYTHONPATH": SRC},
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "HELD"
        holder.send_signal(signal.SIGSTOP)
        monkeypatch.setattr(store, "LOCK_REPORT_FIRST", 0.5)
        monkeypatch.setattr(store, "LOCK_REPORT_EVERY", 1.0)
        result = {}
        waiter = threading.Thread(target=lambda: result.setdefault("run", store.run(cfg)))
        waiter.start()
        time.sleep(4)
        assert waiter.is_alive()  # still waiting, and saying so
        holder.kill()
        waiter.join(300)
        assert result["run"].fresh
    finally:
        holder.kill()
        holder.wait()
    lines = [line for line in capsys.readouterr().err.splitlines() if line.startswith("waiting for run")]
    assert len(lines) >= 3, lines
    assert lines[0].startswith(f"waiting for run gpt2-{key}: its lock is held by pid {holder.pid} on ")
    assert f"that process is stopped (resume it with kill -CONT {holder.pid}, or end it)" in lines[0]
    assert lines[0].endswith("waited 0 s") or lines[0].endswith("waited 1 s")


def test_a_marker_that_lists_only_config_and_summary_is_damaged(runs, caplog):
    r = store.run(**CFG)
    manifest = json.loads((r.path / "COMPLETE").read_text())
    manifest["files"] = {k: v for k, v in manifest["files"].items() if k in ("config.json", "summary.json")}
    (r.path / "COMPLETE").write_text(json.dumps(manifest))
    (r.path / "train_log.csv").unlink()
    (r.path / "model.safetensors").unlink()
    (r.path / "ranks.parquet").write_bytes((r.path / "ranks.parquet").read_bytes()[:100])
    assert store.load_runs().empty
    assert "is damaged" in caplog.text
    again = store.run(**CFG)
    assert caplog.text.count("is damaged") == 1  # read again under the run's lock, but said once
    assert again.fresh and len(again.train_log) and again.load_model() is not None
    # the summary names every file written; a marker that omits one of them (here the weights) is damaged
    manifest = json.loads((again.path / "COMPLETE").read_text())
    assert set(again.summary["files"]) == set(manifest["files"]) >= {"model.safetensors", "sequences.parquet"}
    del manifest["files"]["model.safetensors"]
    (again.path / "COMPLETE").write_text(json.dumps(manifest))
    assert store.load_runs().empty


@pytest.mark.parametrize("change", ["rename", "drop"])
def test_weights_that_do_not_fit_the_model_are_refused(runs, change):
    from safetensors.torch import load_file, save_file

    r = store.run(**CFG)
    path = r.path / "model.safetensors"
    state = load_file(str(path))
    name = next(k for k in state if k.endswith("attn.c_attn.weight"))
    if change == "rename":
        state[name.replace("c_attn", "c_attention")] = state.pop(name)
    else:
        del state[name]
    save_file(state, str(path), metadata={"format": "pt"})
    manifest = json.loads((r.path / "COMPLETE").read_text())
    manifest["files"]["model.safetensors"] = store.file_sha256(path)  # the checksum matches: only the keys are wrong
    (r.path / "COMPLETE").write_text(json.dumps(manifest))
    stored = store.run(**CFG)
    assert not stored.fresh
    with pytest.raises(RunDamaged, match=f"missing: {name.replace('.', '[.]')}"):
        stored.load_model()


def test_the_tied_output_embeddings_may_be_missing(runs):
    r = store.run(**CFG)
    from safetensors.torch import load_file

    assert "lm_head.weight" not in load_file(str(r.path / "model.safetensors"))
    model = r.load_model()
    assert model.lm_head.weight.data_ptr() == model.transformer.wte.weight.data_ptr()


def test_a_full_disk_gives_one_line_and_leaves_no_temporary_folder(runs, monkeypatch, capsys):
    real = store.save_weights

    def full(model, path):
        real(model, path)
        with open(path, "ab") as f:
            f.write(b"x")
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))

    monkeypatch.setattr(store, "save_weights", full)
    assert main(["train", "--arch", "gpt2", "--profile", "ci", "--max-steps", "3", "--quiet"]) == 2
    line = _error_line(capsys.readouterr().err)
    assert line.startswith("attnrank: error: ATTNRANK_RUNS: cannot write run gpt2-")
    assert "(No space left on device); free space there or set ATTNRANK_RUNS" in line
    assert [p.name for p in runs.iterdir() if not p.name.endswith(".lock")] == []


def _tmpfs(path: Path, size: str) -> bool:
    path.mkdir(parents=True, exist_ok=True)
    try:
        done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)], capture_output=True)
    except OSError:
        return False
    return done.returncode == 0


def test_a_real_full_disk(tmp_path, monkeypatch, capsys):
    """The same on a 160 KB tmpfs (where this machine lets tests mount one)."""
    small = tmp_path / "small"
    if not shutil.which("mount") or not _tmpfs(small, "160k"):
        pytest.skip("cannot mount a tmpfs here")
    try:
        monkeypatch.setenv("ATTNRANK_RUNS", str(small / "runs"))
        assert main(["train", "--arch", "gpt2", "--profile", "ci", "--max-steps", "3", "--quiet"]) == 2
        line = _error_line(capsys.readouterr().err)
        assert "No space left on device" in line
        assert [p.name for p in (small / "runs").iterdir() if not p.name.endswith(".lock")] == []
    finally:
        subprocess.run(["umount", str(small)])


def test_a_failed_runs_final_values_are_missing(runs, monkeypatch, capsys):
    bad = dict(arch="gpt2", profile="ci", learning_rate=1e3, warmup_steps=0)
    r = store.run(**bad)
    s = r.summary
    assert s["status"] == "failed" and s["final_val_loss"] is None
    assert set(s["final_rank"].values()) == {None} and all(v == v for v in s["initial_rank"].values())
    row = store.load_runs().iloc[0]
    assert np.isnan(row.final_val_loss) and np.isnan(row["final_rank_rtol_1e-2"]) and row.initial_val_loss > 0
    step = s["failure"]["step"]
    summary = r.rank_summary
    assert summary[summary.step >= step]["mean"].isna().all() and summary[summary.step < step]["mean"].notna().all()
    assert r.ranks[r.ranks.step >= step].value.isna().all()
    monkeypatch.setattr("attnrank.cli.run", lambda **kw: r)  # the command line prints the stored failed run
    assert main(["train", "--arch", "gpt2", "--profile", "ci", "--quiet"]) == 0
    out = capsys.readouterr().out
    assert f"status failed at step {step}: " in out
    assert "  validation loss" in out and out.split("  validation loss")[1].split("\n")[0].endswith("   missing")


def test_train_says_whether_it_trained_or_read_the_run(runs, capsys):
    argv = ["train", "--arch", "gpt2", "--profile", "ci", "--max-steps", "3", "--quiet"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "  trained now, in " in out and "read from the store" not in out
    summary = store.load_runs().iloc[0]
    assert main(argv) == 0
    out = capsys.readouterr().out
    finished = json.loads((Path(summary.path) / "summary.json").read_text())["finished_at"].replace("T", " ")
    assert f"  read from the store, nothing recomputed: trained {finished} in " in out
    assert "trained now" not in out


@pytest.mark.parametrize("what", ["tokenizer", "blocks", "blocks, short write"])
def test_a_full_disk_while_caching_data_gives_one_line_and_leaves_no_temporary_file(
    tmp_path, monkeypatch, capsys, what
):
    import numpy as np
    from tokenizers import Tokenizer

    data_folder = tmp_path / "data"
    monkeypatch.setenv("ATTNRANK_DATA", str(data_folder))
    monkeypatch.setenv("ATTNRANK_RUNS", str(tmp_path / "runs"))
    if what == "tokenizer":

        def full(self, path, *a, **k):
            Path(path).write_text("{")
            raise Exception("No space left on device (os error 28)")  # how tokenizers reports it

        monkeypatch.setattr(Tokenizer, "save", full)
    elif what == "blocks":

        def full(path, arr, *a, **k):
            Path(path).write_bytes(b"\x93NUMPY")
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))

        monkeypatch.setattr(np, "save", full)
    else:

        def short(path, arr, *a, **k):  # what numpy raises when the disk fills mid-array: no errno
            Path(path).write_bytes(b"\x93NUMPY" + bytes(100))
            raise OSError("2167680 requested and 44000 written")

        monkeypatch.setattr(np, "save", short)
    assert main(["train", "--arch", "gpt2", "--profile", "ci", "--max-steps", "3", "--quiet"]) == 2
    line = _error_line(capsys.readouterr().err)
    assert line.startswith("attnrank: error: ATTNRANK_DATA: cannot write the ")
    reason = "written: No space left on device?)" if "short" in what else "(No space left on device)"
    assert f"{reason}; free space there or set ATTNRANK_DATA to another folder" in line
    assert not [p for p in data_folder.rglob("*") if ".tmp" in p.name]


@pytest.mark.parametrize("size", ["8k", "64k"])
def test_a_real_full_data_folder(tmp_path, monkeypatch, capsys, size):
    """ATTNRANK_DATA on a tiny tmpfs (the tokenizer or the token blocks fill it, whichever comes first): one line
    naming ATTNRANK_DATA, no partial file left, and nothing in the run store."""
    small = tmp_path / "small"
    if not shutil.which("mount") or not _tmpfs(small, size):
        pytest.skip("cannot mount a tmpfs here")
    try:
        monkeypatch.setenv("ATTNRANK_DATA", str(small / "data"))
        monkeypatch.setenv("ATTNRANK_RUNS", str(tmp_path / "runs"))
        assert main(["train", "--arch", "gpt2", "--profile", "ci", "--max-steps", "3", "--quiet"]) == 2
        err = capsys.readouterr().err
        line = _error_line(err)
        assert line.startswith("attnrank: error: ATTNRANK_DATA: ") and "Traceback" not in err
        assert "No space left on device" in line
        assert not [p for p in (small / "data").rglob("*") if ".tmp" in p.name]
    finally:
        subprocess.run(["umount", str(small)])


def test_a_full_disk_while_caching_a_table_gives_one_line_and_leaves_no_temporary_file(tmp_path, monkeypatch):
    """The table cache (attnrank.runs.cache.cached) on a 64 KB tmpfs: a table too large to write is one ConfigError
    naming ATTNRANK_DATA, and no partial Parquet file is left."""
    import numpy as np
    import pandas as pd

    from attnrank.core.errors import ConfigError
    from attnrank.runs import cache

    small = tmp_path / "small"
    if not shutil.which("mount") or not _tmpfs(small, "64k"):
        pytest.skip("cannot mount a tmpfs here")
    try:
        monkeypatch.setenv("ATTNRANK_DATA", str(small / "data"))

        def big(n):
            return pd.DataFrame({"x": np.random.default_rng(0).random(n)})

        big.__module__ = "attnrank.core.rank"  # a table the library computes (its module is part of the key)
        with pytest.raises(ConfigError) as e:
            cache.cached("big", big, n=100_000)
        assert e.value.param == "ATTNRANK_DATA" and "No space left on device" in str(e.value)
        assert "\n" not in str(e.value)
        assert not [p for p in (small / "data").rglob("*.parquet")]
    finally:
        subprocess.run(["umount", str(small)])
