"""The up-front executor (:mod:`attnrank.cli.upfront`): which notebooks it caches, which it tries once
more alone, and which it leaves to myst-nb. Executions are faked (no kernel) and the pool is a
thread pool here; the real pool and kernels are in ``tests/integration/test_upfront.py``."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor

import pytest
from jupyter_cache import get_cache
from jupyter_cache.cache.db import NbProjectRecord

from attnrank.cli import upfront


class FakeExecution:
    """``upfront.execute_one`` with a scripted outcome per notebook and attempt: "ok" (executed),
    "excepted" (the notebook's own error) or "errored" (could not be executed)."""

    def __init__(self, outcomes: dict[str, list[str]]):
        self.outcomes, self.calls = outcomes, []

    def __call__(self, uri, notebook, timeout, allow_errors):
        self.calls.append((uri.rsplit("/", 1)[-1], timeout, allow_errors))
        outcome = self.outcomes[uri.rsplit("/", 1)[-1]].pop(0)
        if outcome == "errored":
            raise RuntimeError("kernel died")
        if outcome == "excepted":
            return "", 0.1, "Traceback: ValueError('its own error')"
        return notebook, 0.1, None


@pytest.mark.parametrize(
    "outcomes, left",
    [
        ({"a.ipynb": ["ok"], "b.ipynb": ["ok"]}, []),  # both cached: nothing left
        ({"a.ipynb": ["ok"], "b.ipynb": ["errored", "ok"]}, []),  # a worker that failed: cached on the retry
        ({"a.ipynb": ["ok"], "b.ipynb": ["errored", "errored"]}, ["b.ipynb"]),  # fails again: myst-nb's
        ({"a.ipynb": ["excepted"], "b.ipynb": ["errored", "ok"]}, ["a.ipynb"]),  # its own error: no retry
    ],
)
def test_each_notebook_is_cached_once_tried_again_alone_or_left_to_myst_nb(
    tmp_path, monkeypatch, capsys, staged_notebooks, outcomes, left
):
    uris = staged_notebooks(a="a = 1", b="b = 2")
    cache = get_cache(str(tmp_path / "cache"))
    fake = FakeExecution({k: list(v) for k, v in outcomes.items()})
    monkeypatch.setattr(upfront, "execute_one", fake)
    monkeypatch.setattr(upfront, "ProcessPoolExecutor", ThreadPoolExecutor)

    assert upfront.main([str(tmp_path / "cache"), "120", "false", *uris]) == 0
    assert json.loads(capsys.readouterr().out.strip().splitlines()[-1]) == [str(tmp_path / n) for n in left]
    expected_calls = sum(len(v) for v in outcomes.values())
    assert len(fake.calls) == expected_calls and all(c[1:] == (120, False) for c in fake.calls)
    cached = {r.uri.rsplit("/", 1)[-1] for r in cache.list_cache_records()}
    assert cached == {"a.ipynb", "b.ipynb"} - set(left)
    tracebacks = {r.uri.rsplit("/", 1)[-1]: r.traceback for r in NbProjectRecord.records_all(cache.db)}
    assert bool(tracebacks["a.ipynb"]) == (outcomes["a.ipynb"] == ["excepted"])

    # a second call executes only what is not cached
    again = FakeExecution({"a.ipynb": ["ok"], "b.ipynb": ["ok"]})
    monkeypatch.setattr(upfront, "execute_one", again)
    assert upfront.execute_and_cache(str(tmp_path / "cache"), uris, 120, False) == []
    assert sorted(c[0] for c in again.calls) == sorted(left)


def test_training_progress_goes_to_the_terminal_from_a_notebook_kernel(monkeypatch):
    """In a kernel (papermill, the build) the progress of training goes to the kernel's own stderr, the terminal
    that started it, as plain text, never into the notebook; elsewhere where it always went."""
    import sys
    import types

    from tqdm.std import tqdm as plain

    from attnrank.runs import grid

    fake = types.ModuleType("IPython")
    fake.get_ipython = lambda: types.SimpleNamespace(kernel=object())
    monkeypatch.setitem(sys.modules, "IPython", fake)
    assert grid._progress_target() == (plain, sys.__stderr__)
    fake.get_ipython = lambda: None
    assert grid._progress_target()[1] is None
