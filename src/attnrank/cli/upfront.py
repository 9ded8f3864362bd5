"""Execute staged notebooks in parallel into a jupyter-cache, caching them from one process.

Run by the book build (:func:`attnrank.cli.build._execute_in_child`) as a script, by its file
path, so that the child imports jupyter-cache and nbformat but neither the library nor torch::

    python src/attnrank/cli/upfront.py CACHE TIMEOUT ALLOW_ERRORS URI...

It prints, as its last line, the JSON list of the notebooks it leaves to myst-nb (which executes
them again while it reads them and reports their errors as usual).

Why not jupyter-cache's own ``local-parallel`` executor: each of its workers caches its notebook
itself, and ``JupyterCacheBase.cache_notebook_bundle`` ends with ``truncate_caches``, which reads
the records to keep and the records to delete in two queries. A record another worker commits
between them is deleted with its files, so one notebook in 15 to 30 builds on two cores was
silently executed a second time while read. Here the pool's workers only execute
(``jupyter_cache.executors.utils.single_nb_execution``, as jupyter-cache's workers do); this
process caches their results one after another, then checks that every notebook is matched.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import tempfile
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import nbformat
from jupyter_cache import get_cache
from jupyter_cache.base import CacheBundleIn
from jupyter_cache.cache.db import NbProjectRecord
from jupyter_cache.executors.utils import single_nb_execution

log = logging.getLogger("attnrank")  # warnings reach stderr, as in the build's own process


def execute_one(uri: str, notebook: str, timeout: int | None, allow_errors: bool) -> tuple[str, float, str | None]:
    """Execute one notebook (its JSON text) in its own folder, as jupyter-cache's local executors do.

    Returns:
        ``(executed notebook as JSON text, seconds, traceback or None)``; a traceback means the
        notebook raised (its own error).
    """
    from jupyter_client.manager import KernelManager

    nb = nbformat.reads(notebook, as_version=4)
    with tempfile.TemporaryDirectory(prefix="attnrank-kernel-") as sockets:
        # IPC sockets in a folder of its own: no TCP port, so the kernel has nothing to warn about, and no two
        # kernels share a socket name
        km = KernelManager(
            transport="ipc",
            ip=os.path.join(sockets, "kernel"),
            kernel_name=nb.metadata.get("kernelspec", {}).get("name", "python3"),
        )
        try:
            result = single_nb_execution(
                nb, cwd=str(Path(uri).parent), timeout=timeout, allow_errors=allow_errors, km=km
            )
        finally:  # a kernel manager handed to nbclient is the caller's to shut down
            if km.has_kernel:
                km.shutdown_kernel(now=True)
    if result.err is not None:
        return "", result.time, result.exc_string or repr(result.err)
    return nbformat.writes(nb), result.time, None


def execute_and_cache(cache_path: str, uris: list[str], timeout: int | None, allow_errors: bool) -> list[str]:
    """Execute the staged notebooks ``uris`` that ``cache_path`` lacks, one process each (at most
    one per core), and cache each one from this process.

    A notebook that could not be executed at all (a kernel that did not start, a worker that
    died) is executed once more, alone, here. Returns the notebooks that are not in the cache
    afterwards: those that raised (their traceback is set on their project record) and those
    that failed twice.
    """
    cache = get_cache(cache_path)
    records = cache.list_unexecuted(filter_uris=uris)
    NbProjectRecord.remove_tracebacks([r.pk for r in records], cache.db)
    jobs = {r.uri: nbformat.writes(cache.get_project_notebook(r.uri).nb) for r in records}
    results: dict[str, tuple[str, float, str | None]] = {}  # the notebooks a worker executed
    errored: list[str] = []  # those it could not execute (not the notebook's own error)
    if jobs:
        with ProcessPoolExecutor(max_workers=min(len(jobs), os.cpu_count() or 1)) as pool:
            futures = {uri: pool.submit(execute_one, uri, text, timeout, allow_errors) for uri, text in jobs.items()}
            for uri, future in futures.items():
                try:
                    results[uri] = future.result()
                except Exception:
                    errored.append(uri)
    if errored:
        log.warning("Executing again, one at a time: %s", ", ".join(Path(p).stem for p in errored))
        for uri in errored:
            try:
                results[uri] = execute_one(uri, jobs[uri], timeout, allow_errors)
            except Exception as error:
                log.warning("Could not execute %s: %s", Path(uri).stem, error)
    for uri, (executed, seconds, traceback) in results.items():
        if traceback is not None:
            NbProjectRecord.set_traceback(uri, traceback, cache.db)
            continue
        bundle = CacheBundleIn(nbformat.reads(executed, as_version=4), uri, data={"execution_seconds": seconds})
        cache.cache_notebook_bundle(bundle, check_validity=False, overwrite=True)
    left = []
    for uri in uris:
        try:
            cache.match_cache_notebook(nbformat.read(uri, as_version=4))
        except KeyError:
            left.append(uri)
    return left


def main(argv: list[str]) -> int:
    """``upfront.py CACHE TIMEOUT ALLOW_ERRORS URI...``: prints the notebooks left to myst-nb as JSON."""
    cache_path, timeout, allow_errors, *uris = argv
    left = execute_and_cache(cache_path, uris, json.loads(timeout), json.loads(allow_errors))
    print(json.dumps(left), flush=True)
    return 0


if __name__ == "__main__":  # pragma: no cover (the child of attnrank.cli.build._execute_in_child)
    sys.exit(main(sys.argv[1:]))
