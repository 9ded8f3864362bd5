"""The chapters: committed without outputs, paired with their jupytext twins, parameterised."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest

from attnrank import book

CHAPTERS = Path(__file__).resolve().parents[2] / "chapters"
NOTEBOOKS = sorted(CHAPTERS.glob("*.ipynb"))


def test_every_toc_notebook_exists():
    toc = (CHAPTERS.parent / "_toc.yml").read_text()
    names = [line.split("chapters/")[1].strip() for line in toc.splitlines() if "file: chapters/" in line]
    for name in names:
        assert (CHAPTERS / f"{name}.ipynb").exists() or (CHAPTERS / f"{name}.md").exists(), name


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_has_no_outputs_and_a_parameters_cell(path):
    nb = json.loads(path.read_text())
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    assert all(not c.get("outputs") and c.get("execution_count") is None for c in code), "outputs committed"
    tagged = [c for c in nb["cells"] if "parameters" in c.get("metadata", {}).get("tags", [])]
    assert len(tagged) == 1, "exactly one cell tagged 'parameters'"
    assert nb["metadata"]["kernelspec"]["name"] == "python3"
    assert "profile" in "".join(tagged[0]["source"])


def test_jupytext_twins_in_sync(tmp_path):
    """Every chapter has its twin with the same cells; a twin edited alone is named, with the command that pairs it."""
    from attnrank.sphinxext.freshness import twin_differences

    assert [p.name for p in NOTEBOOKS if not p.with_suffix(".py").exists()] == []
    assert twin_differences(CHAPTERS.parent) == []
    book = tmp_path / "book"
    (book / "chapters").mkdir(parents=True)
    (book / "_toc.yml").write_text("format: jb-book\nroot: chapters/temp\n")
    for suffix in (".ipynb", ".py"):
        (book / "chapters" / f"temp{suffix}").write_text((CHAPTERS / f"temp{suffix}").read_text())
    assert twin_differences(book) == []
    twin = book / "chapters" / "temp.py"
    twin.write_text(twin.read_text() + "\n# %%\nprint('edited alone')\n")
    (line,) = twin_differences(book)
    assert (
        line.startswith("chapters/temp.ipynb and chapters/temp.py hold different cells") and "jupytext --sync" in line
    )


def test_values_pasted_from_another_page_name_a_format():
    """``{glue:text}`page.ipynb::key``` needs a format spec (``:s``, ``:d``, ``:.2f``): without
    one, myst-nb splits the reference at the last colon of ``::`` and finds no value."""
    import re

    bad = []
    for path in sorted(CHAPTERS.glob("*.md")) + sorted(CHAPTERS.glob("*.py")):
        for ref in re.findall(r"\{glue:text\}`([^`]*)`", path.read_text()):
            if "::" in ref and ":" not in ref.split("::", 1)[1]:
                bad.append(f"{path.name}: {ref}")
    assert not bad, bad


def _declared_parameters(path: Path) -> list[str]:
    """The names the notebook's parameters cell assigns, in order (read with ``ast``, not as papermill does)."""
    nb = json.loads(path.read_text())
    (cell,) = [c for c in nb["cells"] if "parameters" in c.get("metadata", {}).get("tags", [])]
    tree = ast.parse("".join(cell["source"]))
    return [n.target.id if isinstance(n, ast.AnnAssign) else n.targets[0].id for n in tree.body]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_papermill_lists_every_parameter_with_its_type_and_meaning(path):
    """``papermill --help-notebook`` shows each parameter's type (the schema's) and what it means: every
    line of the parameters cell is ``name: type = default  # help`` with no other ``=`` (papermill skips
    such a line; it showed "Unknown type" for every parameter)."""
    import papermill

    inferred = papermill.inspect_notebook(str(path))
    declared = _declared_parameters(path)
    assert list(inferred) == declared
    for name, p in inferred.items():
        schema = book.PARAMETERS[name]
        assert p["inferred_type_name"] == ("list" if schema.many else schema.kind.__name__), name
        assert len(p["help"].split()) >= 3, (name, p["help"])


def test_every_file_the_prose_names_exists():
    """A path written in the chapters, docs or README (``tests/...``, ``src/...``) names a file or folder that exists
    (a test file that moved once left the theory chapter pointing at nothing)."""
    root = CHAPTERS.parent
    texts = [*CHAPTERS.glob("*.py"), *CHAPTERS.glob("*.md"), *root.glob("docs/*.md"), root / "README.md"]
    pattern = re.compile(r"`((?:tests|src|data|chapters|docs|benchmarks)/[A-Za-z0-9_./-]+)`")
    named = {(p.name, m) for p in texts for m in pattern.findall(p.read_text(encoding="utf-8"))}
    made = ("data/runs", "data/cache", "data/tokenizers")  # folders the code makes (ignored by git)
    missing = sorted(
        (name, m) for name, m in named if not m.startswith(made) and not any(root.glob(m.rstrip("/") + "*"))
    )
    assert len(named) > 10 and not missing


def _parameters_cell(path: Path) -> dict:
    """The names and default values of a chapter's ``parameters`` cell (its text twin)."""
    text = path.read_text(encoding="utf-8")
    cell = text.split('# %% tags=["parameters"', 1)[1].split("\n# %%", 1)[0]
    tree = ast.parse(cell.split("\n", 1)[1])
    return {n.target.id: ast.literal_eval(n.value) for n in tree.body if isinstance(n, ast.AnnAssign)}


@pytest.mark.parametrize("path", sorted(CHAPTERS.glob("*.py")), ids=lambda p: p.stem)
def test_a_chapters_parameters_cell_agrees_with_its_section_function(path):
    """A chapter's parameters cell names exactly the parameters of the function it passes them to (its section(),
    the one declaration) that the shared schema defines, each with the default the function gives it when called
    without it (None in the cell: the function's own default decides)."""
    import importlib
    import inspect

    from attnrank import book

    text = path.read_text(encoding="utf-8")
    match = re.search(r"book\.check_parameters\(globals\(\), (\w+)\.(\w+)\)", text)
    if match is None:
        pytest.skip("no parameters")
    alias = match.group(1)
    imported = re.search(rf"from (attnrank[\w.]*) import [^\n]*\b{alias}\b", text)
    function = getattr(importlib.import_module(f"{imported.group(1)}.{alias}"), match.group(2))
    signature = inspect.signature(function).parameters
    cell = _parameters_cell(path)
    assert set(cell) == set(signature) & set(book.PARAMETERS), set(cell) ^ (set(signature) & set(book.PARAMETERS))
    same = lambda v: tuple(v) if isinstance(v, list) else v  # noqa: E731 - a list in the cell, a tuple in Python
    wrong = {
        name: (value, signature[name].default)
        for name, value in cell.items()
        if name in signature and value is not None and same(signature[name].default) not in (same(value), None)
    }
    assert wrong == {}, f"{path.name}: parameters cell against {function.__qualname__}: {wrong}"


def test_no_directive_argument_holds_a_backtick():
    """A backtick in a directive's argument (```{table} the `scale` profile) ends CommonMark's fence: the directive
    silently becomes a code block and its label is undefined."""
    fence = re.compile(r"^(?:# )?```\{[\w:-]+\}[^\n]*`", re.MULTILINE)
    texts = [*CHAPTERS.glob("*.py"), *CHAPTERS.glob("*.md")]
    assert [p.name for p in texts if fence.search(p.read_text(encoding="utf-8"))] == []


#: A figure a chapter pastes: ``{glue:figure} name`` (or another page's, ``{attnrank-figure}``), its options and
#: its caption, up to the closing fence (in a twin every line starts with ``# ``).
FIGURE = re.compile(r"```\{(glue:figure|attnrank-figure)\} (\S+)\n((?::[a-z]+:.*\n)*)\n((?:.*\n)*?)```")
#: Figures that are pages, not images: the explorer (Bokeh panels; its caption pastes its own numbers).
INTERACTIVE = {"explorer"}


@pytest.mark.parametrize("path", [*sorted(CHAPTERS.glob("*.py")), CHAPTERS / "intro.md"], ids=lambda p: p.name)
def test_every_figure_has_its_caption_and_alt_text_in_the_chapter(path):
    """The chapter writes each figure's caption and alt text; a figure of its own ends its caption with the words
    that depend on the result and the link to its data (``{glue:md}`<name>__source```)."""
    text = re.sub(r"^# ?", "", path.read_text(encoding="utf-8"), flags=re.MULTILINE)
    figures = FIGURE.findall(text)
    assert figures or "glue:figure" not in text
    for kind, name, options, caption in figures:
        if name in INTERACTIVE:
            continue
        alt = re.search(r"^:alt: (.+)$", options, re.MULTILINE)
        assert alt and len(alt.group(1).split()) >= 8, f"{path.name}: {name} needs :alt: text in words"
        assert len(caption.split()) >= 12, f"{path.name}: {name} needs a caption in the chapter"
        if kind == "glue:figure":
            assert caption.rstrip().endswith(f"{{glue:md}}`{name}__source`"), f"{path.name}: {name}"


def test_every_verdict_table_names_each_claim_as_the_glossary_does():
    """The intro's verdict tables and the reproducibility chapter's table name each claim (the row whose badge is
    ``<verdict>_badge``) as :data:`attnrank.words.glossary.VERDICT_LABELS` does, the findings box's words, with a
    capital after the claim's number (they had drifted apart: "(iv) The theory holds" and "(iv) the propositions
    hold")."""
    from attnrank.words.glossary import VERDICT_LABELS

    def shown(label: str) -> str:
        number, _, rest = label.rpartition(") ") if label.startswith("(") else ("", "", label)
        return (f"{number}) " if number else "") + rest[:1].upper() + rest[1:]

    rows = [
        *re.findall(
            r"^\| \{doc\}`(.+?) <\w+>`(?: †)?(?: ‡)? \| \{glue\}`\w+\.ipynb::(\w+)_badge`",
            (CHAPTERS / "intro.md").read_text(),
            re.M,
        ),
        *re.findall(
            r"^# \| (.+?) \| \{glue\}`\w+\.ipynb::(\w+)_badge`", (CHAPTERS / "reproducibility.py").read_text(), re.M
        ),
    ]
    assert len(rows) == 2 * len(VERDICT_LABELS)
    assert {(label, verdict) for label, verdict in rows if label != shown(VERDICT_LABELS[verdict])} == set()


def test_a_chapter_and_the_pool_workers_print_no_transformers_notice(monkeypatch):
    """``TRANSFORMERS_VERBOSITY=info`` put 408 log lines ("setting up devices", generation configs) on a chapter's
    output: the chapter's parameter check and every pool worker set transformers' level to errors."""
    from transformers.utils import logging as hf_logging

    from attnrank import book
    from attnrank.runs import grid
    from attnrank.sections import temp

    monkeypatch.setenv("TRANSFORMERS_VERBOSITY", "info")
    hf_logging.set_verbosity_info()
    book.check_parameters(
        {"profile": "ci", "seeds": None, "taus": None, "head_dims": None, "tau": 2.0, "dataset": None}, temp.section
    )
    assert hf_logging.get_verbosity() == hf_logging.ERROR
    hf_logging.set_verbosity_info()
    grid._init_process_worker({}, 1, None, [])
    assert hf_logging.get_verbosity() == hf_logging.ERROR
