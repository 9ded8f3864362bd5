"""Errors that cross a process boundary: a worker's ConfigError reaches the user as the same one
line and exit status 2 on every executor; an exception is never retried as a dead worker; the
checks that need no training run on the driver before any worker starts."""

from __future__ import annotations

import textwrap

import pytest

from attnrank.cli import main
from attnrank.core.errors import ConfigError, SweepFailed
from attnrank.core.profiles import resolve_config
from attnrank.runs import grid

EXECUTORS = [
    "serial",
    "process",
    pytest.param("ray", marks=pytest.mark.skipif("not __import__('importlib').util.find_spec('ray')")),
]


@pytest.fixture
def runs(tmp_path, monkeypatch):
    """A private run store; the variables ``attnrank sweep`` sets are restored afterwards."""
    monkeypatch.setenv("ATTNRANK_RUNS", str(tmp_path / "runs"))
    for name in ("ATTNRANK_DATASET", "ATTNRANK_THREADS"):
        monkeypatch.delenv(name, raising=False)
    return tmp_path / "runs"


@pytest.fixture
def latin1(corpus):
    """The shared corpus with a validation file that ends in one Latin-1 byte."""
    path = corpus / "validation.txt"
    path.write_bytes(path.read_bytes() + b"\xe9")
    return corpus


def _error_lines(err: str) -> list[str]:
    return [line for line in err.splitlines() if "error" in line.lower() or "Traceback" in line]


def test_the_driver_finds_an_unreadable_dataset_before_any_worker_starts(runs, latin1, monkeypatch, capsys):
    monkeypatch.setattr(grid, "_run_process", lambda *a, **k: pytest.fail("a pool started"))
    rc = main(["sweep", "--profile", "ci", "--chapters", "dynamics", "--dataset", f"hf:{latin1}"])
    err = capsys.readouterr().err
    assert rc == 2, err
    assert _error_lines(err) == [
        f"attnrank: error: dataset: 'hf:{latin1}' could not be loaded: {latin1}/validation.txt is not UTF-8 text "
        "(unexpected end of data at the end of the file)"
    ]
    assert not list(runs.glob("*-*"))  # nothing trained


@pytest.mark.parametrize("executor", EXECUTORS)
def test_a_workers_config_error_is_one_line_and_exit_2_on_every_executor(runs, latin1, monkeypatch, capsys, executor):
    """Guarantee "Bad input fails first": the same one line and exit status 2 when a worker finds it."""
    monkeypatch.setattr(grid, "preflight", lambda configs: None)  # the driver's checks off: the worker finds it
    rc = main(
        ["sweep", "--profile", "ci", "--chapters", "dynamics", "--dataset", f"hf:{latin1}", "--executor", executor]
    )
    out, err = capsys.readouterr()
    assert rc == 2, err[-3000:]
    assert _error_lines(err) == [
        f"attnrank: error: dataset: 'hf:{latin1}' could not be loaded: {latin1}/validation.txt is not UTF-8 text "
        "(unexpected end of data at the end of the file)"
    ], err[-3000:]
    assert "died" not in out + err and "retrying" not in out + err
    assert not list(runs.glob("*/COMPLETE"))  # it failed first: no run trained before the error ended the sweep


def test_an_exception_that_cannot_cross_is_reported_once_not_retried(runs, tmp_path, monkeypatch, capsys):
    """A worker's exception that cannot be unpickled is a named error of that run, not a dead worker."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(
        textwrap.dedent(
            """
            import attnrank.runs.store

            class TwoArguments(Exception):
                def __init__(self, a, b):
                    super().__init__(f"{a} and {b}")

            def run(cfg, **kw):
                raise TwoArguments("odd", "even")

            attnrank.runs.store.run = run
            """
        )
    )
    monkeypatch.setenv("PYTHONPATH", str(site))
    configs = [resolve_config("gpt2", "ci", max_steps=5, seed=s) for s in (0, 1)]
    with pytest.raises(SweepFailed, match="2 of 2 runs did not finish: .*sitecustomize.TwoArguments: odd and even"):
        grid.sweep(configs, executor="process", workers=2)
    out = capsys.readouterr().out
    assert out.count("error sitecustomize.TwoArguments: odd and even") == 2
    assert "died" not in out and "retrying" not in out


def test_the_driver_checks_the_corpus_length_and_the_store_before_workers(runs, corpus, monkeypatch, capsys):
    monkeypatch.setattr(grid, "_run_process", lambda *a, **k: pytest.fail("a pool started"))
    (corpus / "validation.txt").write_text("a few words\n")
    with pytest.raises(ConfigError, match=r"^max_len: dataset .* gives \d+ training and 0 validation blocks"):
        grid.sweep([resolve_config("gpt2", "ci", dataset=f"hf:{corpus}")], executor="process")
    runs.parent.joinpath("blocked").write_text("a file")
    monkeypatch.setenv("ATTNRANK_RUNS", str(runs.parent / "blocked" / "runs"))
    with pytest.raises(ConfigError, match="^ATTNRANK_RUNS: "):
        grid.sweep([resolve_config("gpt2", "ci")], executor="process")


@pytest.mark.parametrize("guarded", [False, True])
def test_a_script_without_a_main_guard_is_told_so_before_the_pool_starts(tmp_path, guarded):
    """A script that starts a process pool at its top level gets one line naming the guard, before any worker
    starts (it printed hundreds of lines of spawn errors and "its worker process died 3 times"); with the guard the
    same call passes the check."""
    import subprocess
    import sys

    call = "grid.check_main_guard(); print('checked')"
    body = f'if __name__ == "__main__":\n    {call}\n' if guarded else f"{call}\n"
    script = tmp_path / "no guard.py"
    script.write_text(f"from attnrank.runs import grid\n\n{body}")
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    if guarded:
        assert out.returncode == 0 and out.stdout.strip() == "checked"
    else:
        assert out.returncode != 0 and "checked" not in out.stdout
        assert 'if __name__ == "__main__":' in out.stderr and f"{script}" in out.stderr and "(line 3)" in out.stderr
