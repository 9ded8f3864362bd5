"""The run store under faults: crashes between steps, damaged markers, read-only media, bad paths.

Training is replaced by a stand-in that returns small fixed tables, so these tests check the
store's file handling alone, in well under a second each.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from conftest import fake_train

from attnrank.cli import main
from attnrank.core.errors import ConfigError
from attnrank.runs import store


def _no_training(*args, **kwargs):
    pytest.fail("trained although a complete result is stored")


CFG = dict(arch="gpt2", profile="ci", max_steps=7)


def _result_dirs(runs: Path) -> list[str]:
    return sorted(p.name for p in runs.iterdir() if p.is_dir() and not p.name.startswith(".tmp-"))


# --------------------------------------------------------------------- what is a result


def test_a_temporary_or_misnamed_folder_is_never_a_result(private_store, monkeypatch, capsys):
    """docs/guarantees.md, "A killed run never shows up as a result": only folders named <arch>-<16 hex digits> whose
    marker names the same key are results (a `.tmp-KEY-PID` folder left by a kill after its marker was
    written is not listed)."""
    monkeypatch.setattr("attnrank.core.train.train", fake_train(3.0))
    r = store.run(**CFG)
    shutil.copytree(r.path, private_store / f".tmp-{r.key}-12345")  # killed after the marker, before the rename
    other = "0123456789abcdef" if r.key != "0123456789abcdef" else "fedcba9876543210"
    shutil.copytree(r.path, private_store / f"gpt2-{other}")  # a marker whose key is not the folder's
    shutil.copytree(r.path, private_store / f"gpt2-{r.key}-copy")
    df = store.load_runs()
    assert list(df.key) == [r.key] and list(df.path) == [str(r.path)]
    assert main(["runs"]) == 0
    out = capsys.readouterr().out
    assert out.count(r.key) == 1 and other not in out and "12345" not in out


# --------------------------------------------------------------------- atomic replacement


class _Killed(Exception):
    """Stands for SIGKILL at one step of writing the store."""


@pytest.mark.parametrize("kill_at", [1, 2, 3])
def test_forced_replacement_leaves_the_old_or_the_new_result(private_store, monkeypatch, kill_at):
    """docs/guarantees.md, "A killed run never shows up as a result": `force=True` replaces a stored run atomically: a
    process killed before any rename or delete of the replacement leaves the old or the new result,
    which `load_runs()` lists and `run()` serves without training; the next run cleans up what was left."""
    monkeypatch.setattr("attnrank.core.train.train", fake_train(1.0))
    old = store.run(**CFG)
    monkeypatch.setattr("attnrank.core.train.train", fake_train(2.0))
    steps = []

    def counted(fn):
        def step(path, *args, **kwargs):
            if Path(path).parent == private_store:
                steps.append((fn.__name__, Path(path).name))
                if len(steps) == kill_at:
                    raise _Killed(f"killed before {fn.__name__}({Path(path).name})")
            return fn(path, *args, **kwargs)

        return step

    # every rename and delete of a folder in the store
    monkeypatch.setattr(os, "replace", counted(os.replace))
    monkeypatch.setattr(os, "rename", counted(os.rename))
    monkeypatch.setattr(shutil, "rmtree", counted(shutil.rmtree))
    with pytest.raises(_Killed):
        store.run(**CFG, force=True)
    monkeypatch.undo()
    monkeypatch.setenv("ATTNRANK_RUNS", str(private_store))
    monkeypatch.setattr("attnrank.core.train.train", _no_training)
    listed = store.load_runs()
    assert len(listed) == 1 and listed.final_val_loss.iloc[0] in (1.0, 2.0)
    served = store.run(**CFG)
    assert not served.fresh and served.summary["final_val_loss"] in (1.0, 2.0)
    assert served.path == old.path  # an interrupted replacement is undone in place
    assert served.summary["final_val_loss"] == store.load_runs().final_val_loss.iloc[0]
    monkeypatch.setattr("attnrank.core.train.train", fake_train(3.0))
    again = store.run(**CFG, force=True)
    assert again.fresh and again.summary["final_val_loss"] == 3.0
    assert _result_dirs(private_store) == [old.path.name] and not list(
        private_store.glob(".tmp-*")
    )  # nothing left over


def test_sigkill_between_the_renames_of_a_forced_replacement_keeps_the_old_result(private_store, monkeypatch):
    """docs/guarantees.md, "A killed run never shows up as a result": a process killed by SIGKILL after it
    renamed the old result aside and before it renamed the new one in leaves the old result, which
    `load_runs()` lists and `run()` serves without training, back under its own name."""
    monkeypatch.setattr("attnrank.core.train.train", fake_train(1.0))
    old = store.run(**CFG)
    code = f"""
        import os, signal, sys
        sys.path[:0] = [{str(Path(__file__).parent)!r}, {str(Path(__file__).parents[1])!r}]
        import attnrank.core.train
        from attnrank.runs import store
        from conftest import fake_train
        from test_store_faults import CFG

        attnrank.core.train.train = fake_train(2.0)
        real_replace = os.replace

        def replace(src, dst):
            if os.path.basename(src).startswith(".tmp-"):  # the new result is about to be renamed in
                os.kill(os.getpid(), signal.SIGKILL)
            return real_replace(src, dst)

        os.replace = replace
        store.run(**CFG, force=True)
    """
    child = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        env={**os.environ, "ATTNRANK_RUNS": str(private_store)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert child.returncode == -9, child.stderr[-2000:]
    assert not old.path.exists() and (private_store / f".old-{old.path.name}").is_dir()  # killed in the gap
    monkeypatch.setattr("attnrank.core.train.train", _no_training)
    assert store.load_runs().final_val_loss.tolist() == [1.0]
    served = store.run(**CFG)
    assert not served.fresh and served.path == old.path and served.summary["final_val_loss"] == 1.0


# --------------------------------------------------------------------- damaged markers and files


def _rewrite(path: Path, name: str, document) -> None:
    """Write ``name`` in run folder ``path`` and update the marker's checksum, as a tamperer would."""
    (path / name).write_text(json.dumps(document))
    marker = json.loads((path / "COMPLETE").read_text())
    marker["files"][name] = store.file_sha256(path / name)
    (path / "COMPLETE").write_text(json.dumps(marker))


def _damage(path: Path, how: str) -> None:
    (path.parent / "outside.json").write_text("{}")  # a file outside the run's folder
    outside = store.file_sha256(path.parent / "outside.json")
    marker = json.loads((path / "COMPLETE").read_text())
    summary = json.loads((path / "summary.json").read_text())
    if how.startswith("marker:"):
        document = {
            "null": None,
            "list": [],
            "string": "done",
            "files as a list": {"key": marker["key"], "files": list(marker["files"])},
            "no key": {"files": marker["files"]},
            "key as a number": {"key": 7, "files": marker["files"]},
            "files null": {"key": marker["key"], "files": None},
            "file outside": {"key": marker["key"], "files": {**marker["files"], "../outside.json": outside}},
        }[how.split(":", 1)[1]]
        (path / "COMPLETE").write_text(json.dumps(document))
    elif how.startswith("deep:"):  # nested deeper than any parser follows: 100,000 levels
        deep = "[" * 100_000 + "]" * 100_000
        name = {"marker": "COMPLETE", "summary": "summary.json", "config": "config.json"}[how.split(":", 1)[1]]
        (path / name).write_text(deep)
        if name != "COMPLETE":  # a tamperer who also updates the checksum
            marker["files"][name] = store.file_sha256(path / name)
            (path / "COMPLETE").write_text(json.dumps(marker))
    elif how.startswith("summary:"):
        document = {
            "list": [],
            "null": None,
            "no status": {k: v for k, v in summary.items() if k != "status"},
            "ranks as a list": {**summary, "initial_rank": [1.0], "final_rank": [1.0]},
            "loss as a string": {**summary, "final_val_loss": "low"},
            "failure as a string": {**summary, "failure": "nan"},
            "measures differ": {**summary, "final_rank": {"other": 1.0}},
        }[how.split(":", 1)[1]]
        _rewrite(path, "summary.json", document)
    elif how == "config:list":
        _rewrite(path, "config.json", [])


BAD_SHAPES = [
    "marker:null",
    "marker:list",
    "marker:string",
    "marker:files as a list",
    "marker:no key",
    "marker:key as a number",
    "marker:files null",
    "marker:file outside",
    "summary:list",
    "summary:null",
    "summary:no status",
    "summary:ranks as a list",
    "summary:loss as a string",
    "summary:failure as a string",
    "summary:measures differ",
    "config:list",
    "deep:marker",
    "deep:summary",
    "deep:config",
]


@pytest.mark.parametrize("how", BAD_SHAPES)
def test_a_marker_or_summary_of_the_wrong_shape_is_ignored_and_retrained(
    private_store, monkeypatch, capsys, caplog, how
):
    """docs/guarantees.md, "A killed run never shows up as a result": a run whose marker, config or summary is valid JSON
    of the wrong shape is ignored with a warning by `load_runs()`, `attnrank runs` and `run()` (which
    trains it again); the other runs of the store are still served."""
    monkeypatch.setattr("attnrank.core.train.train", fake_train(1.0))
    good = store.run(**CFG, seed=1)
    bad = store.run(**CFG)
    _damage(bad.path, how)
    with caplog.at_level(logging.WARNING, logger="attnrank.runs.store"):
        assert list(store.load_runs().key) == [good.key]
    assert "damaged" in caplog.text and bad.path.name in caplog.text
    assert main(["runs"]) == 0
    out = capsys.readouterr().out
    assert good.key in out and bad.key not in out
    monkeypatch.setattr("attnrank.core.train.train", fake_train(2.0))
    again = store.run(**CFG)
    assert again.fresh and again.path == bad.path and again.summary["final_val_loss"] == 2.0
    assert sorted(store.load_runs().key) == sorted([good.key, bad.key])


# --------------------------------------------------------------------- read-only media and bad paths


def _readonly_child(code: str, store_dir: Path) -> subprocess.CompletedProcess:
    """Run ``code`` in a child process that sees ``store_dir`` as a read-only bind mount
    (a private mount namespace of an unprivileged user namespace: `unshare -rm`)."""
    script = f'mount --bind -o ro {store_dir} {store_dir} && exec {sys.executable} -c "$CODE"'
    env = {
        **os.environ,
        "CODE": textwrap.dedent(code),
        "ATTNRANK_RUNS": str(store_dir),
        "PYTHONPATH": os.pathsep.join(sys.path),
    }
    return subprocess.run(["unshare", "-rm", "sh", "-c", script], env=env, capture_output=True, text=True, timeout=300)


def _can_mount_readonly(tmp_path: Path) -> bool:
    probe = tmp_path / "probe"
    probe.mkdir()
    try:
        done = _readonly_child("import pathlib, sys; pathlib.Path(sys.argv[0]).parent", probe)
        touch = subprocess.run(
            ["unshare", "-rm", "sh", "-c", f"mount --bind -o ro {probe} {probe} && touch {probe}/x"],
            capture_output=True,
            text=True,
            timeout=60,
        )
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0 and touch.returncode != 0 and "Read-only" in touch.stderr


def test_a_read_only_store_serves_its_runs_and_names_the_variable_when_asked_to_train(
    private_store, monkeypatch, tmp_path
):
    """docs/guarantees.md, "A read-only store serves its runs": a store on read-only media serves the complete runs it
    holds (`run()`, `load_runs()`, `attnrank runs`) without a lock; asked to train, it fails with one
    ConfigError line naming ATTNRANK_RUNS (exit status 2), before any training.

    The store is made read-only by a read-only bind mount in a private mount namespace (`unshare -rm`),
    since tests run as root, for whom file modes do not stop writes."""
    if not shutil.which("unshare") or not _can_mount_readonly(tmp_path):
        pytest.skip("no unprivileged read-only bind mounts here (unshare -rm)")
    monkeypatch.setattr("attnrank.core.train.train", fake_train(1.0))
    stored = store.run(**CFG)
    code = """
        import json, sys
        import pytest
        import attnrank.core.train
        from attnrank.runs import store
        from attnrank.cli import main
        from attnrank.core.errors import ConfigError

        def no_training(*a, **k):
            raise SystemExit("trained")

        attnrank.core.train.train = no_training
        r = store.run(arch="gpt2", profile="ci", max_steps=7)
        listed = list(store.load_runs().key)
        listing = main(["runs"])
        try:
            store.run(arch="gpt2", profile="ci", max_steps=8)
            error = None
        except ConfigError as exc:
            error = [exc.param, str(exc)]
        status = main(["train", "--arch", "gpt2", "--profile", "ci", "--max-steps", "9", "--quiet"])
        print(json.dumps({"key": r.key, "fresh": r.fresh, "listed": listed, "listing": listing, "error": error,
                          "status": status}))
    """
    done = _readonly_child(code, private_store)
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["key"] == stored.key and not result["fresh"] and result["listed"] == [stored.key]
    assert result["listing"] == 0 and result["status"] == 2
    assert result["error"][0] == "ATTNRANK_RUNS" and "Read-only file system" in result["error"][1]
    error_lines = [line for line in done.stderr.splitlines() if line.startswith("attnrank: error:")]
    assert len(error_lines) == 1 and error_lines[0].startswith("attnrank: error: ATTNRANK_RUNS:")
    assert "Traceback" not in done.stderr


def test_a_store_that_refuses_writes_serves_its_runs(private_store, monkeypatch):
    """docs/guarantees.md, "A read-only store serves its runs": reading a complete run takes no lock and writes nothing; a
    store that refuses every write (EROFS from the OS for any file created in it, simulated) still
    serves it, and a run to train gives a ConfigError naming ATTNRANK_RUNS."""
    import errno

    monkeypatch.setattr("attnrank.core.train.train", fake_train(1.0))
    stored = store.run(**CFG)
    real_open, real_mkdir = os.open, os.mkdir

    def refuse(path, *args, **kwargs):
        raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(path))

    def no_write_open(path, flags, *args, **kwargs):
        if str(path).startswith(str(private_store)) and flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT):
            refuse(path)
        return real_open(path, flags, *args, **kwargs)

    def no_mkdir(path, *args, **kwargs):
        if str(path).startswith(str(private_store)):
            refuse(path)
        return real_mkdir(path, *args, **kwargs)

    monkeypatch.setattr(os, "open", no_write_open)
    monkeypatch.setattr(os, "mkdir", no_mkdir)
    monkeypatch.setattr("attnrank.core.train.train", _no_training)
    r = store.run(**CFG)
    assert r.key == stored.key and not r.fresh
    assert list(store.load_runs().key) == [stored.key]
    with pytest.raises(ConfigError) as e:
        store.run(**{**CFG, "max_steps": 8})
    assert e.value.param == "ATTNRANK_RUNS" and "Read-only file system" in str(e.value)


@pytest.mark.parametrize("command", [["runs"], ["train", "--arch", "gpt2", "--profile", "ci", "--quiet"]])
def test_a_store_path_that_is_a_file_is_named_in_one_line(tmp_path, monkeypatch, capsys, command):
    """docs/guarantees.md, "Bad input fails first": ATTNRANK_RUNS naming a file (not a folder) gives one line naming
    ATTNRANK_RUNS and exit status 2, for `attnrank runs` and `attnrank train`; in the library a
    ConfigError naming ATTNRANK_RUNS."""
    path = tmp_path / "a-file"
    path.write_text("not a folder")
    monkeypatch.setenv("ATTNRANK_RUNS", str(path))
    monkeypatch.setattr("attnrank.core.train.train", _no_training)
    assert main(command) == 2
    err = capsys.readouterr().err
    assert err.startswith("attnrank: error: ATTNRANK_RUNS:") and err.count("\n") == 1 and str(path) in err
    for call in (store.load_runs, lambda: store.run(**CFG)):
        with pytest.raises(ConfigError) as e:
            call()
        assert e.value.param == "ATTNRANK_RUNS"


def test_a_store_path_that_cannot_be_created_is_named(tmp_path, monkeypatch, capsys):
    """docs/guarantees.md, "Bad input fails first": ATTNRANK_RUNS under a file (a folder that cannot be created) gives one
    line naming ATTNRANK_RUNS and exit status 2 when a run must be trained."""
    (tmp_path / "a-file").write_text("")
    monkeypatch.setenv("ATTNRANK_RUNS", str(tmp_path / "a-file" / "runs"))
    monkeypatch.setattr("attnrank.core.train.train", _no_training)
    assert main(["train", "--arch", "gpt2", "--profile", "ci", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("attnrank: error: ATTNRANK_RUNS:") and err.count("\n") == 1


def test_load_runs_names_an_unknown_filter_column(private_store, monkeypatch):
    """docs/guarantees.md, "Bad input fails first": `load_runs(filter)` with an unknown column raises a ConfigError naming
    `filter` and the allowed columns; a known column with no runs gives an empty frame."""
    with pytest.raises(ConfigError) as e:
        store.load_runs({"bogus": 1})
    assert e.value.param == "filter" and "bogus" in str(e.value) and "tau" in str(e.value)
    assert store.load_runs({"tau": 1.0}).empty
    monkeypatch.setattr("attnrank.core.train.train", fake_train(1.0))
    r = store.run(**CFG, tau=0.5)
    assert list(store.load_runs({"tau": 0.5}).key) == [r.key] and store.load_runs({"tau": [2.0]}).empty
    with pytest.raises(ConfigError) as e:
        store.load_runs({"bogus": 1})
    assert e.value.param == "filter" and "final_rank_rtol_1e-2" in str(e.value)
