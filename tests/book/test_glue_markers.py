"""No blank numbers, also where myst-nb would paste nothing without a cross-page reference: a key of
the page's own notebook that no cell glued, and a pasted value whose format fails. Both fail the
build (exit status 1) and show the missing-value marker on the page."""

from __future__ import annotations

from test_book_build import NB_CODE, NB_MD, _notebook, build, make_book

INTRO_FORMAT = "# Intro\n\nPasted: {glue:text}`nb.ipynb::value:.2f`.\n"


def _page(tmp_path, name: str) -> str:
    return (tmp_path / "book" / "_build" / "html" / f"{name}.html").read_text()


def test_a_missing_key_of_the_pages_own_notebook_shows_the_marker(tmp_path):
    notebook = _notebook(NB_CODE, "# Notebook\n\nShown: {glue:text}`value:s`. Absent: {glue:text}`absent:s`.")
    env = make_book(tmp_path, notebook=notebook)
    result = build(tmp_path, env)
    out = result.stdout + result.stderr
    assert result.returncode != 0, out[-3000:]
    assert "1 pasted value(s) are provided by no cell" in out and "absent" in out
    html = _page(tmp_path, "nb")
    assert "[missing value: nb::absent]" in html and "Shown: <span" in html


def test_a_pasted_value_whose_format_fails_fails_the_build_and_shows_the_marker(tmp_path):
    env = make_book(tmp_path, intro=INTRO_FORMAT)  # the value is text ("ci 0.33"): ".2f" cannot format it
    for _ in range(2):  # again on an unchanged rebuild
        result = build(tmp_path, env)
        out = result.stdout + result.stderr
        assert result.returncode != 0, out[-3000:]
        assert "glued value 'value' of 'nb' cannot be formatted with '.2f'" in out
    assert "[missing value: nb::value]" in _page(tmp_path, "intro")


def test_one_learned_gate_quoted_twice_over_one_named_set_with_two_answers_fails_the_build(tmp_path):
    # two verdicts state the learned gate over runs named alike, with different numbers: a reader could not tell
    # which runs each read, so the build fails naming the set, the verdicts and both answers
    quote = 'json.dumps({{"set": "τ = 1, seeds 0–2 (3 runs a model)", "numbers": "GPT-2 at worst {} nats below"}})'
    code = (
        NB_CODE
        + "\nimport json\n"
        + "".join(f"book.glue('{name}_gate', {quote.format(gap)})\n" for name, gap in (("a", "0.50"), ("b", "0.40")))
    )
    result = build(tmp_path, make_book(tmp_path, notebook=_notebook(code, NB_MD)))
    out = result.stdout + result.stderr
    assert result.returncode != 0, out[-3000:]
    assert "the learned gate over one run set (τ = 1, seeds 0–2 (3 runs a model)) is quoted with different" in out
    assert "nb (a): GPT-2 at worst 0.50 nats below" in out and "nb (b): GPT-2 at worst 0.40 nats below" in out
