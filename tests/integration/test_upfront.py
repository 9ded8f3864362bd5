"""The book build's up-front executor with real kernels and its real process pool: every stale
notebook is executed in a worker and cached by one process, so no worker's cache maintenance can
delete another's notebook (jupyter-cache's ``truncate_caches`` reads the records to keep and to
delete in two queries; with its own parallel executor, a notebook cached between them was deleted,
and one build in 15 to 30 on two cores executed a chapter again while reading it)."""

from __future__ import annotations

import os
import subprocess
import sys

import nbformat
from jupyter_cache import get_cache
from jupyter_cache.cache.db import NbCacheRecord, create_db, session_context
from jupyter_cache.cache.main import JupyterCacheBase
from sqlalchemy import desc

from attnrank.cli import upfront


def test_the_race_this_avoids_is_real(tmp_path):
    """jupyter-cache's ``records_to_delete`` (run by every ``cache_notebook_bundle``), split at its two
    queries: a record another process commits between them is among those to delete."""
    first, second = create_db(tmp_path), create_db(tmp_path)
    NbCacheRecord.create_record(uri="a.ipynb", hashkey="a", db=first)
    with session_context(first) as session:
        keep = [pk for (pk,) in session.query(NbCacheRecord.pk).order_by(desc("accessed")).limit(1000).all()]
        NbCacheRecord.create_record(uri="b.ipynb", hashkey="b", db=second)  # the other worker's notebook
        delete = [pk for (pk,) in session.query(NbCacheRecord.pk).filter(NbCacheRecord.pk.notin_(keep)).all()]
    assert (keep, delete) == ([1], [2])


def test_stale_notebooks_run_in_workers_and_are_cached_by_one_process(tmp_path, monkeypatch, staged_notebooks):
    writers = tmp_path / "writers.txt"
    original = JupyterCacheBase.cache_notebook_bundle

    def recorded(self, *args, **kwargs):  # inherited by forked workers: a worker that caches is recorded
        with open(writers, "a") as f:
            f.write(f"{os.getpid()}\n")
        return original(self, *args, **kwargs)

    monkeypatch.setattr(JupyterCacheBase, "cache_notebook_bundle", recorded)
    pid = "import os\nprint(os.getpid())"
    uris = staged_notebooks(a=pid, b=pid, broken="raise ValueError('its own error')")
    cache = get_cache(str(tmp_path / "cache"))

    assert upfront.execute_and_cache(str(tmp_path / "cache"), uris, 60, False) == [uris[2]]
    assert writers.read_text().split() == [str(os.getpid())] * 2  # one writer: this process, once a notebook
    for uri in uris[:2]:
        executed = cache.merge_match_into_notebook(nbformat.read(uri, as_version=4))[1]
        kernel_pid = int(executed.cells[0].outputs[0]["text"])
        assert kernel_pid != os.getpid()  # executed by a kernel, its output cached
    assert "its own error" in cache.get_project_record(uris[2]).traceback


def test_the_script_runs_without_the_library(tmp_path, staged_notebooks):
    """The build's child runs the module by its file path (``-P``): it must not need ``attnrank``
    importable (nor import torch), and prints the notebooks it leaves as its last line."""
    (uri,) = staged_notebooks(a="x = 1")
    probe = "import runpy, sys; sys.argv = sys.argv[1:]; runpy.run_path(sys.argv[0], run_name='__main__')"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    code = f"import sys; sys.modules['attnrank'] = None; sys.modules['torch'] = None; {probe}"
    out = subprocess.run(
        [sys.executable, "-P", "-c", code, upfront.__file__, str(tmp_path / "cache"), "60", "false", uri],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == "[]"
    # the kernel talks over IPC sockets: no TCP warning per chapter, and no kernel left behind to complain
    assert "without encryption" not in out.stderr and "Parent appears to have exited" not in out.stderr
