"""A hostile environment against the guarantees of docs/guarantees.md: kill -9 in the middle of a pool sweep, two
sweeps at once on one store, a diverging run among others, odd characters in a dataset path, an
empty validation split, a one-line corpus, bad thread settings."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from attnrank.cli import main
from attnrank.core.profiles import resolve_config
from attnrank.runs import grid, store

SRC = str(Path(__file__).resolve().parents[2] / "src")
SWEEP = """
import json, sys
from attnrank.runs import grid
from attnrank.core.profiles import resolve_config
configs = [resolve_config(a, "ci", tau=t, max_steps=60) for a in ("modernbert", "gpt2") for t in (0.5, 1.0, 2.0)]
df = grid.sweep(configs, executor="process", workers=2, progress=False)
print(json.dumps({"trained": df.attrs["sweep"]["trained"], "keys": sorted(df.key)}))
"""


@pytest.fixture
def runs(tmp_path, monkeypatch):
    monkeypatch.setenv("ATTNRANK_RUNS", str(tmp_path / "runs"))
    for name in ("ATTNRANK_DATASET", "ATTNRANK_THREADS"):
        monkeypatch.delenv(name, raising=False)
    return tmp_path / "runs"


def _sweep(runs: Path, **popen) -> subprocess.Popen:
    env = {**os.environ, "ATTNRANK_RUNS": str(runs), "PYTHONPATH": SRC}
    return subprocess.Popen([sys.executable, "-c", SWEEP], env=env, stdout=subprocess.PIPE, text=True, **popen)


def _results(runs: Path) -> list[str]:
    return sorted(p.name for p in runs.iterdir() if store.RESULT_NAME.fullmatch(p.name)) if runs.exists() else []


def test_kill_9_during_a_pool_sweep_then_a_rerun_loses_nothing_and_trains_nothing_twice(runs):
    driver = _sweep(runs, start_new_session=True)
    deadline = time.time() + 600
    while time.time() < deadline and len(_results(runs)) < 2:
        time.sleep(0.2)
    done_before = set(_results(runs))
    assert len(done_before) >= 2, "the sweep did not get going"
    for p in [psutil.Process(driver.pid), *psutil.Process(driver.pid).children(recursive=True)]:
        p.send_signal(signal.SIGKILL)  # the driver and its workers, mid-training
    driver.wait()
    time.sleep(0.5)
    survivors = set(_results(runs))
    assert done_before <= survivors  # nothing finished is lost
    again = _sweep(runs)
    out, _ = again.communicate(timeout=1800)
    assert again.returncode == 0
    result = json.loads(out.strip().splitlines()[-1])
    assert result["trained"] == 6 - len(survivors)  # only the missing runs are trained
    assert len(_results(runs)) == 6 and len(store.load_runs()) == 6
    assert not [p for p in runs.iterdir() if p.name.startswith(".tmp-")]  # cleaned on the way


def test_two_sweeps_at_once_on_one_store_train_each_run_once(runs):
    first, second = _sweep(runs), _sweep(runs)
    outs = [json.loads(p.communicate(timeout=1800)[0].strip().splitlines()[-1]) for p in (first, second)]
    assert first.returncode == 0 and second.returncode == 0
    assert outs[0]["keys"] == outs[1]["keys"] and len(outs[0]["keys"]) == 6
    assert outs[0]["trained"] + outs[1]["trained"] == 6
    assert len(_results(runs)) == 6


def test_a_diverging_run_in_the_middle_of_a_pool_sweep(runs):
    configs = [
        resolve_config("gpt2", "ci", max_steps=10),
        resolve_config("gpt2", "ci", learning_rate=1e3, warmup_steps=0),
        resolve_config("modernbert", "ci", max_steps=10),
    ]
    df = grid.sweep(configs, executor="process", workers=2, progress=False)
    assert list(df.status) == ["complete", "failed", "complete"]
    assert df.final_val_loss.isna().tolist() == [False, True, False]


def test_odd_characters_in_a_dataset_path(runs, corpus, tmp_path):
    odd = tmp_path / "a b:c é'q\"x"
    corpus.rename(odd)
    r = store.run(arch="gpt2", profile="ci", max_steps=3, dataset=f"hf:{odd}")
    assert r.summary["status"] == "complete" and r.config["dataset"] == f"hf:{odd}"
    assert store.run(arch="gpt2", profile="ci", max_steps=3, dataset=f"hf:{odd}").key == r.key


def test_an_empty_validation_split_is_named(runs, corpus, capsys):
    (corpus / "validation.txt").write_text("")
    assert main(["train", "--arch", "gpt2", "--profile", "ci", "--quiet", "--dataset", f"hf:{corpus}"]) == 2
    err = capsys.readouterr().err
    assert err == (
        f"attnrank: error: dataset: 'hf:{corpus}' could not be loaded: its 'validation' split holds no data "
        f"({corpus}/validation.txt is empty); add text to it or remove it (without a validation split, 5% of "
        "the documents are held out)\n"
    )


@pytest.mark.parametrize(
    "files, message",
    [
        ({"train.txt": "one single line of text\n"}, "holds too little text: one document and no validation split"),
        (
            {"train.txt": "one single line of text\n", "validation.txt": "and one more\n"},
            "gives 0 training and 0 validation blocks of",
        ),
    ],
)
def test_a_one_line_corpus_is_named(runs, tmp_path, capsys, files, message):
    folder = tmp_path / "tiny"
    folder.mkdir()
    for name, text in files.items():
        (folder / name).write_text(text)
    assert main(["train", "--arch", "gpt2", "--profile", "ci", "--quiet", "--dataset", f"hf:{folder}"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("attnrank: error: ") and message in err


@pytest.mark.parametrize("value", ["0", "abc", "-1", "1.5"])
def test_bad_thread_settings_are_one_line(runs, monkeypatch, capsys, value):
    monkeypatch.setenv("ATTNRANK_THREADS", value)
    assert main(["train", "--arch", "gpt2", "--profile", "ci", "--quiet"]) == 2
    assert capsys.readouterr().err == f"attnrank: error: ATTNRANK_THREADS: got {value!r}; expected an integer >= 1\n"
    assert main(["sweep", "--profile", "ci", "--dry-run"]) == 2


def test_ctrl_c_during_training_is_one_line_and_stores_nothing(runs, monkeypatch, capsys):
    """Ctrl-C while ``attnrank train`` trains: exit status 130 and one line, not a traceback through torch;
    no result and no temporary folder of the unfinished run is left in the store."""
    from attnrank.core import train

    def interrupted(cfg, progress=True):
        raise KeyboardInterrupt

    monkeypatch.setattr(train, "train", interrupted)
    assert main(["train", "--arch", "gpt2", "--profile", "ci", "--quiet"]) == 130
    err = capsys.readouterr().err
    assert err == "attnrank: interrupted: every finished run is stored; the unfinished one was not\n"
    assert _results(runs) == [] and not [p for p in runs.iterdir() if p.name.startswith(".tmp-")]


def test_ctrl_c_while_the_command_line_loads_is_one_line(runs):
    """Ctrl-C in the seconds `attnrank` takes to load torch and transformers was a 16-38 line traceback (or, inside
    scipy's initialisation, its ImportError and exit status 1): it is held until they have loaded, then ends the
    command with one line and 130."""
    env = {**os.environ, "ATTNRANK_RUNS": str(runs), "PYTHONPATH": SRC}
    proc = subprocess.Popen(
        [sys.executable, "-m", "attnrank", "train", "--arch", "gpt2", "--profile", "ci", "--quiet"],
        env=env,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),  # as a terminal has it
    )
    maps = Path(f"/proc/{proc.pid}/maps")
    deadline = time.time() + 120
    while time.time() < deadline and "libtorch" not in (maps.read_text() if maps.exists() else ""):
        time.sleep(0.05)  # until torch is loading: inside the command line's imports, which go on for seconds
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 130, err
    # held to the end of the imports; on a machine that loads them at once, Ctrl-C lands in the command itself
    assert err in (
        "attnrank: interrupted before it started: nothing was run\n",
        "attnrank: interrupted: every finished run is stored; the unfinished one was not\n",
    ), err
    assert _results(runs) == []


def test_sigterm_to_a_pool_sweep_ends_its_workers_too(runs):
    """`kill` (SIGTERM) sent to `attnrank sweep` alone, as `timeout` and job runners do, ended the command and left its
    two pool workers training their runs to the end, unowned; it now ends them with it, as Ctrl-C does."""
    env = {**os.environ, "ATTNRANK_RUNS": str(runs), "PYTHONPATH": SRC}
    proc = subprocess.Popen(
        [sys.executable, "-m", "attnrank", "sweep", "--profile", "ci", "--chapters", "dynamics", "--workers", "2"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.time() + 600
    workers = []
    while time.time() < deadline and not _results(runs):  # the pool is training
        workers = psutil.Process(proc.pid).children(recursive=True)
        time.sleep(0.2)
    assert workers and _results(runs), "the sweep did not get going"
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert err.endswith("attnrank: interrupted: every finished run is stored; the unfinished one was not\n"), err
    _, alive = psutil.wait_procs(workers, timeout=30)
    assert not alive, [p.cmdline()[:3] for p in alive]


def _sleep(seconds: float) -> float:
    time.sleep(seconds)
    return seconds


def test_stopping_a_pool_ends_the_runs_its_workers_are_training():
    """`grid._stop` (Ctrl-C or SIGTERM in a sweep) terminated the workers it read after the pool's shutdown, which
    forgets them: none was ended, and the command waited for their runs (minutes at the default profile)."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    pool = ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("spawn"))
    futures = [pool.submit(_sleep, 600) for _ in range(4)]
    deadline = time.time() + 120
    while time.time() < deadline and len(pool._processes or {}) < 2:
        time.sleep(0.1)
    workers = [psutil.Process(p.pid) for p in pool._processes.values()]
    time.sleep(2)  # the workers are sleeping in their tasks
    grid._stop(pool)
    _, alive = psutil.wait_procs(workers, timeout=20)
    assert not alive and len(workers) == 2
    assert all(f.cancelled() or f.done() for f in futures[3:])
