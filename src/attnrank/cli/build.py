"""What a book build runs before any chapter executes, called by the Sphinx extension (:mod:`attnrank.sphinxext`):
train every run of the toc's chapters (the grid up front, with a progress bar) and execute the chapters the cache
lacks in parallel into that cache; the build folder's free space checked first, SIGTERM/SIGHUP handled as Ctrl-C, and
a bad setting stopped in one line, as on the command line; and the build's row in the build log.
"""

from __future__ import annotations

import functools
import json
import logging
import os
import shutil
import sys
import time
from pathlib import Path

from ..core.data import data_dir
from ..core.errors import ConfigError, check_choice
from ..core.profiles import resolve_profile
from ..runs import grid
from ..runs.experiments import CHAPTERS, book_runs, check_toc
from ..runs.store import runs_dir
from . import upfront


def toc_chapters(srcdir) -> list[str]:
    """The ``file:`` entries of the book's ``_toc.yml`` (``root`` first)."""
    import yaml

    toc = yaml.safe_load((Path(srcdir) / "_toc.yml").read_text())
    files = [toc["root"]] if toc.get("root") else []

    def walk(node):
        if isinstance(node, dict):
            if "file" in node:
                files.append(node["file"])
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    walk({k: v for k, v in toc.items() if k != "root"})
    return files


def train_book(srcdir, executor: str = "process") -> None:
    """Train every run of the chapters in ``<srcdir>/_toc.yml`` for the resolved profile, with a progress bar.

    ``executor`` is one of :data:`attnrank.runs.grid.EXECUTORS` or ``"off"`` (train nothing); a chapter whose
    papermill parameters ask for other runs trains those itself.

    Raises:
        ConfigError: naming ``ATTNRANK_SWEEP`` (the setting that chooses ``executor``) for another value, or
            ``_toc.yml`` for a notebook chapter unknown to :data:`attnrank.runs.experiments.CHAPTERS`.
    """
    check_choice("ATTNRANK_SWEEP", executor, (*grid.EXECUTORS, "off"))
    names = [c.removeprefix("chapters/") for c in toc_chapters(srcdir)]
    check_toc([f"chapters/{n}" for n in names if (Path(srcdir) / "chapters" / f"{n}.ipynb").exists()])
    if executor == "off":
        return
    profile = resolve_profile("auto")
    configs = book_runs(profile, [n for n in names if n in CHAPTERS])
    grid.sweep(configs, executor=executor, progress=True, desc=f"{profile} runs")


#: What a build writes, in MB: the site (about 26 MB at the default profile) and the execution cache (about
#: 21 MB), with room to spare; a build folder with less free space is refused before anything is written.
BUILD_SPACE_MB = 100


def check_free_space(outdir) -> None:
    """Refuse, in one line, a build whose output folder ``outdir`` has less than :data:`BUILD_SPACE_MB` free.

    Raises:
        ConfigError: naming the build folder.
    """
    folder = Path(outdir).resolve()
    while not folder.exists():
        folder = folder.parent
    free = shutil.disk_usage(folder).free / 2**20
    if free < BUILD_SPACE_MB:
        raise ConfigError(
            "build folder",
            f"{str(Path(outdir).parent)!r} has {free:.0f} MB free and a build writes about {BUILD_SPACE_MB} MB "
            "(the site and the execution cache); free space there or build elsewhere with --path-output",
        )


def execute_stale(srcdir, cache_path: str, *, timeout=None, allow_errors: bool = False, exclude=()) -> list[str]:
    """Execute the toc's notebooks that the jupyter-cache at ``cache_path`` lacks, in parallel, into that cache.

    With ``execute_notebooks: cache``, myst-nb executes each stale notebook while it reads it, one after another.
    After :func:`train_book` every run is in the store, so the chapters no longer depend on each other: this step
    stages the stale ones in the cache and executes them with :mod:`attnrank.cli.upfront` (one process per core,
    one writer of the cache) with the book's ``timeout`` (seconds) and ``allow_errors``; a notebook whose name
    matches a pattern of ``exclude`` is left alone. myst-nb then finds each of them in the cache. A notebook that
    fails here is left to myst-nb, which executes it again and reports its error as usual.

    Returns:
        The paths of the notebooks executed here (empty when nothing was stale).
    """
    import fnmatch

    import nbformat
    from jupyter_cache import get_cache

    cache = get_cache(cache_path)
    stale = []
    for name in toc_chapters(srcdir):
        path = Path(srcdir) / f"{name}.ipynb"
        if not path.is_file() or any(fnmatch.fnmatch(f"{name}.ipynb", p) for p in exclude):
            continue
        try:
            cache.match_cache_notebook(nbformat.read(path, as_version=4))
        except KeyError:
            stale.append(str(path))
    if not stale:
        return []
    log = logging.getLogger("attnrank")
    log.warning(
        "Executing notebooks up front (%d, %d processes): %s",
        len(stale),
        os.cpu_count() or 1,
        ", ".join(Path(p).stem for p in stale),
    )
    for path in stale:
        cache.add_nb_to_project(path)
    failed = _execute_in_child(cache_path, stale, timeout, allow_errors)
    if failed:
        log.warning(
            "Notebooks that failed up front, executed again while read: %s", ", ".join(Path(p).stem for p in failed)
        )
    return stale


def _execute_in_child(cache_path: str, uris: list[str], timeout, allow_errors: bool) -> list[str]:
    """Execute ``uris`` into the cache with :mod:`attnrank.cli.upfront`, in a child process of its own
    session; returns the notebooks it left to myst-nb.

    Ctrl-C in the terminal reaches this process only: it ends the child's whole process group
    (the pool and its kernels) and is raised again, so the build stops at once. (Run in the
    build's own process group, the pool's workers died of the interrupt and the build hung,
    waiting for their results.) Nothing an interrupted execution made is cached.
    """
    import signal
    import subprocess

    # by its file path, -P: the child imports neither the library (torch) nor anything beside the script
    command = [sys.executable, "-P", upfront.__file__, cache_path, json.dumps(timeout), json.dumps(bool(allow_errors))]
    command += uris
    child = subprocess.Popen(command, stdout=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, _ = child.communicate()
    except BaseException:  # KeyboardInterrupt, SystemExit: stop the child and everything it started
        try:
            os.killpg(child.pid, signal.SIGKILL)  # at once and silently: its results are discarded anyway
        except ProcessLookupError:
            pass
        child.wait()
        raise
    lines = out.strip().splitlines()
    if child.returncode != 0 or not lines:
        logging.getLogger("attnrank").warning("Executing up front stopped (exit status %s)", child.returncode)
        return list(uris)
    return json.loads(lines[-1])


def build_log_path() -> Path:
    """CSV of past builds: start, seconds, profile, runs trained, the split of the build's time (the up-front
    sweep's and the up-front chapter execution's wall seconds; the trained runs' wall seconds and, of them, their
    rank probes' and validation's; the trained runs' process CPU seconds and, of them, their probes'), status."""
    return data_dir() / "build_log.csv"


#: Columns of the build log summed over the runs a build trained: ``{column: summary field}``.
_RUN_SUMS = {
    "training_seconds": "wall_seconds",
    "probe_seconds": "probe_seconds",
    "validation_seconds": "validation_seconds",
    "run_cpu_seconds": "cpu_seconds",
    "probe_cpu_seconds": "probe_cpu_seconds",
}


def log_build(start: float, *, sweep_seconds: float, execution_seconds: float, failed: bool) -> None:
    """Append a build's row to :func:`build_log_path` (a log of an older format is set aside as ``.old.csv``).

    ``start`` is the build's start (seconds since the epoch); the runs whose completion marker is newer count as
    trained by it, and their summaries' seconds are summed (:data:`_RUN_SUMS`); ``sweep_seconds`` and
    ``execution_seconds`` are the up-front steps' wall times; ``failed``: the build ended in an error or a missing
    pasted value.
    """
    import csv

    trained = 0
    sums = dict.fromkeys(_RUN_SUMS, 0.0)
    if runs_dir().is_dir():
        for marker in runs_dir().glob("*/COMPLETE"):
            if marker.stat().st_mtime >= start:
                trained += 1
                try:
                    summary = json.loads((marker.parent / "summary.json").read_text())
                    for column, field in _RUN_SUMS.items():
                        sums[column] += float(summary.get(field) or 0)
                except (OSError, ValueError, AttributeError, TypeError, RecursionError):
                    pass
    path = build_log_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    header = [
        "started",
        "seconds",
        "profile",
        "runs_trained",
        "sweep_seconds",
        "execution_seconds",
        *_RUN_SUMS,
        "status",
    ]
    if path.exists() and path.read_text().splitlines()[:1] != [",".join(header)]:
        path.rename(path.with_suffix(".old.csv"))  # an older format
    new = not path.exists()
    with path.open("a", newline="") as f:
        w = csv.writer(f)
        if new:
            w.writerow(header)
        w.writerow(
            [
                time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(start)),
                round(time.time() - start, 1),
                resolve_profile("auto"),
                trained,
                round(sweep_seconds, 1),
                round(execution_seconds, 1),
                *(round(v, 1) for v in sums.values()),
                "error" if failed else "ok",
            ]
        )


def terminate_as_interrupt() -> None:
    """Make SIGTERM (what ``timeout``, ``kill``, systemd and CI runners send) and SIGHUP (the terminal closing)
    stop the build as Ctrl-C does: raised as ``KeyboardInterrupt`` in the main thread, so that the up-front
    executor and the training pool end what they started before the build exits. Each is left alone where
    another handler is set (``nohup`` ignores SIGHUP) or off the main thread; a second signal ends the process
    at once."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        return

    def interrupt(signum, frame):
        signal.signal(signum, signal.SIG_DFL)
        raise KeyboardInterrupt(f"terminated by signal {signum}")

    for signum in (signal.SIGTERM, signal.SIGHUP):
        if signal.getsignal(signum) == signal.SIG_DFL:
            signal.signal(signum, interrupt)


def one_line_errors(step):
    """Run the build step ``step``; a :class:`~attnrank.ConfigError` (a bad ``ATTNRANK_*`` setting)
    stops the build with one line on stderr and exit status 2, as on the command line, instead of
    Sphinx's and jupyter-book's tracebacks."""

    @functools.wraps(step)
    def run(*args, **kwargs):
        try:
            return step(*args, **kwargs)
        except ConfigError as exc:
            print(f"attnrank: error: {' '.join(str(exc).split())}", file=sys.stderr, flush=True)
            raise SystemExit(2) from None

    return run
