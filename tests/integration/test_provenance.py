"""One provenance hash: the import closure of the result modules, used by the store and the book."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest

from attnrank.core.errors import ConfigError
from attnrank.runs import provenance, store
from attnrank.sphinxext import context

SRC = Path(provenance.__file__).parents[1]


@pytest.fixture
def package(tmp_path, monkeypatch):
    """A copy of the package that the provenance functions read instead of the real one."""
    root = tmp_path / "src" / "attnrank"
    shutil.copytree(SRC, root, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setattr(provenance, "_ROOT", root)
    return root


def _append(path: Path, text: str) -> None:
    path.write_text(path.read_text() + text)


def test_closure_follows_imports_and_leaves_out_tools():
    """The closure holds the training path's modules (lazy imports included) and not the tools (cli, the book's executor)."""
    names = {str(p.relative_to(SRC)) for p in provenance.closure()}
    assert {
        "core/train.py",
        "core/probe.py",
        "core/rank.py",
        "core/models.py",
        "core/attention.py",
        "core/data.py",
        "core/profiles.py",
        "analysis/theory/__init__.py",
        "analysis/theory/hardmax.py",
        "analysis/synthetic.py",
        "analysis/rules.py",
        "analysis/stats.py",
        "__init__.py",
    } <= names
    assert (
        not {
            "cli/upfront.py",
            "cli/__init__.py",
            "__main__.py",
            "sphinxext/__init__.py",
            "runs/grid.py",
            "runs/cache.py",
        }
        & names
    )


def test_editing_a_module_in_the_closure_changes_the_hash_and_a_tool_does_not(package):
    """Editing rank.py (imported by probe) changes the code hash; editing the book's executor or the command line does not.

    Guarantees (docs/guarantees.md): "The run key holds every input of a result", "The book never shows outputs
    made under other inputs." """
    before = provenance.code_hash()
    _append(package / "cli" / "upfront.py", "\n# a comment\n")
    _append(package / "cli" / "__init__.py", "\nX = 1\n")
    assert provenance.code_hash() == before
    _append(package / "core" / "rank.py", "\nX = 1\n")
    assert provenance.code_hash() != before


def test_rewording_retrains_nothing_and_a_change_of_behaviour_rekeys_every_run(package):
    """Reworded docstrings (the module's and a function's), a comment and a reformatted line in the training path keep
    the run key's code hash, the result hash and the file's digest; a changed literal changes all three.

    Guarantee (docs/guarantees.md): "The run key holds every input of a result"; rewording retrains nothing."""
    from attnrank.core.source import source_digest

    runs, results = store.code_hash(), provenance.code_hash()
    measures = package / "core" / "measures.py"
    source = measures.read_text()
    digest = source_digest(measures)
    assert "STUDY_ATOL = 1e-8\n" in source and source.startswith('"""')
    reworded = (
        '"""Reworded entirely.\n\n"""' + source[source.index('"""', 3) + 3 :]  # the module's docstring
    ).replace("STUDY_ATOL = 1e-8\n", "STUDY_ATOL = (\n    1e-8  # a comment\n)\n")
    reworded = reworded.replace('    """', '    """Words only. ', 1)  # a class or function docstring
    assert reworded != source
    measures.write_text(reworded)
    assert (store.code_hash(), provenance.code_hash(), source_digest(measures)) == (runs, results, digest)
    measures.write_text(source.replace("STUDY_ATOL = 1e-8\n", "STUDY_ATOL = 1e-9\n"))
    assert store.code_hash() != runs and provenance.code_hash() != results and source_digest(measures) != digest


def test_behaviour_keeps_statements_and_literals_and_drops_docstrings():
    """The normal form drops exactly the docstrings and comments: a string the code uses stays."""
    from attnrank.core.source import behaviour

    a = 'def f(x):\n    """Doc."""\n    return "used"  # note\n'
    b = "def f(x):\n    return 'used'\n"
    assert behaviour(a) == behaviour(b)
    assert behaviour(a) != behaviour(b.replace("used", "other"))
    assert behaviour('def f():\n    """Only a docstring."""\n') == behaviour("def f():\n    pass\n")


def test_a_new_module_imported_by_train_enters_the_hash(package):
    """A module that train.py starts to import (inside a function) is hashed without editing a list.

    Guarantee (docs/guarantees.md): "The run key holds every input of a result" (a new module is included)."""
    (package / "core" / "newmod.py").write_text("VALUE = 1\n")
    before = provenance.code_hash()  # not imported yet: editing it changes nothing
    (package / "core" / "newmod.py").write_text("VALUE = 2\n")
    assert provenance.code_hash() == before
    _append(package / "core" / "train.py", "\n\ndef _uses_newmod():\n    from .newmod import VALUE\n    return VALUE\n")
    assert package / "core" / "newmod.py" in provenance.closure()
    with_new = provenance.code_hash()
    (package / "core" / "newmod.py").write_text("VALUE = 3\n")
    assert provenance.code_hash() != with_new


def test_book_hash_covers_what_chapters_import(package, tmp_path):
    """The book's context hashes the result closure plus the chapters' imports (plots), not the book's executor."""
    book = tmp_path / "book"
    (book / "chapters").mkdir(parents=True)
    cell = {
        "cell_type": "code",
        "source": ["from attnrank.plots import theory as tplots\n", "from attnrank import book"],
    }
    (book / "chapters" / "x.ipynb").write_text(__import__("json").dumps({"cells": [cell]}))
    assert {"attnrank.plots.theory", "attnrank.book"} <= set(context.chapter_roots(book))
    lib, runs = context.library_hash(book), provenance.code_hash()
    _append(package / "cli" / "upfront.py", "\n# a comment\n")
    assert (context.library_hash(book), provenance.code_hash()) == (lib, runs)
    _append(package / "plots" / "theory.py", "\n# a comment\n")
    assert context.library_hash(book) == lib  # a comment changes no figure
    _append(package / "plots" / "theory.py", "\nX = 1\n")
    assert context.library_hash(book) != lib and provenance.code_hash() == runs  # a figure, not a run


def test_a_verdict_rule_is_not_an_input_of_a_run_but_the_training_path_is(package):
    """Editing rules.py changes the result hash (tables, verdicts) but not the run store's key;
    editing the attention function (imported by train through models) changes both.

    Guarantee (docs/guarantees.md): "The run key holds every input of a result"."""
    runs, results = store.code_hash(), provenance.code_hash()
    _append(package / "analysis" / "rules.py", "\nX = 1\n")
    assert store.code_hash() == runs and provenance.code_hash() != results
    _append(package / "core" / "attention.py", "\nX = 1\n")
    assert store.code_hash() != runs


def test_closure_rejects_an_unknown_root():
    with pytest.raises(ConfigError, match="roots"):
        provenance.closure(("numpy",))


def test_git_state_outside_a_checkout_is_none(tmp_path):
    """Outside a git checkout the commit and dirty flag are None, not an error."""
    assert provenance.git_state(tmp_path) == {"git_commit": None, "git_dirty": None}


def test_git_state_names_the_commit_and_a_dirty_tree(tmp_path):
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-C", str(tmp_path)]
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / "a.txt").write_text("a")
    subprocess.run(git + ["add", "a.txt"], check=True)
    subprocess.run(git + ["commit", "-qm", "a"], check=True)
    head = subprocess.run(git + ["rev-parse", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()
    assert provenance.git_state(tmp_path) == {"git_commit": head, "git_dirty": False}
    (tmp_path / "a.txt").write_text("b")
    assert provenance.git_state(tmp_path) == {"git_commit": head, "git_dirty": True}


def test_run_summary_records_the_git_commit(tmp_path, monkeypatch):
    """A stored run's summary holds the checkout's commit and dirty flag.

    Guarantee (docs/guarantees.md): "The run key holds every input of a result" (the git commit is recorded)."""
    from attnrank.core.profiles import resolve_config

    monkeypatch.setenv("ATTNRANK_RUNS", str(tmp_path / "runs"))
    monkeypatch.setattr(provenance, "git_state", lambda path=None: {"git_commit": "c0ffee", "git_dirty": True})
    ranks = {"study_rank": 3.0}
    summary = dict(
        status="complete",
        failure=None,
        steps=1,
        initial_val_loss=1.0,
        final_val_loss=0.5,
        initial_rank=ranks,
        final_rank=ranks,
        wall_seconds=1.0,
        probe_seconds=0.1,
        device="cpu",
    )
    empty = pd.DataFrame({"step": [0]})
    fake = SimpleNamespace(
        train_log=empty, eval_log=empty, ranks=empty, rank_summary=empty, summary=summary, model=None
    )
    monkeypatch.setattr("attnrank.core.train.train", lambda cfg, progress=False: fake)
    r = store.run(resolve_config("gpt2", "ci"))
    assert r.summary["git_commit"] == "c0ffee" and r.summary["git_dirty"] is True
