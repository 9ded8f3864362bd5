"""The up-front executor's child (``python -m attnrank.sphinxext execute``): which notebooks it
leaves to myst-nb."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from attnrank import sphinxext


class FakeExecutor:
    """jupyter-cache's executor as the child sees it: ``run_and_cache`` returns the notebooks that
    excepted (their own error) and errored (not started, not executed or not cached)."""

    def __init__(self, outcomes: dict[str, list[str]], calls: list):
        self.outcomes, self.calls = outcomes, calls

    def __call__(self, name, cache, logger):
        self.name = name
        return self

    def run_and_cache(self, filter_uris, timeout, allow_errors):
        self.calls.append((self.name, list(filter_uris), timeout, allow_errors))
        state = self.outcomes[self.name]
        return SimpleNamespace(
            excepted=[u for u in filter_uris if state.get(u) == "excepted"],
            errored=[u for u in filter_uris if state.get(u) == "errored"],
        )


@pytest.mark.parametrize(
    "parallel, serial, left, retried",
    [
        ({}, {}, [], None),  # every notebook cached in parallel: nothing left, nothing retried
        ({"b.ipynb": "errored"}, {}, [], ["b.ipynb"]),  # a kernel that did not start: cached on the retry
        ({"b.ipynb": "errored"}, {"b.ipynb": "errored"}, ["b.ipynb"], ["b.ipynb"]),  # fails again: myst-nb's
        ({"a.ipynb": "excepted", "b.ipynb": "errored"}, {}, ["a.ipynb"], ["b.ipynb"]),  # its own error: no retry
    ],
)
def test_a_notebook_jupyter_cache_could_not_run_is_tried_once_more_alone(
    monkeypatch, capsys, parallel, serial, left, retried
):
    calls: list = []
    fake = FakeExecutor({"local-parallel": parallel, "local-serial": serial}, calls)
    monkeypatch.setattr("jupyter_cache.executors.load_executor", fake)
    monkeypatch.setattr("jupyter_cache.get_cache", lambda path: SimpleNamespace(path=path))
    assert sphinxext._execute_main(["execute", "cache", "120", "false", "a.ipynb", "b.ipynb"]) == 0
    assert json.loads(capsys.readouterr().out.strip().splitlines()[-1]) == left
    assert calls[0] == ("local-parallel", ["a.ipynb", "b.ipynb"], 120, False)
    assert calls[1:] == ([("local-serial", retried, 120, False)] if retried else [])
