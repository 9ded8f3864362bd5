"""Decisions apart from words: a sentence, a label or a chapter's preset is in no run key and in no
cached table's key; a verdict rule and the training path are.

Each test edits a copy of the library's source (the code hash reads the files of the package
folder, ``attnrank.runs.provenance._ROOT``) and compares the keys before and after the edit, with a
control edit that must change them, so a test that cannot fail would show.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from attnrank.analysis import synthetic
from attnrank.analysis.theory import tables
from attnrank.core.profiles import resolve_config
from attnrank.runs import cache, presets, provenance, store

PACKAGE = Path(provenance.__file__).resolve().parents[1]


@pytest.fixture
def source(tmp_path, monkeypatch):
    """A copy of the package source that the code hash reads; returns an editor ``edit(path, old, new)``."""
    copy = tmp_path / "attnrank"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(provenance, "_ROOT", copy)

    def edit(relative: str, old: str, new: str) -> None:
        path = copy / relative
        text = path.read_text()
        assert old in text, f"{old!r} not in {relative}"
        path.write_text(text.replace(old, new, 1))

    return edit


def _keys():
    cfg = resolve_config("gpt2", "ci")
    return {
        "run": store.run_key(cfg),
        "theory table": cache.table_key(
            "t", tables.hardmax_mc_table, dict(n_values=[8], head_dims=[1], samples=2, seed=0)
        ),
        "target table": cache.table_key("g", synthetic.p3_table, dict(n=8, seeds=[0], taus=[0.1], head_dim=2, steps=1)),
    }


def _first_sentence(relative: str) -> str:
    """A phrase of a sentence the module writes for the reader (inside an f-string or string)."""
    text = (PACKAGE / relative).read_text()
    return re.search(r'(?<!")f?"(?!")([A-Za-z]+ [a-z]+ [a-z]+ )', text).group(1)


@pytest.mark.parametrize(
    "relative",
    [
        "sections/dynamics.py",
        "sections/loss.py",
        "sections/temp.py",
        "sections/headdim.py",
        "sections/causal.py",
        "sections/measure.py",
        "sections/target.py",
        "sections/theory.py",
        "sections/learned.py",
    ],
)
def test_rewording_a_sentence_of_a_chapter_module_re_keys_nothing(source, relative):
    before = _keys()
    phrase = _first_sentence(relative)
    source(relative, phrase, phrase.upper())
    assert _keys() == before


def test_renaming_a_label_or_changing_the_number_format_re_keys_nothing(source):
    before = _keys()
    source("words/glossary.py", '"effective_rank": "effective rank"', '"effective_rank": "Roy-Vetterli rank"')
    source("words/glossary.py", 'MINUS = "\\u2212"', 'MINUS = "-"')
    assert _keys() == before


def test_editing_a_chapter_size_re_keys_no_run(source):
    before = _keys()
    assert presets.PRESETS["theory"]["ci"]["mc_samples"] == 40
    source("runs/presets.py", "mc_samples=40,", "mc_samples=41,")
    assert _keys()["run"] == before["run"]


def test_a_rule_re_keys_the_tables_and_the_training_path_re_keys_the_runs(source):
    """The controls: the same comparison sees a change of a decision and of the training code."""
    before = _keys()
    source("analysis/rules.py", "RHO_MIN = 0.5", "RHO_MIN = 0.6")
    after_rule = _keys()
    assert after_rule["run"] == before["run"] and after_rule["theory table"] != before["theory table"]
    source("core/train.py", '"""', '"""Edited. ')  # a reworded docstring of the training path retrains nothing
    assert _keys()["run"] == before["run"]
    source("core/train.py", "\nimport ", "\n_EDITED = 1\nimport ")  # a statement added to it re-keys every run
    assert _keys()["run"] != before["run"]
