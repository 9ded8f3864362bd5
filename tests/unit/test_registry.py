"""One registry of chapters and verdicts (`attnrank.runs.experiments.CHAPTERS` and `VERDICT_RUNS`): the toc, the
intro's table, the reproducibility page's confirmation column and the frozen rules are checked against it, and a
build refuses a toc chapter the registry lacks before it trains anything."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from attnrank.analysis import frozen
from attnrank.cli.build import toc_chapters, train_book
from attnrank.core.errors import ConfigError
from attnrank.runs.experiments import CHAPTERS, VERDICT_RUNS, check_toc, verdict_chapters

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]


def test_the_toc_notebooks_are_the_registry_chapters():
    notebooks = {c.removeprefix("chapters/") for c in toc_chapters(ROOT) if (ROOT / f"{c}.ipynb").exists()}
    assert notebooks == {c for c in CHAPTERS if (ROOT / "chapters" / f"{c}.ipynb").exists()}
    assert notebooks <= set(CHAPTERS) and len(notebooks) == 12


def test_every_verdict_is_published_by_a_toc_chapter_and_pasted_by_the_intro_from_it():
    intro = (ROOT / "chapters" / "intro.md").read_text()
    chapters = verdict_chapters()
    assert set(chapters) <= set(CHAPTERS) and sum(map(len, chapters.values())) == len(VERDICT_RUNS)
    for name, source in VERDICT_RUNS.items():
        assert f"`{source.chapter}.ipynb::{name}_effect:s`" in intro, name
        assert f"{{glue}}`{source.chapter}.ipynb::{name}_badge`" in intro, name
        assert f"`reproducibility.ipynb::repro_confirm_{name}" in intro, name
    # and the intro pastes no verdict the registry lacks
    pasted = set(re.findall(r"::([a-z_]+)_units:s`", intro))
    assert pasted == set(VERDICT_RUNS)


def test_the_intro_shows_each_claim_in_the_claims_table_and_each_check_in_the_checks_table():
    """A check (a property a proof guarantees: ``claim=False``) is not counted as a claim's support, so the intro
    lists it apart; moving a verdict between the two kinds moves its row."""
    intro = (ROOT / "chapters" / "intro.md").read_text()
    tables = {}
    for name, body in re.findall(r":name: (tab-intro-\w+)\n\n((?:^\|.*\|\n)+)", intro, flags=re.M):
        tables[name] = set(re.findall(r"::(\w+)_badge`", body))
    assert tables["tab-intro-verdicts"] == {n for n, s in VERDICT_RUNS.items() if s.claim}
    assert tables["tab-intro-checks"] == {n for n, s in VERDICT_RUNS.items() if not s.claim}
    assert {"measure", "theory", "seq_len"} == tables["tab-intro-checks"]


def test_the_intros_daggers_are_the_rules_changed_after_looking():
    """A row of the intro's table carries a dagger exactly where its verdict's frozen rule has a version above 1 in
    data/rules/frozen.csv (the findings box counts the same rows from that file): "(i) The rank is set early" had
    none while its rule is version 2."""
    intro = (ROOT / "chapters" / "intro.md").read_text()
    rows = re.findall(r"^\| \{doc\}`[^`]*` (†)? ?(?:‡ )?\| \{glue\}`\w+\.ipynb::(\w+)_badge`", intro, flags=re.M)
    assert len(rows) == len(VERDICT_RUNS)
    rules = frozen.frozen_rules()
    changed = set(rules.verdict[rules.version > 1])
    assert {name for dagger, name in rows if dagger} == changed & set(VERDICT_RUNS)


def test_every_verdict_has_a_frozen_rule_and_every_frozen_claim_rule_a_verdict():
    rules = set(frozen.frozen_rules().verdict)
    assert set(VERDICT_RUNS) <= rules
    assert rules - set(VERDICT_RUNS) == {"learned_gate", "classification"}  # the gates every verdict reads


def test_a_toc_chapter_unknown_to_the_registry_stops_the_build_before_training(tmp_path, monkeypatch):
    (tmp_path / "chapters").mkdir()
    (tmp_path / "chapters" / "newclaim.ipynb").write_text("{}")
    (tmp_path / "_toc.yml").write_text(
        yaml.safe_dump({"format": "jb-book", "root": "chapters/intro", "chapters": [{"file": "chapters/newclaim"}]})
    )
    trained = []
    monkeypatch.setattr("attnrank.runs.grid.sweep", lambda *a, **k: trained.append(a))
    with pytest.raises(ConfigError) as e:
        train_book(tmp_path, executor="serial")
    assert "_toc.yml" in str(e.value) and "chapters/newclaim" in str(e.value) and "CHAPTERS" in str(e.value)
    assert trained == []
    # a Markdown page (no notebook) is not a chapter that trains, and a known chapter passes
    check_toc(["chapters/temp", "temp"])


def test_every_table_of_the_intro_has_a_header_cell_for_each_column():
    """A row with more cells than its header shifts every column after the missing one (the check's table once
    showed its confirmation under "Effect" and its effect under "n")."""
    intro = (ROOT / "chapters" / "intro.md").read_text()
    for block in re.findall(r"(?:^\|.*\|\n)+", intro, flags=re.M):
        widths = {len(line.split(" | ")) for line in block.strip().splitlines() if not line.startswith("|---")}
        header = block.splitlines()[1]
        assert len(widths) == 1 and header.count("|") - 1 == widths.pop(), block.splitlines()[0]
