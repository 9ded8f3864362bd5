"""The lock file: the exact versions CI and the book are built with, made from pyproject.toml."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
import yaml
from packaging.requirements import Requirement
from packaging.version import Version

from attnrank.runs import provenance
from attnrank.sphinxext import context

ROOT = Path(__file__).resolve().parents[2]
LOCK = ROOT / "requirements.lock"


def _declared() -> list[Requirement]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = [r for reqs in project["optional-dependencies"].values() for r in reqs]
    return [Requirement(r) for r in project["dependencies"] + extras]


def test_the_lock_pins_every_declared_dependency_within_its_range():
    """Every dependency of pyproject.toml (extras included) is pinned, at a version its specifier allows."""
    pins = provenance.locked_versions(LOCK)
    assert len(pins) > 100  # the whole tree, not only the direct dependencies
    for req in _declared():
        name = provenance._canonical(req.name)
        assert name in pins, f"{req.name} is declared in pyproject.toml but not pinned in requirements.lock"
        assert req.specifier.contains(Version(pins[name]), prereleases=True), (req, pins[name])


def test_the_lock_pins_the_cpu_build_of_torch_and_no_cuda_package():
    pins = provenance.locked_versions(LOCK)
    assert pins["torch"].endswith("+cpu")
    assert not [p for p in pins if p.startswith(("nvidia-", "triton"))]


def test_environment_yml_installs_the_lock_and_does_not_repeat_it():
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    pip = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict) and "pip" in d)
    assert "-r requirements.lock" in pip and "-e ." in pip
    assert not [line for line in pip if not line.startswith("-")]  # no hand-kept list beside the lock


def test_locked_versions_and_lock_state_read_a_lock_file(tmp_path):
    lock = tmp_path / "requirements.lock"
    lock.write_text(
        "# made by a tool\nNumPy==2.1.0\n    # via x\nfoo_bar[extra]==1.0 ; python_version >= '3'\n--index-url u\n"
    )
    assert provenance.locked_versions(lock) == {"numpy": "2.1.0", "foo-bar": "1.0"}
    sha, versions = provenance.lock_state(["numpy", "Foo.Bar", "absent"], lock)
    assert len(sha) == 64 and versions == {"numpy": "2.1.0", "Foo.Bar": "1.0", "absent": None}
    assert provenance.lock_state(["numpy"], tmp_path / "none") == (None, {"numpy": None})
    assert provenance.locked_versions(tmp_path / "none") == {}


def test_the_lock_file_is_in_the_books_execution_context(tmp_path, monkeypatch):
    """The reproducibility chapter shows the lock file's hash, so a changed lock file executes it again."""
    lock = tmp_path / "requirements.lock"
    lock.write_text("numpy==2.1.0\n")
    monkeypatch.setattr(provenance, "LOCK_FILE", lock)
    before, items = context.execution_context()
    assert items["lock"] == provenance.lock_state(())[0]
    lock.write_text("numpy==2.1.1\n")
    after, _ = context.execution_context()
    assert after != before
    lock.unlink()
    assert context.execution_context()[1]["lock"] == "-"


@pytest.mark.parametrize("package", ["torch", "numpy", "jupyter-book"])
def test_this_environment_was_installed_from_the_lock(package):
    """CI installs from the lock: the packages the reproducibility chapter lists are at their pinned versions."""
    import os
    from importlib.metadata import version

    if not os.environ.get("LOCKED_ENVIRONMENT"):
        pytest.skip("set LOCKED_ENVIRONMENT=1 where the environment was installed from requirements.lock (CI)")
    assert version(package) == provenance.locked_versions(LOCK)[provenance._canonical(package)]


def test_the_recorded_measurements_are_in_the_books_execution_context(tmp_path, monkeypatch):
    """The learned chapter reads the recorded recipe study and the reproducibility chapter the scale-check build:
    changing either record executes them again."""
    recipe, scale = tmp_path / "recipe", tmp_path / "scale"
    recipe.mkdir()
    (recipe / "quick.csv").write_text("a\n1\n")
    monkeypatch.setattr(provenance, "RECORD_FOLDERS", (recipe, scale, tmp_path / "stdlib"))
    before, items = context.execution_context()
    assert items["records"] == provenance.records_hash() != "-"
    scale.mkdir()
    (scale / "verdicts.csv").write_text("verdict,status\n")
    after, _ = context.execution_context()
    (scale / "verdicts.csv").write_text("verdict,status\nloss,supported\n")
    again, _ = context.execution_context()
    assert len({before, after, again}) == 3
    assert provenance.records_hash((tmp_path / "none",)) == "-"


def test_the_explorers_script_and_style_are_in_the_books_execution_context(tmp_path, monkeypatch):
    """The explorer page inlines its script and style, files of the book's static folder: editing one executes
    the page again."""
    from attnrank.sections import explore

    assert explore.STATIC == context.CHECKOUT / "chapters" / "_static"  # the folder the page reads
    static = tmp_path / "chapters" / "_static"
    static.mkdir(parents=True)
    (static / "explorer.js").write_text("(function () {})();\n")
    before, items = context.execution_context(tmp_path)
    (static / "explorer.js").write_text("(function () { 'use strict'; })();\n")
    after, _ = context.execution_context(tmp_path)
    assert items["static"] != "-" and before != after


def test_a_recorded_check_is_read_from_its_record(tmp_path):
    """The reproducibility chapter shows each recorded check (the scale check, the second corpus): each verdict's
    status by name, its regime and the build's facts; without a record, it says so."""
    from attnrank.sections import reproducibility as rp

    assert set(rp.CHECK_FOLDERS) == {"scale", "stdlib", "confirm"}
    folder = tmp_path / "scale"
    assert rp.check_record(folder) == (None, {})
    assert rp._check_glue("stdlib", None, {}, {})["repro_stdlib_loss"] == "not recorded"
    folder.mkdir()
    (folder / "verdicts.csv").write_text(
        "verdict,status,effect,n,regime,finding\nloss,supported,e,6 runs,r,f\nregime,,,,,both learned\n"
    )
    (folder / "build.json").write_text('{"profile": "scale", "runs": 93, "note": "n"}')
    table, meta = rp.check_record(folder)
    glue = rp._check_glue("scale", table, meta, {"loss": "independent"})
    assert glue["repro_scale_loss"] == "supported" and glue["repro_scale_temp"] == "not recorded"
    assert glue["repro_scale_regime"] == "both learned" and glue["repro_scale_meta"] == "profile scale, runs 93 (n)"
    # a row that is the same computation as this build's is marked, and named
    glue = rp._check_glue("scale", table, {"seeds": [3, 4]}, {"loss": "same"})
    assert glue["repro_scale_loss"] == "supported (same computation)" and glue["repro_scale_meta"] == "seeds 3, 4"
    assert glue["repro_scale_same"] == "(ii) higher rank, lower loss"
    # a record of the toy task on other seeds names every toy seed it read, not the first alone
    glue = rp._check_glue("confirm", table, {"profile": "quick", "toy_seeds": [6, 7, 8]}, {"loss": "independent"})
    assert glue["repro_confirm_meta"] == "profile quick, toy seeds 6, 7, 8"


def test_a_check_says_which_verdicts_are_replications():
    """On fresh seeds every verdict that reads trained runs is a replication (every design of a build takes
    ATTNRANK_SEEDS, the causal and sequence-length presets too); those decided at initialisation with fixed seeds, on
    random matrices or the toy task are the same computation; a second corpus
    changes every verdict that reads text, a longer profile every verdict that reads trained runs."""
    from attnrank.runs.experiments import VERDICT_RUNS, check_relation

    same = lambda check: {v for v, r in check_relation("quick", check).items() if r == "same"}  # noqa: E731
    assert same({"profile": "quick", "seeds": [3, 4, 5]}) == {"theory", "headdim", "target"}
    assert same({"profile": "quick", "dataset": "stdlib"}) == {"theory", "target"}
    # trained longer, the same models start from the same initial ranks
    assert same({"profile": "scale"}) == {"theory", "seq_len", "headdim", "target", "temp"}
    assert same({"profile": "quick"}) == set(VERDICT_RUNS)
    # the toy task replicates where the check read other toy seeds (the target chapter's seed parameter)
    assert same({"profile": "quick", "seeds": [3, 4, 5], "toy_seeds": [6, 7]}) == {"theory", "headdim"}


def test_a_confirmation_build_is_the_same_computation_as_its_own_record(monkeypatch):
    """A build made with ATTNRANK_SEEDS (the confirmation itself) reads the runs its record was made of."""
    from attnrank.runs.experiments import VERDICT_RUNS, check_relation

    monkeypatch.setenv("ATTNRANK_SEEDS", "[3, 4, 5]")
    relation = check_relation("quick", {"profile": "quick", "seeds": [3, 4, 5]})
    assert set(relation.values()) == {"same"} and len(relation) == len(VERDICT_RUNS)
    assert check_relation("quick", {"profile": "quick"})["dynamics"] == "independent"  # the default seeds 0-2


def test_a_recorded_row_on_runs_the_chapter_no_longer_trains_is_not_compared(tmp_path, monkeypatch):
    """Each recorded row carries a stamp of the runs it read (experiments.design_digest: the configs without seed,
    corpus and threads). The causal chapter's runs at the default changed on 2026-12-07 (50 at ci sizes to GPT-2's 15
    at its own): a row stamped with the old design is shown as such and left out of the comparison, as the second
    corpus's causal row would have been."""
    import pandas as pd

    from attnrank.runs import experiments
    from attnrank.sections import reproducibility as rp
    from attnrank.sphinxext.directives import check_sentence

    digest = experiments.design_digest
    monkeypatch.setenv("ATTNRANK_SEEDS", "[3, 4, 5]")  # seeds are compared apart: the design is the same
    assert digest("protocol", "quick") == digest("dynamics", "quick") != digest("protocol", "scale")
    assert digest("loss", "quick") != digest("dynamics", "quick")  # the loss rule reads its own design too
    monkeypatch.delenv("ATTNRANK_SEEDS")
    assert digest("causal", "quick") != digest("causal", "ci") and digest("target", "quick") == ""
    old = digest("causal", "ci")  # the default's causal runs before 2026-12-07 were the ci runs
    table = pd.DataFrame(
        {
            "verdict": ["loss", "causal", "regime"],
            "status": ["supported", "inconclusive at this scale", ""],
            "design": [digest("loss", "quick"), old, ""],
            "finding": ["", "", "GPT-2 learned"],
        }
    )
    meta = {"profile": "quick", "dataset": "stdlib"}
    relation = rp.record_relation("quick", table, meta)
    assert relation["causal"] == "earlier design" and relation["loss"] == "independent"
    claims = pd.DataFrame({"verdict": ["loss", "causal"], "status": ["supported", "not supported"]})
    text = check_sentence("stdlib", claims, table, relation)
    assert "1 of 1 replicated verdicts agree" in text
    assert text.endswith(
        "not compared, recorded on an earlier design of its runs: temperature acts through the initial rank."
    )
    assert rp._check_glue("stdlib", table, meta, relation)["repro_stdlib_causal"] == (
        "inconclusive at this scale (on an earlier design of its runs)"
    )
    # a row under an earlier rule on an earlier design says both, and is left out once
    table = table.assign(rule=["3", "", ""], design=[digest("dynamics", "quick"), old, ""])
    relation = rp.record_relation("quick", table, {**meta, "date": "2026-12-06"})
    assert relation["loss"] == "earlier rule and design"
    text = check_sentence("stdlib", claims, table, relation)
    assert text.startswith("On a second corpus (the Python standard library): 0 of 0 replicated verdicts agree;")
    assert text.endswith(
        "; not compared, recorded on an earlier design of its runs: temperature acts through the initial rank; not "
        "compared, recorded under an earlier version of its rule on an earlier design of its runs: (ii) higher rank, "
        "lower loss."
    )
    assert rp._check_glue("stdlib", table, meta, relation)["repro_stdlib_loss"] == (
        "supported (under an earlier version of its rule, on an earlier design of its runs)"
    )
