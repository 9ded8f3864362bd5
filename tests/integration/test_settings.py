"""Settings from the environment and the command line: path settings resolved once against the
starting directory, a read-only data folder that still serves its runs, a dataset card that points
outside its folder, bad executor and Ray address values named in one line before anything runs."""

from __future__ import annotations

import errno
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import fake_train

from attnrank import sphinxext
from attnrank.cli import build, main
from attnrank.core import data
from attnrank.core.errors import ConfigError
from attnrank.core.profiles import resolve_config
from attnrank.runs import grid, store, tables

SRC = str(Path(__file__).resolve().parents[2] / "src")


def test_path_settings_are_resolved_once_against_the_starting_directory(tmp_path, monkeypatch, corpus):
    """A relative ATTNRANK_DATA in a book build: the up-front sweep and the chapters (executed in
    chapters/) reach the same folder; so do ATTNRANK_RUNS and a relative local dataset."""
    (tmp_path / "chapters").mkdir()
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ATTNRANK_DATA", "reldata")
    monkeypatch.setenv("ATTNRANK_RUNS", "~/store")
    monkeypatch.setenv("ATTNRANK_DATASET", f"hf:{os.path.relpath(corpus, tmp_path)}")
    changed = data.absolute_path_settings()
    assert changed == {
        "ATTNRANK_DATA": str(tmp_path / "reldata"),
        "ATTNRANK_RUNS": str(Path("~/store").expanduser()),
        "ATTNRANK_DATASET": f"hf:{corpus.resolve()}",
    }
    monkeypatch.chdir(tmp_path / "chapters")  # where the book executes a chapter
    assert data.data_dir(write=False) == tmp_path / "reldata"
    assert data.absolute_path_settings() == {}  # once: nothing left to resolve
    assert resolve_config("gpt2", "ci").dataset == f"hf:{corpus.resolve()}"


def test_the_book_build_and_the_command_line_resolve_the_path_settings(tmp_path, monkeypatch):
    connected = []

    class App:
        def connect(self, event, handler, priority=500):
            connected.append((event, priority, handler.__name__))

        def __getattr__(self, name):
            return lambda *a, **k: None

    sphinxext.setup(App())
    first = min((p, n) for e, p, n in connected if e == "config-inited")
    assert first == (50, "_absolute_paths")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ATTNRANK_RUNS", "rel-runs")
    assert main(["runs"]) == 0
    assert os.environ["ATTNRANK_RUNS"] == str(tmp_path / "rel-runs")


def test_a_read_only_data_folder_serves_its_runs(tmp_path, monkeypatch, capsys):
    """ATTNRANK_DATA holding runs/ on read-only media: listing, reading and loading runs need no write."""
    folder = tmp_path / "data"
    monkeypatch.setenv("ATTNRANK_DATA", str(folder))
    monkeypatch.delenv("ATTNRANK_RUNS", raising=False)
    monkeypatch.setattr("attnrank.core.train.train", fake_train(2.0))
    stored = store.run(arch="gpt2", profile="ci", max_steps=7)
    real_open, real_mkdir = os.open, os.mkdir

    def refuse(path):
        raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(path))

    def no_write_open(path, flags, *args, **kwargs):
        if str(path).startswith(str(folder)) and flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT):
            refuse(path)
        return real_open(path, flags, *args, **kwargs)

    def no_mkdir(path, *args, **kwargs):
        if str(path).startswith(str(folder)):
            refuse(path)
        return real_mkdir(path, *args, **kwargs)

    monkeypatch.setattr(os, "open", no_write_open)
    monkeypatch.setattr(os, "mkdir", no_mkdir)
    monkeypatch.setattr("attnrank.core.train.train", lambda *a, **k: pytest.fail("trained"))
    assert main(["runs"]) == 0 and stored.key in capsys.readouterr().out
    assert list(store.load_runs().key) == [stored.key]
    assert store.run(arch="gpt2", profile="ci", max_steps=7).key == stored.key
    assert tables.table([resolve_config("gpt2", "ci", max_steps=7)], long=False).key.tolist() == [stored.key]
    assert main(["train", "--arch", "gpt2", "--profile", "ci", "--max-steps", "7", "--quiet"]) == 0
    assert "read from the store" in capsys.readouterr().out


def test_a_dataset_card_pointing_outside_its_folder_is_keyed_on_those_files(tmp_path):
    a, b = tmp_path / "A", tmp_path / "B"
    a.mkdir()
    b.mkdir()
    (b / "train.txt").write_text("the first words\nand more of them\n")
    (b / "validation.txt").write_text("held out words\n")
    (a / "README.md").write_text(
        "---\nconfigs:\n- config_name: default\n  data_files:\n  - split: train\n    path: ../B/train.txt\n"
        "  - split: validation\n    path: ../B/validation.txt\n---\n# A corpus kept elsewhere\n"
    )
    before = data.dataset_fingerprint(f"hf:{a}")
    train, val = data.load_texts(f"hf:{a}")
    assert train == ["the first words", "and more of them"] and val == ["held out words"]
    (b / "train.txt").write_text("the first words\nand other ones\n")
    assert data.dataset_fingerprint(f"hf:{a}") != before
    cfg = resolve_config("gpt2", "ci", dataset=f"hf:{a}")
    key = store.run_key(cfg)
    (b / "validation.txt").write_text("other held out words\n")
    assert store.run_key(cfg) != key


@pytest.mark.parametrize(
    "value, message",
    [
        ("bogus", "got 'bogus'; allowed values: 'serial', 'process', 'ray', 'off'"),
        ("Process", "got 'Process'; allowed values: 'serial', 'process', 'ray', 'off'"),
    ],
)
def test_a_bad_sweep_executor_stops_the_book_build_in_one_line(tmp_path, monkeypatch, capsys, value, message):
    monkeypatch.setenv("ATTNRANK_SWEEP", value)

    class App:
        srcdir = str(Path(__file__).resolve().parents[2])
        outdir = str(tmp_path / "_build" / "html")
        config = type(
            "C", (), {"attnrank_sweep": "process", "attnrank_execute_up_front": True, "nb_execution_mode": "cache"}
        )()

    with pytest.raises(SystemExit) as stop:
        build.one_line_errors(sphinxext._sweep_up_front_app)(App())
    assert stop.value.code == 2
    assert capsys.readouterr().err == f"attnrank: error: ATTNRANK_SWEEP: {message}\n"


@pytest.mark.parametrize(
    "env, configured, message",
    [
        ("maybe", True, "^ATTNRANK_EXECUTE_UP_FRONT: got 'maybe'; allowed values: '1', 'true'"),
        (None, "sometimes", "^attnrank_execute_up_front: got 'sometimes'; allowed values: True, False"),
    ],
)
def test_a_bad_execute_up_front_switch_stops_the_build_before_any_training(
    monkeypatch, tmp_path, env, configured, message
):
    """The switch is checked with the other settings, before the grid trains (a cold default build trains for
    minutes before it executes a chapter)."""
    if env is None:
        monkeypatch.delenv("ATTNRANK_EXECUTE_UP_FRONT", raising=False)
    else:
        monkeypatch.setenv("ATTNRANK_EXECUTE_UP_FRONT", env)
    trained = []
    monkeypatch.setattr(build, "train_book", lambda *a, **k: trained.append(a))
    config = type(
        "C", (), {"attnrank_sweep": "process", "attnrank_execute_up_front": configured, "nb_execution_mode": "cache"}
    )()
    app = type("A", (), {"srcdir": ".", "outdir": str(tmp_path / "_build" / "html"), "config": config})()
    with pytest.raises(ConfigError, match=message):
        sphinxext._sweep_up_front_app(app)
    assert trained == []
    with pytest.raises(ConfigError, match=message):
        sphinxext._execute_up_front(app, config)


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize(
    "address, message",
    [
        ("bogus", "address: got 'bogus'; allowed values: 'local' (a private Ray instance), 'auto'"),
        (
            "127.0.0.1:{port}",
            "address: got '127.0.0.1:{port}': nothing answers at 127.0.0.1:{port} (Connection refused)",
        ),
        ("ray://127.0.0.1:{port}", "address: got 'ray://127.0.0.1:{port}': "),
    ],
)
def test_a_bad_ray_address_is_one_line_before_anything_starts(private_store, monkeypatch, capsys, address, message):
    pytest.importorskip("ray")
    port = _closed_port()
    address, message = address.format(port=port), message.format(port=port)
    monkeypatch.setattr(grid, "plan", lambda *a, **k: pytest.fail("planned before the address was checked"))
    rc = main(["sweep", "--profile", "ci", "--chapters", "dynamics", "--executor", "ray", "--address", address])
    err = capsys.readouterr().err
    assert rc == 2
    (line,) = [x for x in err.splitlines() if x.strip()]
    assert line.startswith(f"attnrank: error: {message}"), line
    monkeypatch.setenv("RAY_ADDRESS", "bogus")
    with pytest.raises(ConfigError, match="^RAY_ADDRESS: got 'bogus'"):
        grid.ray_address()


def test_ray_auto_without_a_cluster_is_one_line(private_store, monkeypatch, capsys):
    pytest.importorskip("ray")
    monkeypatch.setattr(grid, "preflight", lambda configs: None)
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "attnrank",
            "sweep",
            "--profile",
            "ci",
            "--chapters",
            "dynamics",
            "--executor",
            "ray",
            "--address",
            "auto",
        ],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "PYTHONPATH": SRC, "RAY_ADDRESS": ""},
    )
    assert done.returncode == 2, done.stderr[-2000:]
    errors = [x for x in done.stderr.splitlines() if x.startswith("attnrank: error:")]
    assert errors and errors[0].startswith("attnrank: error: address: got 'auto': Ray could not connect"), done.stderr[
        -2000:
    ]
    assert "Traceback" not in done.stderr
