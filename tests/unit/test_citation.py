"""The book's "Cite this book" entry is written from CITATION.cff and the repository's one address."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from attnrank.core.errors import ConfigError
from attnrank.sphinxext.directives import citation

ROOT = Path(__file__).resolve().parents[2]


def test_the_entry_comes_from_the_citation_file_and_the_repository_address():
    cff = yaml.safe_load((ROOT / "CITATION.cff").read_text())
    text = citation(ROOT / "CITATION.cff", "https://github.com/x/y")
    assert text.startswith(f"@software{{attention_rank_{str(cff['date-released'])[:4]},")
    assert f"title   = {{{{{cff['title']}}}}}" in text and f"version = {{{cff['version']}}}" in text
    assert (
        f"url     = {{{cff['url']}}}" in text and "note    = {Jupyter Book, source at https://github.com/x/y}" in text
    )
    assert "note" not in citation(ROOT / "CITATION.cff")


def test_a_citation_file_without_a_version_is_named(tmp_path):
    (tmp_path / "CITATION.cff").write_text("title: t\nauthors: [{name: a}]\ndate-released: 2026-01-01\n")
    with pytest.raises(ConfigError, match="version"):
        citation(tmp_path / "CITATION.cff")


def test_the_bibliography_is_labelled_as_the_text_cites_author_and_year():
    from pybtex.database import parse_file

    from attnrank.sphinxext import _unshadow_latex_codec
    from attnrank.sphinxext.bibliography import AuthorYearStyle

    _unshadow_latex_codec()  # as the build does: the LaTeX accents decoded
    labels = {
        e.key: e.label for e in AuthorYearStyle().format_bibliography(parse_file(ROOT / "chapters" / "references.bib"))
    }
    assert labels["min2023efficiency"] == "Min and Li, 2023"  # as the text cites it
    assert labels["warner2024modernbert"] == "Warner et al., 2024"  # not pybtex's alpha "WCClavie+24"
    assert labels["roy2007effective"] == "Roy and Vetterli, 2007"
    assert len(set(labels.values())) == len(labels)
