"""Frozen rules: every verdict's rule decides as it did when it was frozen (data/rules/frozen.csv), and the digest
notices a changed decision but not a reworded sentence."""

from __future__ import annotations

import textwrap

import pytest

from attnrank.analysis import frozen

pytestmark = pytest.mark.unit


def test_every_rule_decides_as_when_it_was_frozen():
    """A rule changed after it was frozen needs a new dated version (and re-opens confirmation)."""
    assert frozen.check_frozen() == []


def test_every_verdict_of_the_book_has_a_frozen_rule():
    from attnrank.runs.experiments import VERDICT_RUNS

    assert set(VERDICT_RUNS) | {"learned_gate"} <= set(frozen.frozen_rules().verdict)  # and tests/unit/test_registry.py


def _function(tmp_path, monkeypatch, name, source):
    path = tmp_path / f"{name}.py"
    path.write_text(textwrap.dedent(source))
    monkeypatch.syspath_prepend(str(tmp_path))
    import importlib

    return importlib.import_module(name).rule


def test_the_digest_follows_decisions_not_words(tmp_path, monkeypatch):
    base = """
        LIMIT = 0.5

        def rule(x, limit=LIMIT):
            '''Supported when x is below the limit.'''
            status = "supported" if x < limit else "not supported"  # the decision
            return status, f"x = {x:.2f} against {limit}"
        """
    digest = frozen.rule_digest([_function(tmp_path, monkeypatch, "r0", base)])
    reworded = (
        base.replace("Supported when", "True when")
        .replace("x = {x:.2f} against", "{x:.3g} vs")
        .replace("# the decision", "# reworded")
    )
    assert frozen.rule_digest([_function(tmp_path, monkeypatch, "r1", reworded)]) == digest
    for changed in (base.replace("LIMIT = 0.5", "LIMIT = 0.4"), base.replace("x < limit", "x <= limit")):
        name = f"r{2 + len(changed) % 7}{changed.count('=')}"
        assert frozen.rule_digest([_function(tmp_path, monkeypatch, name, changed)]) != digest


def test_a_changed_rule_is_named_with_its_date(tmp_path):
    table = frozen.frozen_rules()
    row = table[table.verdict == "dynamics"].iloc[0]
    path = tmp_path / "frozen.csv"
    path.write_text(
        "verdict,version,frozen,digest,functions\n"
        f"dynamics,{row.version},{row.frozen},0000000000000000,{row.functions}\n"
    )
    (line,) = frozen.check_frozen(path)
    assert line.startswith(f"dynamics: the rule frozen on {row.frozen} (version {row.version}")
    assert f"version {row.version + 1}" in line


def test_a_recorded_verdict_under_an_earlier_rule_version_is_named(tmp_path):
    """A recorded check applied, per verdict, the version in its ``rule`` column, or where it has none the newest
    version frozen on or before the day it was recorded; a verdict whose rule is newer now is named."""
    import pandas as pd

    from attnrank.analysis.frozen import changed_since

    path = tmp_path / "frozen.csv"
    path.write_text(
        "verdict,version,frozen,digest,functions\n"
        "target,3,2026-12-06,a,x.y\ntarget,4,2026-12-07,b,x.y\ntemp,4,2026-12-06,c,x.y\n"
    )
    old = pd.DataFrame({"verdict": ["target", "temp"]})
    assert changed_since(old, "2026-12-06", path) == ["target"]
    assert changed_since(old, "2026-12-07", path) == []
    assert changed_since(old.assign(rule=["4", ""]), "2026-12-06", path) == []  # recorded again under version 4
    assert changed_since(old.assign(rule=["3", "4"]), "2026-12-08", path) == ["target"]
    assert changed_since(old, "2026-12-01", path) == ["target", "temp"]  # recorded before any rule was frozen
    with path.open("a") as f:  # version 5 restores version 3: a record under version 3 applied the same rule
        f.write("target,5,2026-12-08,a,x.y\n")
    assert changed_since(old, "2026-12-06", path) == [] and changed_since(
        old.assign(rule=["4", ""]), "2026-12-06", path
    ) == ["target"]
