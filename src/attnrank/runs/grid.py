"""Train a grid of runs before anything reads it: serially, on a local process pool or on Ray.

:func:`sweep` takes a list of :class:`~attnrank.core.profiles.RunConfig` (for the book:
:func:`attnrank.runs.experiments.book_runs`), skips the runs already stored, trains the others
with one of three executors and returns :func:`attnrank.runs.store.load_runs` restricted to
them, in order. ``attnrank sweep`` and the book's Sphinx extension call it, so the
chapters find every run in the store.

* ``serial``: one run after another in this process;
* ``process``: a local pool of processes (``concurrent.futures``; forked from a forkserver that has
  imported torch and transformers once, or spawned: :func:`pool_start_method`), one run per
  worker at a time; on a GPU machine one worker per visible GPU, each seeing one GPU;
* ``ray``: one Ray task per run (``num_cpus`` = the run's threads, ``num_gpus=1`` when the
  cluster has GPUs), on a local Ray instance (``address="local"``) or a running cluster
  (``address="auto"``, ``ray://...`` or ``$RAY_ADDRESS``).

Every worker trains through :func:`attnrank.runs.store.run`: the store's file lock makes
workers that race for one config train it once, and a run killed while training leaves
no result. Workers get the driver's ``ATTNRANK_*`` and ``HF_*`` variables and check, before
training, that their library code hash equals the driver's (:class:`CodeMismatch`).
A worker process that dies (killed, out of memory) is replaced and its runs are retried.

Results do not depend on the executor: a run's thread count is part of its config
(``threads``, set by training), so ``serial``, ``process`` and ``ray`` give bit-identical
tables on the same machine type.
"""

from __future__ import annotations

import logging
import os
import socket
import sys
import time
from concurrent.futures import as_completed
from pathlib import Path

import pandas as pd

from ..core.errors import ConfigError, SweepFailed, WorkerError, check_choice, portable
from ..core.profiles import RunConfig, profile_defaults
from ..core.train import data_blocks
from . import store

__all__ = [
    "EXECUTORS",
    "CodeMismatch",
    "SweepFailed",
    "sweep",
    "worker_env",
    "default_workers",
    "plan",
    "preflight",
    "ray_address",
]

#: Executors accepted by :func:`sweep`.
EXECUTORS = ("serial", "process", "ray")


class CodeMismatch(RuntimeError):
    """A worker runs other library code (or torch/transformers versions) than the driver."""


def worker_env() -> dict[str, str]:
    """The driver's variables that workers receive: every ``ATTNRANK_*`` and ``HF_*``."""
    return {k: v for k, v in os.environ.items() if k.startswith(("ATTNRANK_", "HF_"))}


def _cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover (macOS)
        return os.cpu_count() or 1


def _gpus() -> list[str]:
    """Visible GPU ids (as ``CUDA_VISIBLE_DEVICES`` entries); empty without CUDA."""
    import torch

    if not torch.cuda.is_available():
        return []
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    ids = [v.strip() for v in visible.split(",") if v.strip()] if visible else []
    return ids[: torch.cuda.device_count()] or [str(i) for i in range(torch.cuda.device_count())]


def default_workers(threads: int = 1) -> int:
    """Workers of the local pool: one per visible GPU, else CPU cores // ``threads`` (at least 1).

    On a busy 2-core machine, 2 single-thread workers trained the ``quick`` grid faster
    than one 2-thread process (docs/performance.md).
    """
    gpus = _gpus()
    return len(gpus) if gpus else max(1, _cpus() // max(1, threads))


def _work(cfg: RunConfig, expected_hash: str | None) -> dict:
    """Train (or find) one run in a worker; checks the worker's code hash first.

    Every exception leaves as itself when it survives pickling, else as a
    :class:`~attnrank.core.errors.WorkerError` (:func:`~attnrank.core.errors.portable`): an error is
    never mistaken for a worker that died.
    """
    try:
        return _work_unchecked(cfg, expected_hash)
    except Exception as exc:
        raise portable(exc) from None


def _work_unchecked(cfg: RunConfig, expected_hash: str | None) -> dict:
    have = store.code_hash()
    if expected_hash is not None and have != expected_hash:
        raise CodeMismatch(
            f"worker {socket.gethostname()} (pid {os.getpid()}) has attnrank code hash {have}, the driver "
            f"{expected_hash}: install the same library and torch/transformers versions on every node"
        )
    t = time.perf_counter()
    r = store.run(cfg)
    return {
        "key": r.key,
        "source": "trained" if r.fresh else "stored",
        "status": r.summary["status"],
        "seconds": time.perf_counter() - t,
        "host": socket.gethostname(),
        "device": r.summary.get("device"),
    }


#: Third-party modules the forkserver imports once, so that each pool worker forked from it starts in
#: milliseconds instead of importing them anew (about 6 s of CPU each on two cores). attnrank itself is not
#: among them: each worker imports the library's current code (checked against the driver's code hash).
FORKSERVER_PRELOAD = (
    "torch",
    "transformers",
    "transformers.masking_utils",
    "transformers.integrations.sdpa_attention",
    "transformers.trainer",
    "transformers.models.bert.modeling_bert",
    "transformers.models.modernbert.modeling_modernbert",
    "transformers.models.gpt2.modeling_gpt2",
    "datasets",
    "tokenizers",
    "pandas",
    "pyarrow",
    "safetensors.torch",
    "filelock",
)
#: Prefixes of the variables torch, its kernels, accelerate and the tokenizers read when they load or
#: run: a worker forked from the forkserver has the forkserver's, so a pool forks only while they equal
#: the driver's (the ``ATTNRANK_*`` and ``HF_*`` variables are passed to every worker in any case).
_LOADED_VARIABLES = (
    "ACCELERATE_",
    "ATEN_",
    "CUBLAS_",
    "CUDA_",
    "DNNL_",
    "KMP_",
    "MKL_",
    "NVIDIA_",
    "OMP_",
    "ONEDNN_",
    "PYTHON",
    "PYTORCH_",
    "TOKENIZERS_",
    "TORCH",
    "TRANSFORMERS_",
    "WORLD_SIZE",
)
_forkserver_env: dict[str, str] | None = None


def _loaded_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k.startswith(_LOADED_VARIABLES)}


def pool_start_method(gpus: list[str]) -> str:
    """How the local pool starts its workers: ``"forkserver"`` (forked from one process that has
    imported :data:`FORKSERVER_PRELOAD`) on a CPU machine where the platform has it and the
    variables of :data:`_LOADED_VARIABLES` are those the forkserver started with; ``"spawn"``
    otherwise (with GPUs: each worker sees one GPU before CUDA loads; a changed variable: the
    worker must load torch under it). Both give bit-identical runs (tests/integration/test_grid.py).
    """
    import multiprocessing

    global _forkserver_env
    if gpus or "forkserver" not in multiprocessing.get_all_start_methods():
        return "spawn"
    if _forkserver_env is None:
        _forkserver_env = _loaded_env()
        ctx = multiprocessing.get_context("forkserver")
        ctx.set_forkserver_preload(list(FORKSERVER_PRELOAD))
        from multiprocessing import forkserver

        forkserver.ensure_running()  # now, with the variables just recorded
    return "forkserver" if _loaded_env() == _forkserver_env else "spawn"


def check_main_guard() -> None:
    """Refuse a process pool started from a script's top level outside ``if __name__ == "__main__":``.

    The pool's workers (forkserver or spawn) import the script again; a script that calls the grid at its top
    level would start the grid again in every worker, which Python stops with hundreds of lines of errors and
    dead workers. Read from the script's syntax tree and the calling frame, before anything starts.

    Raises:
        ConfigError: naming ``executor``, the script and the line of the call.
    """
    import ast
    import inspect

    main = sys.modules.get("__main__")
    path = getattr(main, "__file__", None)
    if not path or not os.path.isfile(path):
        return  # an interpreter, a notebook or ``python -c``: nothing is re-imported
    frame = next((f for f in inspect.stack(0) if f.frame.f_globals is vars(main) and f.function == "<module>"), None)
    if frame is None:
        return  # the call runs inside a function of the script, which the workers' import does not call
    try:
        tree = ast.parse(Path(path).read_text())
    except (OSError, SyntaxError, ValueError):
        return
    guarded = [
        (node.lineno, node.end_lineno)
        for node in tree.body
        if isinstance(node, ast.If) and "__main__" in ast.unparse(node.test) and "__name__" in ast.unparse(node.test)
    ]
    if not any(lo <= frame.lineno <= hi for lo, hi in guarded):
        raise ConfigError(
            "executor",
            f"the script {path} starts a process pool at its top level (line {frame.lineno}) without "
            "'if __name__ == \"__main__\":'; the pool's workers import the script again, so put the call under that "
            "guard (or use executor='serial')",
        )


def quiet_transformers() -> None:
    """Set ``transformers``' log level to errors in this process, whatever ``TRANSFORMERS_VERBOSITY`` says: a run trained
    or loaded prints no notice ("setting up devices", a generation config), which would reach a chapter's page."""
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()


def _init_process_worker(env: dict, threads: int, counter, gpus: list[str]) -> None:
    quiet_transformers()
    os.environ.update(env)
    os.environ.setdefault("OMP_NUM_THREADS", str(threads))
    if gpus:  # one GPU per worker, before CUDA is initialised in it
        with counter.get_lock():
            i = counter.value
            counter.value += 1
        os.environ["CUDA_VISIBLE_DEVICES"] = gpus[i % len(gpus)]


def _settings(c: RunConfig) -> str:
    """The fields of ``c`` other than its sizes' profile's defaults, beside ``arch, tau, heads, seed,
    threads`` (e.g. ``"max_len=128"``, ``"qk_init_scale=10, ..."``), or ``""``."""
    base, shown = profile_defaults(c.profile, c.arch), {"tau", "num_heads", "seed", "threads"}
    return ", ".join(
        f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}"
        for k, v in c.to_dict().items()
        if k in base and k not in shown and v != base[k]
    )


def plan(configs) -> pd.DataFrame:
    """One row per config: ``arch, profile, tau, head_dim, seed, threads, settings`` (the fields that
    differ from its profile's defaults), ``key, stored`` (a complete run exists).

    Raises:
        ConfigError: for something that is not a :class:`RunConfig`, or under ``torchrun``
        (see :func:`attnrank.core.train.run_environment`).
    """
    rows = []
    for i, c in enumerate(configs):
        if not isinstance(c, RunConfig):
            raise ConfigError("configs", f"item {i} is a {type(c).__name__}; expected RunConfig (resolve_config(...))")
        key = store.run_key(c)
        path = store.runs_dir() / f"{c.arch}-{key}"
        stored = path.exists() and store.read(path) is not None
        rows.append(
            {
                "arch": c.arch,
                "profile": c.profile,
                "tau": c.tau,
                "head_dim": c.head_dim,
                "seed": c.seed,
                "threads": c.threads,
                "settings": _settings(c),
                "key": key,
                "stored": stored,
            }
        )
    return pd.DataFrame(
        rows, columns=["arch", "profile", "tau", "head_dim", "seed", "threads", "settings", "key", "stored"]
    )


def preflight(configs) -> None:
    """The checks of a run that need no training, on the driver, before any worker starts.

    The run store can be written (a folder is created and a file written and removed in it),
    and for each distinct data set-up (architecture, dataset, vocabulary, block length, batch
    size) the dataset's text is readable, its tokenizer and token blocks are built (or read
    from the cache) and the corpus gives enough blocks for the run (see
    :func:`attnrank.core.train.data_blocks`). The tokenizers and blocks built here are cached, so
    the workers read them.

    Raises:
        ConfigError: the first failing check, naming ``ATTNRANK_RUNS``, ``ATTNRANK_DATA``,
        ``dataset`` or ``max_len``, as the worker would have.
    """
    configs = list(configs)
    if not configs:
        return
    store.check_writable()
    seen = set()
    for c in configs:
        setup = (c.arch, c.dataset, c.vocab_size, c.max_len, c.batch_size)
        if setup not in seen:
            seen.add(setup)
            data_blocks(c)


def ray_address(address: str | None = None) -> str:
    """The Ray address a ``ray`` sweep connects to, checked before anything starts.

    ``address``, else ``$RAY_ADDRESS``, else ``"local"``. Allowed: ``"local"`` (a private
    instance), ``"auto"`` (the cluster ``ray start`` runs on this machine), ``"HOST:PORT"`` (a
    cluster's head) and ``"ray://HOST:PORT"`` (Ray Client, installed by the ``cluster`` extra).
    For the last two, something must answer at ``HOST:PORT`` within 5 s.

    Raises:
        ConfigError: naming ``address`` (or ``RAY_ADDRESS`` when it came from there) for another
        form, a Ray Client address without Ray Client, or a host and port where nothing answers.
    """
    import importlib.util
    import re

    param = "address" if address else "RAY_ADDRESS"
    address = address or os.environ.get("RAY_ADDRESS") or "local"
    if address in ("local", "auto"):
        return address
    m = re.fullmatch(r"(ray://)?(\[[0-9A-Fa-f:]+\]|[A-Za-z0-9_.-]+):(\d{1,5})", address)
    if m is None:
        raise ConfigError(
            param,
            f"got {address!r}; allowed values: 'local' (a private Ray instance), 'auto' (the cluster `ray start` "
            "runs here), 'HOST:PORT' (a cluster's head) or 'ray://HOST:PORT' (Ray Client)",
        )
    if m.group(1) and importlib.util.find_spec("grpc") is None:
        raise ConfigError(param, f'got {address!r}: Ray Client needs grpcio; pip install -e ".[cluster]"')
    host, port = m.group(2).strip("[]"), int(m.group(3))
    try:
        socket.create_connection((host, port), timeout=5).close()
    except OSError as exc:
        raise ConfigError(
            param,
            f"got {address!r}: nothing answers at {host}:{port} ({exc.strerror or type(exc).__name__}); start the "
            "cluster there (`ray start --head`) or use address 'local'",
        ) from None
    return address


def _label(c: RunConfig) -> str:
    return f"{c.arch} tau={c.tau:g} head_dim={c.head_dim} seed={c.seed}"


def _progress_target():
    """The progress bar class and the stream progress is written to: in a notebook kernel (a chapter run by
    papermill or executed by the build) the kernel's own stderr, which is the terminal that started it, as plain
    text (the page never shows training progress); elsewhere tqdm's choice and ``None`` (the bar on stderr, the
    lines on stdout, as before)."""
    shell = sys.modules["IPython"].get_ipython() if "IPython" in sys.modules else None
    if getattr(shell, "kernel", None) is not None and sys.__stderr__ is not None:
        from tqdm.std import tqdm

        return tqdm, sys.__stderr__
    from tqdm.auto import tqdm

    return tqdm, None


def sweep(
    configs,
    *,
    executor: str = "serial",
    workers: int | None = None,
    address: str | None = None,
    progress: bool = True,
    retries: int = 2,
    code_hash: str | None = None,
    desc: str = "runs",
) -> pd.DataFrame:
    """Train (or find) every config; returns :func:`attnrank.runs.store.load_runs` of them, in order.

    Args:
        configs: resolved :class:`RunConfig` s (duplicates are allowed: the store trains
            a config once).
        executor: ``"serial"``, ``"process"`` or ``"ray"``.
        workers: concurrent runs. ``process``: default :func:`default_workers`; ``ray``
            with ``address="local"``: CPUs of the local instance (default: all); ignored by
            ``serial``.
        address: Ray address (``"local"`` starts a private instance, ``"auto"`` joins the
            cluster started with ``ray start``); default ``$RAY_ADDRESS``, else ``"local"``.
        progress: show a progress bar (runs done / total, ETA), one line per finished run
            with its wall time, and a summary table at the end.
        retries: how often the runs of a worker that died are retried.
        code_hash: the code hash workers must have (default: the driver's
            :func:`attnrank.runs.store.code_hash`).
        desc: label of the progress bar.

    Returns:
        The runs (one row each, see :func:`attnrank.runs.store.load_runs`); ``df.attrs["sweep"]``
        holds ``executor, workers, trained, stored, failed, seconds, runs_per_hour``.

    Raises:
        ConfigError: for an unknown executor, a bad ``workers`` value, ``ray`` not being
            installed, a multi-process launch, or a failing check of :func:`preflight`
            (an unwritable store, an unreadable or too small dataset), before anything is
            trained; a worker's own ``ConfigError`` stops the sweep as itself, on every
            executor (the other workers are stopped).
        CodeMismatch: a worker's code differs from the driver's (before it trains).
        SweepFailed: runs that raised or whose worker died ``retries + 1`` times (after
            every other run has finished; their rows are missing). An exception is not a
            dead worker: a run that raises is reported once, never retried.
    """
    tqdm, terminal = _progress_target()
    check_choice("executor", executor, EXECUTORS)
    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int) or workers < 1):
        raise ConfigError("workers", f"got {workers!r}; expected an integer >= 1")
    if executor == "ray":
        _import_ray()
        address = ray_address(address)
    configs = list(configs)
    table = plan(configs)
    expected = code_hash or store.code_hash()
    todo = [i for i in range(len(configs)) if not table.stored[i]]
    if progress and todo:
        print(
            f"checking the data of {len(todo)} run(s) before training (tokenizers and blocks are cached)",
            flush=True,
            file=terminal,
        )
    preflight([configs[i] for i in todo])
    threads = max((configs[i].threads for i in todo), default=1)
    if executor == "process":
        workers = workers or default_workers(threads)
        if todo:
            check_main_guard()
    elif executor == "serial":
        workers = 1
    if progress and todo:
        _announce(len(configs), len(todo), executor, workers, threads, terminal)
    results: dict[int, dict] = {i: {"source": "stored", "seconds": 0.0} for i in range(len(configs)) if table.stored[i]}
    errors: dict[int, str] = {}
    bar = tqdm(
        total=len(configs),
        initial=len(results),
        desc=desc,
        unit="run",
        disable=not progress or not todo,
        dynamic_ncols=True,
        **({"file": terminal} if terminal else {}),
    )

    def done(i: int, res: dict) -> None:
        results[i] = res
        bar.update(1)
        if progress:
            status = "" if res["status"] == "complete" else f" ({res['status']})"
            bar.write(f"{_label(configs[i])}: {res['source']} in {res['seconds']:.1f} s{status}", file=terminal)

    def failed(i: int, exc: BaseException) -> None:
        errors[i] = str(exc) if isinstance(exc, WorkerError) else f"{type(exc).__name__}: {exc}"
        bar.update(1)
        if progress:
            bar.write(f"{_label(configs[i])}: error {errors[i]}", file=terminal)

    t0 = time.perf_counter()
    try:
        if todo and executor == "serial":
            _run_serial(configs, todo, expected, done, failed)
        elif todo and executor == "process":
            _run_process(configs, todo, workers, threads, expected, retries, done, failed, bar)
        elif todo:
            workers = _run_ray(configs, todo, workers, threads, expected, retries, address, done, failed)
    finally:
        bar.close()
    stats = dict(executor=executor, workers=workers, threads=threads, seconds=time.perf_counter() - t0)
    df = _gather(len(configs), table, results, errors, stats)
    if progress and todo:
        _print_summary(configs, results, errors, df.attrs["sweep"])
    if errors:
        raise SweepFailed(
            f"{len(errors)} of {len(configs)} runs did not finish: "
            + "; ".join(f"{_label(configs[i])}: {e}" for i, e in sorted(errors.items())[:3])
        )
    return df


def _run_serial(configs, todo, expected: str, done, failed) -> None:
    """Train the runs ``todo`` one after the other in this process; a run that raises is reported (``failed``)
    and the sweep goes on, except for a code mismatch, a bad input or Ctrl-C."""
    for i in todo:
        try:
            done(i, _work(configs[i], expected))
        except (CodeMismatch, ConfigError, KeyboardInterrupt):
            raise
        except Exception as exc:  # noqa: BLE001 (reported, the sweep goes on)
            failed(i, exc)


def _announce(n: int, n_todo: int, executor: str, workers: int, threads: int, terminal) -> None:
    """The sweep's plan in one line: runs, stored, to train, and how (executor, workers, threads, devices)."""
    what = {
        "serial": "serial: 1 run at a time",
        "process": f"process pool: {workers} workers",
        "ray": f"ray: 1 task per run, {threads} CPU(s) each",
    }[executor]
    gpus = _gpus() if executor != "ray" else []
    print(
        f"{n} runs, {n - n_todo} stored, {n_todo} to train; {what} x {threads} "
        f"thread(s)" + (f", 1 GPU each ({len(gpus)} visible)" if gpus else f" ({_cpus()} CPU cores here)"),
        flush=True,
        file=terminal,
    )


def _gather(n: int, table, results: dict, errors: dict, stats: dict) -> pd.DataFrame:
    """The swept runs from the store in the configs' order, ``attrs["sweep"]`` the sweep's counts (``stats``:
    executor, workers, threads and seconds, completed here with runs, trained, stored, failed, errors and
    runs per hour), for ``n`` configs planned in ``table``."""
    # a worker's key, where it trained: on a cluster its device type may differ from the driver's
    keys = [results.get(i, {}).get("key") or table.key[i] for i in range(n)]
    df = store.load_runs(keys=set(keys))
    order = {k: i for i, k in enumerate(keys)}
    if len(df):
        df = df.assign(_o=df.key.map(order)).sort_values("_o").drop(columns="_o").reset_index(drop=True)
    trained = sum(1 for r in results.values() if r["source"] == "trained")
    seconds = stats["seconds"]
    df.attrs["sweep"] = {
        "executor": stats["executor"],
        "workers": stats["workers"],
        "threads": stats["threads"],
        "runs": n,
        "trained": trained,
        "stored": n - trained - len(errors),
        "failed": int((df.status != "complete").sum()) if len(df) else 0,
        "errors": len(errors),
        "seconds": seconds,
        "runs_per_hour": trained / seconds * 3600 if trained and seconds > 0 else float("nan"),
    }
    return df


def _print_summary(configs, results, errors, stats) -> None:
    rows = []
    for i, c in enumerate(configs):
        r = results.get(i, {})
        rows.append(
            {
                "arch": c.arch,
                "result": "error" if i in errors else r.get("source", "?"),
                "status": r.get("status", "stored" if r.get("source") == "stored" else "error"),
                "seconds": r.get("seconds", 0.0),
            }
        )
    df = pd.DataFrame(rows)
    summary = df.groupby(["arch", "result", "status"]).seconds.agg(runs="size", total_s="sum", mean_s="mean")
    print(summary.to_string(float_format=lambda x: f"{x:.1f}"))
    rate = stats["runs_per_hour"]
    print(
        f"{stats['runs']} runs: {stats['trained']} trained, {stats['stored']} stored, {stats['failed']} diverged, "
        f"{stats['errors']} errors; {stats['seconds']:.1f} s wall"
        + (f", {rate:.0f} runs/hour" if rate == rate else "")
        + f" ({stats['executor']}, {stats['workers'] or '?'} workers x {stats['threads']} thread(s))",
        flush=True,
    )


def _run_process(configs, todo, workers, threads, expected, retries, done, failed, bar) -> None:
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor
    from concurrent.futures.process import BrokenProcessPool

    gpus = _gpus()
    ctx = multiprocessing.get_context(pool_start_method(gpus))
    counter = ctx.Value("i", 0)
    pending = list(todo)
    for attempt in range(retries + 1):
        pool = ProcessPoolExecutor(
            min(workers, len(pending)),
            mp_context=ctx,
            initializer=_init_process_worker,
            initargs=(worker_env(), threads, counter, gpus),
        )
        futures = {pool.submit(_work, configs[i], expected): i for i in pending}
        broken = []
        try:
            for f in as_completed(futures):
                i = futures[f]
                try:
                    done(i, f.result())
                except BrokenProcessPool:
                    broken.append(i)
                except (CodeMismatch, ConfigError):
                    raise
                except Exception as exc:  # noqa: BLE001
                    failed(i, exc)
        except BaseException:
            _stop(pool)
            raise
        pool.shutdown(wait=True)
        pending = sorted(broken)
        if not pending:
            return
        if attempt < retries:
            bar.write(
                f"a worker process died; retrying {len(pending)} run(s) in a new pool "
                f"(attempt {attempt + 2} of {retries + 1})"
            )
    for i in pending:
        failed(i, RuntimeError(f"its worker process died {retries + 1} times"))


def _stop(pool) -> None:
    """Shut ``pool`` down now: cancel its queued runs and end its workers (a run they were
    training leaves no result; the store's next reader cleans up after it). The workers are read before the shutdown,
    which forgets them."""
    procs = list((getattr(pool, "_processes", None) or {}).values())
    pool.shutdown(wait=False, cancel_futures=True)
    for proc in procs:
        try:
            proc.terminate()
        except (OSError, ValueError, AttributeError):  # already gone
            pass


def _import_ray():
    try:
        import ray
    except ImportError:
        raise ConfigError(
            "executor", "'ray' needs Ray: pip install -e \".[cluster]\"; allowed values without it: 'serial', 'process'"
        ) from None
    return ray


def _run_ray(configs, todo, workers, threads, expected, retries, address, done, failed) -> int | None:
    ray = _import_ray()
    started = not ray.is_initialized()
    # every task carries the driver's variables, also on an instance the caller started (``ray.init()`` before
    # the sweep), whose workers would otherwise keep the variables of that moment or of the cluster
    env = worker_env()
    if os.environ.get("PYTHONPATH"):
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    if started:
        kwargs = {
            "address": address,
            "runtime_env": {"env_vars": env},
            "include_dashboard": False,
            "log_to_driver": False,
            # Ray's INFO and WARNING lines ("Started a local Ray instance", "Token authentication is
            # enabled") are not ours to print; its handler also kept the stderr of the first caller,
            # which fails ("Logging error") once that stream is gone. Its errors still reach stderr.
            "logging_level": logging.ERROR,
        }
        if address == "local":
            kwargs["num_cpus"] = workers or _cpus()
        try:
            ray.init(**kwargs)
        except (ConnectionError, TimeoutError, ValueError, RuntimeError) as exc:
            raise ConfigError(
                "address", f"got {address!r}: Ray could not connect ({' '.join(str(exc).split())})"
            ) from None
    try:
        gpu = ray.cluster_resources().get("GPU", 0) > 0
        task = ray.remote(_work).options(
            num_cpus=threads,
            num_gpus=1 if gpu else 0,
            max_retries=retries,
            retry_exceptions=False,
            runtime_env={"env_vars": env},
        )
        refs = {task.remote(configs[i], expected): i for i in todo}
        remaining = list(refs)
        while remaining:
            ready, remaining = ray.wait(remaining, num_returns=1)
            i = refs[ready[0]]
            try:
                done(i, ray.get(ready[0]))
            except Exception as exc:  # noqa: BLE001
                cause = getattr(exc, "cause", None) or exc
                if isinstance(cause, (CodeMismatch, ConfigError)):
                    for r in remaining:
                        ray.cancel(r, force=True)
                    raise cause from None
                failed(i, cause)
        return int(ray.cluster_resources().get("CPU", 0)) // max(1, threads)
    finally:
        if started:
            ray.shutdown()
