"""A page is never stale because of a file date or an interrupted build: Sphinx decides what to read again by
modification times, which ``cp -p``, ``rsync -a`` and ``tar x`` set back, and trusts pages an interrupted build left
half written. This part compares content instead:

* every source a page is read from is hashed when it is read; a source whose content differs from its hash is read
  again (and its page rewritten), whatever its date says;
* the build marks its output folder complete only when it ends without an error; a build that finds the mark missing
  (the last one was interrupted while writing) reads and writes every page again (executing nothing: the execution
  cache serves the chapters);
* a chapter notebook and its jupytext twin must hold the same cells: a twin edited alone stops the build with one
  line that says how to pair them again (:func:`twin_differences`).
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from ..cli.build import one_line_errors, toc_chapters
from ..core.errors import ConfigError

#: The file in the output folder that says the last build ended without an error (its pages are all written).
COMPLETE_MARK = ".attnrank-complete"


def _digest(path) -> str:
    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()
    except OSError:
        return ""


def twin_differences(srcdir) -> list[str]:
    """The toc's chapter notebooks whose jupytext twin (``chapters/<name>.py``) holds other cells (type, source or
    tags), one line each naming both files and the command that pairs them again; empty when all agree."""
    import jupytext

    out = []
    for name in toc_chapters(srcdir):
        notebook = Path(srcdir) / f"{name}.ipynb"
        twin = notebook.with_suffix(".py")
        if not notebook.exists() or not twin.exists():
            continue

        def cells(nb):
            return [(c.cell_type, c.source.strip(), sorted(c.metadata.get("tags", []))) for c in nb.cells]

        if cells(jupytext.read(notebook)) != cells(jupytext.read(twin)):
            out.append(
                f"{name}.ipynb and {name}.py hold different cells (one was edited without the other): run "
                f"`jupytext --sync {name}.ipynb` (the newer file wins) or `jupytext --to ipynb {name}.py` "
                "(the twin wins)"
            )
    return out


def _check_twins(app) -> None:
    differ = twin_differences(app.srcdir)
    if differ:
        raise ConfigError("chapters", "; ".join(differ))


def _outdated(app, env, added, changed, removed) -> list[str]:
    """The pages to read again besides Sphinx's own choice: those whose source content changed since it was read, and
    every page when the last build did not end complete."""
    mark = Path(app.outdir) / COMPLETE_MARK
    complete = mark.exists()
    mark.unlink(missing_ok=True)  # an interruption from here on leaves the mark missing
    known = getattr(env, "attnrank_source_digests", None)
    if known is None:  # a fresh environment reads every page anyway
        return []
    docs = sorted(set(env.found_docs) - set(added) - set(removed))
    if not complete:
        return docs
    return [d for d in docs if d not in changed and known.get(d) != _digest(env.doc2path(d))]


def _record(app, env) -> list[str]:
    """After reading: each page's source digest, kept in the environment for the next build."""
    env.attnrank_source_digests = {d: _digest(env.doc2path(d)) for d in env.found_docs}
    return []


def _mark_complete(app, exception) -> None:
    if exception is None:
        Path(app.outdir).mkdir(parents=True, exist_ok=True)
        (Path(app.outdir) / COMPLETE_MARK).write_text("the last build ended without an error\n")


def setup(app) -> None:
    """Check the twins first at ``builder-inited`` (before training), compare sources by content at
    ``env-get-outdated``, record their digests at ``env-updated`` and mark a complete build at ``build-finished``."""
    app.connect("builder-inited", one_line_errors(_check_twins), priority=100)
    app.connect("env-get-outdated", _outdated)
    app.connect("env-updated", _record)
    app.connect("build-finished", _mark_complete, priority=990)
