"""The book rules of the site checker (tests/sitecheck.py.BOOK_RULES: a page reads as a book), each on a page that
breaks it and on one that does not."""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

import pytest
import sitecheck
from sitecheck import Page


def _findings(name: str, html: str, page: str = "chapters/x.html", site=None) -> list[str]:
    (r,) = [r for r in sitecheck.BOOK_RULES if r.name == name]
    return list(r.check(Page(page, f"<html><body><article>{html}</article></body></html>", site)))


def _png(width: int) -> bytes:
    ihdr = struct.pack(">IIBBBBB", width, 1, 8, 2, 0, 0, 0)
    chunk = lambda t, d: struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d))  # noqa: E731
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IEND", b"")


FIGURE = (
    '<figure><img src="../_images/a.png" alt="Line chart of rank against step" width="688"/>'
    '<figcaption><span class="caption-number">Fig. 3.1 </span>Rank.</figcaption></figure>'
)


@pytest.mark.parametrize(
    "name, bad, good",
    [
        (
            "machine-identifier",
            "<p>50 runs (ci profile: ci sizes) on rank_atol_1e-8, the corpus shakespeare.</p>",
            "<p>50 runs at the ci profile's sizes on the study's 10⁻⁸ count.</p><pre>head_dim = 32</pre>",
        ),
        (
            "machine-identifier",
            "<p>Runs of the quick profile, trained on <span>shakespeare</span>.</p>",
            "<p>Runs of the quick profile, trained on <span>Shakespeare's plays</span>.</p>",
        ),
        (
            "visible-code",
            '<div class="cell"><div class="cell_input"><pre>book.setup(profile)</pre></div></div>',
            '<details class="hide"><div class="cell_input"><pre>book.publish(s)</pre></div></details>',
        ),
        (
            "raw-repr",
            "<div class=\"cell_output\"><pre>'**Verdict: supported.** It holds'</pre></div>",
            '<div class="cell_output"><pre>0.42</pre></div>',
        ),
        (
            "raw-maths",
            "<p>from 1.11 at $d_h$ = 4 to 1.23</p>",
            '<p>costs $3 and $4, at <span class="math notranslate nohighlight">\\(d_h = 4\\)</span></p>',
        ),
        (
            "ascii-maths",
            "<p>runs at tau = 1, mean +-1 sd, d_h + 1</p>",
            '<p>runs at τ = 1, ±1 sd, <code>tau = 1</code>, <span class="math">\\(\\tau = 1\\)</span>, train_tau</p>',
        ),
        (
            "index-column",
            "<table><thead><tr><th></th><th>arch</th></tr></thead><tbody><tr><th>0</th><td>bert</td></tr></tbody></table>",
            "<table><thead><tr><th>model</th><th>runs</th></tr></thead><tbody><tr><td>ModernBERT</td><td>4</td></tr></tbody></table>",
        ),
        (
            "code-header",
            "<table><thead><tr><th>final_val_loss</th></tr></thead></table>",
            "<table><thead><tr><th>d_h range</th></tr></thead></table>",
        ),
        (
            "point-interval",
            "<p>peak at 0.25 [0.25, 0.25] and −1.00 [−1.00, −1.00]</p>",
            "<p>peak at 0.25 in every resample, 0.016 [0.004, 0.064], [1, 10]</p>",
        ),
        (
            "zero-count",
            "<p>24 runs, of which 0 diverged; 0 runs failed</p>",
            "<p>24 runs (none diverged), τ = 0.001, at step 0 (the initialisation), 10 runs</p>",
        ),
        (
            "printed-timing",
            "<p>analysis computed in 82.4 s after the runs were loaded</p>",
            "<p>n = 64 tokens in 5 runs</p>",
        ),
        ("alt-text", '<img src="../_images/abc.png" alt="../_images/abc.png"/>', FIGURE),
        (
            "unnumbered-table",
            "<div><table><tr><td>4</td></tr></table></div>",
            '<div class="numbered-table"><p class="caption"><span class="caption-number">Table 2 </span>Runs.</p>'
            "<table><tr><td>4</td></tr></table></div>"
            '<table><caption><span class="caption-number">Table 3 </span>Claims.</caption><tr><td>1</td></tr></table>',
        ),
        ("unnumbered-figure", '<p><img src="../_images/a.png" alt="a chart"/></p>', FIGURE),
        ("inline-data", '<a href="data:text/csv;base64,YQ==">data</a>', '<a href="../data/x.csv">data</a>'),
    ],
)
def test_a_rule_finds_what_breaks_it_and_nothing_else(name, bad, good):
    assert _findings(name, bad), f"{name} misses {bad!r}"
    assert not _findings(name, good), f"{name} flags {good!r}"


def test_timings_belong_to_the_reproducibility_chapter():
    text = "<p>the chapter ran in 12 s</p>"
    assert _findings("printed-timing", text)
    assert not _findings("printed-timing", text, page="chapters/reproducibility.html")


def test_an_image_wider_than_the_column_is_shrunk(tmp_path):
    (tmp_path / "_images").mkdir()
    (tmp_path / "_images" / "wide.png").write_bytes(_png(1400))
    (tmp_path / "chapters").mkdir()
    img = '<img src="../_images/wide.png" alt="a chart"/>'
    assert _findings("shrunk-figure", img, site=tmp_path) == [
        "image 'wide.png' is 1400 px wide, more than the 688 px column"
    ]
    assert not _findings("shrunk-figure", img.replace("/>", ' width="688"/>'), site=tmp_path)
    # myst-nb writes a glued image's width as a style
    assert not _findings("shrunk-figure", img.replace("/>", ' style="width: 665px;"/>'), site=tmp_path)
    assert _findings("shrunk-figure", img.replace("/>", ' style="width: 900px;"/>'), site=tmp_path) == [
        "image 'wide.png' is 900 px wide, more than the 688 px column"
    ]


def test_a_data_link_must_reach_a_file_and_the_command_reports_and_fails(tmp_path, capsys):
    (tmp_path / "chapters").mkdir()
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "f.csv").write_text("a\n1\n")
    ok = '<a class="figure-data" href="../data/f.csv">data</a>'
    assert not _findings("missing-data", ok, site=tmp_path)
    assert _findings("missing-data", ok.replace("f.csv", "g.csv"), site=tmp_path)
    (tmp_path / "index.html").write_text("<html></html>")
    (tmp_path / "chapters" / "x.html").write_text(f"<html><article>{FIGURE}{ok}</article></html>")
    assert sitecheck.main([str(tmp_path), "--rules", "book"]) == 0
    (tmp_path / "chapters" / "y.html").write_text("<html><article><p>computed in 3.0 s</p></article></html>")
    assert sitecheck.main([str(tmp_path), "--rules", "book"]) == 1
    assert "chapters/y.html: printed-timing:" in capsys.readouterr().out
    assert sitecheck.main([str(tmp_path)]) == 1  # the default runs both lists
    assert "chapters/y.html: printed-timing:" in capsys.readouterr().out
    assert sitecheck.main([str(tmp_path), "--rules", "printed"]) == 0  # a timing is not printed output
    assert sitecheck.main([str(tmp_path / "nothing")]) == 2


def test_typeset_turns_ascii_maths_into_symbols_outside_code_and_tex():
    from attnrank.words.typeset import typeset

    assert typeset("s = 10 = 1/sqrt(tau), tau = 0.01; +-1 sd at d_h + 1") == "s = 10 = 1/√τ, τ = 0.01; ±1 sd at dₕ + 1"
    assert typeset("init x s, evaluation tau, each tau run") == "init × s, evaluation τ, each τ run"
    assert typeset("tau -> 0 and r <= 2, a->b") == "τ → 0 and r ≤ 2, a->b"
    assert typeset("median sigma_1, U_n; Spearman rho; Spearman's rho; softmax(QK^T)") == (
        "median σ₁, Uₙ; Spearman ρ; Spearman's ρ; softmax(QKᵀ)"
    )
    assert typeset("rho_within, sigma_10, QK^Tx") == "rho_within, sigma_10, QK^Tx"
    kept = "`tau = 1`, $\\tau = 1$, <a href='x?tau=1'>train_tau</a>"
    assert typeset(kept) == kept
    page = f"<html><body><article><p>{typeset('runs at tau = 1 +-0.1')}</p></article></body></html>"
    (rule,) = [r for r in sitecheck.BOOK_RULES if r.name == "ascii-maths"]
    assert list(rule.check(Page("chapters/x.html", page))) == []


@pytest.mark.parametrize(
    "bad",
    [
        "<p>the median number of steps is tau 0.01: 60, tau 0.1: 55</p>",
        "<figcaption>singular values of softmax(beta S0) against beta</figcaption>",
        "<p>last early step 4, rho 0.85 [0.69, 0.93]</p>",
        "<p>the determinant is about 10 to the x = -35</p>",
        "<p>between x = -19.0 and -18.1</p>",
        "<p>only at a temperature of 7.9e+05</p>",
        "<p>at most 1.6e-06 for the effective rank</p>",
        "<p>every other measure moves by 1.4e\u221206</p>",
    ],
)
def test_ascii_maths_flags_greek_words_signs_and_e_notation_in_prose(bad):
    assert _findings("ascii-maths", bad), bad


@pytest.mark.parametrize(
    "good",
    [
        "<p>τ = 0.01: 60, between x = \u221219.0 and \u221218.1, at 7.9×10⁵, a rank of 13 (steps 2-5, GPT-2)</p>",
        "<p>the column <code>train_tau</code>, <code>x = -35</code> and <code>1.6e-06</code> as code</p>",
        '<p><a href="../data/measure_ranks_vs_tau.csv" download>data (20 rows, CSV)</a> for rank_atol_1e-8</p>',
        '<p><span class="math notranslate nohighlight">\\(\\tau = 10^{-3}\\), \\(\\beta\\), \\(x = -35\\)</span></p>',
        "<table><tr><td>\u22122.4e\u221205</td><td>-0.5</td></tr></table>",
        "<p>rank, atol 1e-8 (study), rtol 1e-2; the 10-90% band; a tau-independent set-up; rho_min</p>",
    ],
)
def test_ascii_maths_leaves_code_links_maths_tables_and_ranges(good):
    assert _findings("ascii-maths", good) == [], good


def test_a_figures_data_file_carries_no_machine_path(tmp_path):
    """The CSV a figure links to is checked for the build machine's paths too; the book writes run keys, not run
    folders (attnrank.book.MACHINE_COLUMNS)."""
    import pandas as pd

    from attnrank import book

    (tmp_path / "chapters").mkdir()
    (tmp_path / "data").mkdir()
    frame = pd.DataFrame({"key": ["7f6a"], "path": ["/work/book/data/runs/gpt2-7f6a"], "value": [1.5]})
    (tmp_path / "data" / "f.csv").write_text(book._Data(frame).csv)
    (rule,) = [r for r in sitecheck.PRINTED_RULES if r.name == "machine-path"]
    page = Page("chapters/x.html", '<a class="figure-data" href="../data/f.csv">data</a>', tmp_path, ("/work/book",))
    assert list(rule.check(page)) == [] and "7f6a" in (tmp_path / "data" / "f.csv").read_text()
    (tmp_path / "data" / "f.csv").write_text(frame.to_csv(index=False))
    assert list(rule.check(page)) == ["machine path in the data file ../data/f.csv: /work/book"]


def test_on_paper_code_toggles_are_hidden_and_captions_stay_with_their_figure():
    """The book's print styles (chapters/_static/attnrank.css): the "Show code cell source" toggles and hidden code do
    not print, and figures and numbered tables are not split from their captions."""
    import re
    from pathlib import Path

    css = (Path(__file__).resolve().parents[2] / "chapters" / "_static" / "attnrank.css").read_text()
    (block,) = re.findall(r"@media print \{(.*?)\n\}", css, re.S)
    rules = dict(re.findall(r"\s*([^{}]+?)\s*\{([^}]*)\}", block))
    hidden = next(v for k, v in rules.items() if "details.hide" in k and "div.cell_input" in k)
    assert "display: none" in hidden
    kept = next(v for k, v in rules.items() if "figure" in k.split(",")[0] and "div.numbered-table" in k)
    assert "break-inside: avoid" in kept
    assert any("p.caption" in k and "break-after: avoid" in v for k, v in rules.items())
    # a tall figure fits one page with its caption, and a wide table the page's width (on paper nothing scrolls)
    assert "max-height" in next(v for k, v in rules.items() if k.strip().endswith("figure img"))
    assert "overflow: visible" in next(v for k, v in rules.items() if "has(table.attnrank-table)" in k)
    assert "width: 100%" in next(v for k, v in rules.items() if k.strip().startswith("table.attnrank-table,"))
    # (that a wide table of either kind fits the printed page is read in Chromium: tests/book/test_phone_figures.py)


@pytest.mark.parametrize(
    "record", sorted((Path(__file__).parents[2] / "data").glob("*/build.json")), ids=lambda p: p.parent.name
)
def test_a_recorded_builds_note_reads_as_the_book_does(record):
    """A record's note is pasted into the reproducibility chapter as written (sections.reproducibility), so it meets
    the page's rules: no maths typed in ASCII (a 'rho' once failed the site check only after a full build)."""
    import json

    note = json.loads(record.read_text()).get("note", "")
    assert _findings("ascii-maths", f"<p>{note}</p>") == []
