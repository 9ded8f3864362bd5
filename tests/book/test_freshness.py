"""A page is never stale because of a file date or an interrupted build (docs/guarantees.md, "A page shows what its
sources hold"): Sphinx reads again by modification time, which `cp -p`, `rsync -a` and `tar x` set back."""

from __future__ import annotations

import json
import os

from test_book_build import build, make_book, shown


def _backdated_write(path, text: str) -> None:
    """Write ``text`` to ``path`` and give it the date it had before (as `cp -p` leaves a copied edit)."""
    st = path.stat()
    path.write_text(text)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns - 10**9))


def test_backdated_edits_and_an_interrupted_write_are_read_again(tmp_path):
    env = make_book(tmp_path)
    first = build(tmp_path, env)
    assert first.returncode == 0, first.stdout[-3000:] + first.stderr[-3000:]
    html = tmp_path / "book" / "_build" / "html"
    assert (html / ".attnrank-complete").exists()

    # a Markdown edit with an older date: once never read
    intro = tmp_path / "book" / "intro.md"
    _backdated_write(intro, intro.read_text() + "\nA sentence added later.\n")
    assert build(tmp_path, env).returncode == 0
    assert "A sentence added later." in (html / "intro.html").read_text()

    # a code edit with an older date: once executed and cached, but its page not rewritten
    nb = tmp_path / "book" / "nb.ipynb"
    doc = json.loads(nb.read_text())
    code = next(c for c in doc["cells"] if c["cell_type"] == "code" and "glue" in "".join(c["source"]))
    code["source"] = "".join(code["source"]).replace("glossary.fmt(1 / 3)", "glossary.fmt(2 / 3)")
    _backdated_write(nb, json.dumps(doc))
    assert build(tmp_path, env).returncode == 0
    assert shown(tmp_path) == ("ci 0.67", "ci 0.67")

    # a build interrupted while writing pages leaves no mark: the next one writes every page again
    (html / "intro.html").write_text("<p>half written</p>")
    (html / ".attnrank-complete").unlink()
    again = build(tmp_path, env)
    assert again.returncode == 0 and "Executing notebook" not in again.stdout + again.stderr  # nothing re-executes
    assert "half written" not in (html / "intro.html").read_text() and shown(tmp_path) == ("ci 0.67", "ci 0.67")
