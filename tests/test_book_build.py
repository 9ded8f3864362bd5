"""The book's Sphinx extension on a two-page fixture book: no page shows a stale or missing value.

Each test builds a tiny book (one notebook that glues a value computed by the library from
the environment, one Markdown page that pastes it) with ``jupyter-book build``, against a
copy of the library in a temporary folder, so that the library can be edited.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "attnrank"
JUPYTER_BOOK = Path(sys.executable).parent / "jupyter-book"

CONFIG = """\
title: fixture
only_build_toc_files: true
execute:
  execute_notebooks: {execute}
  run_in_temp: false
sphinx:
  extra_extensions:
    - attnrank.sphinxext
    - sphinx-mathjax-offline
  config:
    nb_execution_raise_on_error: true
    nb_kernel_rgx_aliases: {{".*": "python3"}}
"""

TOC = """\
format: jb-book
root: intro
chapters:
  - file: nb
"""

INTRO = """\
# Intro

Pasted: {glue:text}`nb.ipynb::value:s`.

$$
\\tau = \\frac{T}{\\sqrt{d}}
$$
"""


def _notebook(code: str, markdown: str) -> str:
    cells = [
        {"cell_type": "code", "metadata": {"tags": ["parameters"]}, "source": 'profile = "auto"',
         "outputs": [], "execution_count": None},
        {"cell_type": "code", "metadata": {}, "source": code, "outputs": [], "execution_count": None},
        {"cell_type": "markdown", "metadata": {}, "source": markdown},
    ]
    return json.dumps({"cells": [{"id": f"c{i}", **c} for i, c in enumerate(cells)],
                       "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}},
                       "nbformat": 4, "nbformat_minor": 5})


NB_CODE = (
    "import os\n"
    "from attnrank import book\n"
    "from attnrank.profiles import resolve_profile\n"
    "book.glue('value', f\"{resolve_profile('auto')} {book.fmt(1 / 3)}\")"
)
NB_MD = "# Notebook\n\nShown: {glue:text}`value:s`."


def make_book(tmp_path: Path, execute: str = "cache", notebook: str | None = None, intro: str = INTRO) -> dict:
    """A fixture book in ``tmp_path/book`` and a copy of the library in ``tmp_path/lib``; returns the environment."""
    book = tmp_path / "book"
    book.mkdir()
    (book / "_config.yml").write_text(CONFIG.format(execute=execute))
    (book / "_toc.yml").write_text(TOC)
    (book / "intro.md").write_text(intro)
    (book / "nb.ipynb").write_text(notebook or _notebook(NB_CODE, NB_MD))
    shutil.copytree(SRC, tmp_path / "lib" / "attnrank", ignore=shutil.ignore_patterns("__pycache__"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("ATTNRANK_")}
    env.update(PYTHONPATH=str(tmp_path / "lib"), ATTNRANK_DATA=str(tmp_path / "data"), ATTNRANK_PROFILE="ci",
               HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", PYDEVD_DISABLE_FILE_VALIDATION="1")
    return env


def build(tmp_path: Path, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run([str(JUPYTER_BOOK), "build", str(tmp_path / "book")], env=env, capture_output=True,
                          text=True, timeout=600)


def shown(tmp_path: Path) -> tuple[str, str]:
    """The value as pasted on the Markdown page and as shown on the notebook page."""
    html = tmp_path / "book" / "_build" / "html"
    intro = re.search(r"Pasted: (.*?)\.</p>", (html / "intro.html").read_text())
    nb = re.search(r"Shown: (.*?)\.</p>", (html / "nb.html").read_text())
    text = lambda m: re.sub(r"<[^>]+>", "", m.group(1)) if m else None
    return text(intro), text(nb)


def executed(result: subprocess.CompletedProcess) -> bool:
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return "Executing notebook" in result.stdout + result.stderr


@pytest.mark.slow
def test_library_and_settings_changes_re_execute_and_refresh_every_page(tmp_path):
    """A library edit and an ATTNRANK_PROFILE switch re-execute the chapter and refresh the page that
    pastes its value; reverting serves the earlier outputs; an unchanged rebuild executes nothing."""
    env = make_book(tmp_path)
    assert executed(build(tmp_path, env))
    assert shown(tmp_path) == ("ci 0.33", "ci 0.33")

    assert not executed(build(tmp_path, env))  # nothing changed
    assert shown(tmp_path) == ("ci 0.33", "ci 0.33")

    book_py = tmp_path / "lib" / "attnrank" / "book.py"
    original = book_py.read_text()
    book_py.write_text(original.replace("def fmt(x, digits: int = 2)", "def fmt(x, digits: int = 3)"))
    assert executed(build(tmp_path, env))
    assert shown(tmp_path) == ("ci 0.333", "ci 0.333")

    book_py.write_text(original)
    assert not executed(build(tmp_path, env))  # served from the cache of the original library
    assert shown(tmp_path) == ("ci 0.33", "ci 0.33")

    assert executed(build(tmp_path, {**env, "ATTNRANK_PROFILE": "quick"}))
    assert shown(tmp_path) == ("quick 0.33", "quick 0.33")
    assert not executed(build(tmp_path, env))  # back to ci: ci's outputs, not quick's
    assert shown(tmp_path) == ("ci 0.33", "ci 0.33")
