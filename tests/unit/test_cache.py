"""Cached intermediate tables: every part of the key recomputes, an unchanged call reads.

Guarantee (docs/guarantees.md): "Cached tables are keyed by their inputs." (every test below)
"""

from __future__ import annotations

import hashlib

import numpy as np
import pandas as pd
import pytest
import torch

from attnrank.core.errors import ConfigError
from attnrank.runs import cache, provenance

CALLS = []


def _table(n: int, scale: float = 1.0, label: str = "a") -> pd.DataFrame:
    CALLS.append((n, scale, label))
    return pd.DataFrame({"i": np.arange(n), "x": scale * np.arange(n, dtype=float), "label": label})


_table.__module__ = "attnrank.analysis.synthetic"  # stands for a library function (its module's code is in the key)


@pytest.fixture
def data(tmp_path, monkeypatch):
    monkeypatch.setenv("ATTNRANK_DATA", str(tmp_path / "data"))
    CALLS.clear()
    return tmp_path / "data"


def test_an_unchanged_call_reads_the_stored_table(data):
    first = cache.cached("toy", _table, n=3, scale=2.0)
    again = cache.cached("toy", _table, scale=2.0, n=np.int64(3))  # same inputs, other order and type
    assert CALLS == [(3, 2.0, "a")]
    pd.testing.assert_frame_equal(first, again)
    assert list(again.x) == [0.0, 2.0, 4.0] and list(again.label) == ["a"] * 3
    assert len(list((data / "cache" / "tables").glob("toy-*.parquet"))) == 1


@pytest.mark.parametrize("change", [dict(n=4), dict(scale=3.0), dict(label="b")])
def test_changing_an_input_recomputes(data, change):
    cache.cached("toy", _table, n=3, scale=2.0)
    out = cache.cached("toy", _table, **{**dict(n=3, scale=2.0), **change})
    assert len(CALLS) == 2 and len(out) == change.get("n", 3)


def test_changing_the_name_recomputes(data):
    cache.cached("toy", _table, n=3)
    cache.cached("toy_two", _table, n=3)
    assert len(CALLS) == 2


def test_changing_the_code_recomputes(data, monkeypatch):
    cache.cached("toy", _table, n=3)
    real = provenance.code_hash
    monkeypatch.setattr(provenance, "code_hash", lambda roots=provenance.RESULT_ROOTS: "0" + real(roots)[1:])
    cache.cached("toy", _table, n=3)
    assert len(CALLS) == 2


def test_the_module_of_compute_is_in_the_code_hash():
    roots = []
    orig = provenance.code_hash
    try:
        provenance.code_hash = lambda r=provenance.RESULT_ROOTS: roots.append(tuple(r)) or orig(r)
        cache.table_key("toy", _table, {"n": 1})
    finally:
        provenance.code_hash = orig
    assert "attnrank.analysis.synthetic" in roots[0] and set(provenance.RESULT_ROOTS) <= set(roots[0])


def test_changing_the_thread_count_recomputes(data):
    old = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        cache.cached("toy", _table, n=3)
        torch.set_num_threads(2)
        cache.cached("toy", _table, n=3)
    finally:
        torch.set_num_threads(old)
    assert len(CALLS) == 2


def test_changing_the_device_recomputes(data, monkeypatch):
    cache.cached("toy", _table, n=3)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda *a: "Some GPU")
    assert cache.environment()["device"] == "cuda:Some GPU"
    cache.cached("toy", _table, n=3)
    assert len(CALLS) == 2


def test_a_damaged_table_is_computed_again(data):
    cache.cached("toy", _table, n=3)
    (path,) = (data / "cache" / "tables").glob("toy-*.parquet")
    path.write_bytes(path.read_bytes()[:20])
    out = cache.cached("toy", _table, n=3)
    assert len(CALLS) == 2 and list(out.i) == [0, 1, 2]
    assert not list((data / "cache" / "tables").glob(".tmp-*"))


def test_bad_arguments_fail_before_computing(data):
    with pytest.raises(ConfigError, match="name"):
        cache.cached("Bad Name", _table, n=3)
    with pytest.raises(ConfigError, match="compute"):
        cache.cached("toy", lambda n: pd.DataFrame({"n": [n]}), n=3)
    with pytest.raises(ConfigError, match="gen"):
        cache.cached("toy", _table, n=3, gen=object())

    def not_a_frame(n):
        return [n]

    not_a_frame.__module__ = "attnrank.analysis.synthetic"
    with pytest.raises(ConfigError, match="compute"):
        cache.cached("toy", not_a_frame, n=3)
    assert CALLS == [] and not list((data / "cache" / "tables").glob("*.parquet"))


def test_a_table_altered_but_still_readable_is_caught_by_its_digest(data, caplog):
    """A cached table carries its SHA-256 (written before the file is renamed into place): a table replaced by another
    readable Parquet file is not served; it is set aside with one warning line and computed again."""
    cache.cached("toy", _table, n=3)
    (path,) = (data / "cache" / "tables").glob("toy-*.parquet")
    assert path.with_name(path.name + ".sha256").read_text() == hashlib.sha256(path.read_bytes()).hexdigest()
    pd.DataFrame({"i": [7, 7, 7]}).to_parquet(path, index=False)  # a valid file, the wrong table
    out = cache.cached("toy", _table, n=3)
    assert len(CALLS) == 2 and list(out.i) == [0, 1, 2]
    assert path.with_name(path.name + ".damaged").exists()
    warned = [r.getMessage() for r in caplog.records if "damaged" in r.getMessage()]
    assert len(warned) == 1 and "did not match its SHA-256" in warned[0]
