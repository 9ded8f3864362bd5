"""The run store: train a configuration once, reuse its results everywhere.

:func:`run` returns the results of a run, training it only when no complete result is
stored. A run is keyed by a hash of its fully resolved :class:`~attnrank.profiles.RunConfig`
(thread count included), of the library source that determines results, of the
``torch``/``transformers`` versions and of the environment (device type, precision,
world size), so a code change never serves a stale result.

Layout of ``data/runs/<arch>-<key>/``: ``config.json``, ``train_log.csv``, ``eval_log.csv``,
``ranks.parquet``, ``rank_summary.csv``, ``summary.json``, ``model.safetensors`` and the
completion marker ``COMPLETE`` (a JSON manifest with the SHA-256 of every file). A run is
written to a temporary folder and renamed into place only when complete; a folder
without a valid marker is never read as a result. A file lock keeps two processes from
training the same run at once. Nothing is pickled.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
from filelock import FileLock

from .data import data_dir
from .profiles import RunConfig, resolve_config

__all__ = ["Run", "code_hash", "run_key", "run", "load_runs", "load_table", "sweep", "runs_dir"]

log = logging.getLogger(__name__)

#: Library files whose content determines a run's results (their hash is part of the key).
RESULT_SOURCES = ("attention.py", "models.py", "data.py", "probe.py", "rank.py", "train.py", "profiles.py")
_TABLES = {"train_log": "train_log.csv", "eval_log": "eval_log.csv", "ranks": "ranks.parquet", "rank_summary": "rank_summary.csv"}


def runs_dir() -> Path:
    """Folder of the run store: ``$ATTNRANK_RUNS`` if set, else ``data/runs``."""
    env = os.environ.get("ATTNRANK_RUNS")
    return Path(env) if env else data_dir() / "runs"


def code_hash() -> str:
    """SHA-256 (16 hex digits) of the result-determining sources and library versions."""
    import torch
    import transformers

    h = hashlib.sha256()
    here = Path(__file__).parent
    for name in RESULT_SOURCES:
        h.update(name.encode())
        h.update((here / name).read_bytes())
    h.update(f"torch={torch.__version__};transformers={transformers.__version__}".encode())
    return h.hexdigest()[:16]


def run_key(cfg: RunConfig) -> str:
    """Key of a run (16 hex digits): hash of the resolved config (thread count included),
    :func:`code_hash` and the environment (device type, precision, world size:
    :func:`attnrank.train.run_environment`).

    Raises:
        ConfigError: naming ``WORLD_SIZE`` under a multi-process launch (``torchrun``),
        before any lock is taken.
    """
    from .train import run_environment

    payload = json.dumps(cfg.to_dict(), sort_keys=True) + code_hash() + json.dumps(run_environment(), sort_keys=True)
    return hashlib.sha256(payload.encode()).hexdigest()[:16]


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@dataclass
class Run:
    """A stored run: its folder, config, summary and (lazily read) tables."""

    path: Path
    config: dict
    summary: dict
    #: True when this call trained the run, False when it was read from the store.
    fresh: bool = False

    @property
    def key(self) -> str:
        return self.path.name.split("-", 1)[1]

    def table(self, name: str) -> pd.DataFrame:
        """One of ``train_log``, ``eval_log``, ``ranks``, ``rank_summary``."""
        file = self.path / _TABLES[name]
        return pd.read_parquet(file) if file.suffix == ".parquet" else pd.read_csv(file)

    train_log = property(lambda self: self.table("train_log"))
    eval_log = property(lambda self: self.table("eval_log"))
    ranks = property(lambda self: self.table("ranks"))
    rank_summary = property(lambda self: self.table("rank_summary"))

    def load_model(self):
        """The trained model (weights read with ``safetensors``, never pickle), in eval mode."""
        from safetensors.torch import load_file

        from .models import build_model

        c = self.config
        model = build_model(
            c["arch"], hidden_size=c["hidden_size"], num_layers=c["num_layers"], num_heads=c["num_heads"],
            tau=c["tau"], max_len=c["max_len"], vocab_size=self.summary["vocab_size"], dropout=c["dropout"],
            seed=c["seed"], pad_token_id=self.summary["pad_token_id"],
        )
        state = load_file(str(self.path / "model.safetensors"))
        model.load_state_dict(state, strict=False)  # tied output embeddings are stored once
        return model.eval()


def _read(path: Path) -> Run | None:
    """Read a complete run, or None if it is missing, incomplete or fails its checksums."""
    marker = path / "COMPLETE"
    if not marker.exists():
        return None
    try:
        manifest = json.loads(marker.read_text())
        for name, digest in manifest["files"].items():
            if _sha256(path / name) != digest:
                raise ValueError(f"checksum mismatch in {name}")
        return Run(path, json.loads((path / "config.json").read_text()), json.loads((path / "summary.json").read_text()))
    except (OSError, ValueError, KeyError, json.JSONDecodeError) as exc:
        log.warning("run %s is damaged (%s); it will be trained again", path, exc)
        return None


def _write(tmp: Path, cfg: RunConfig, result, key: str) -> None:
    from safetensors.torch import save_model

    tmp.mkdir(parents=True)
    (tmp / "config.json").write_text(json.dumps({**cfg.to_dict(), "head_dim": cfg.head_dim}, indent=2, sort_keys=True))
    result.train_log.to_csv(tmp / "train_log.csv", index=False)
    result.eval_log.to_csv(tmp / "eval_log.csv", index=False)
    result.ranks.to_parquet(tmp / "ranks.parquet", index=False)
    result.rank_summary.to_csv(tmp / "rank_summary.csv", index=False)
    summary = {**result.summary, "key": key, "code_hash": code_hash(), "finished_at": time.strftime("%Y-%m-%dT%H:%M:%S")}
    if result.model is not None:
        save_model(result.model, str(tmp / "model.safetensors"))
        summary["vocab_size"] = result.model.config.vocab_size
        summary["pad_token_id"] = result.model.config.pad_token_id
    (tmp / "summary.json").write_text(json.dumps(summary, indent=2, sort_keys=True))
    files = {p.name: _sha256(p) for p in sorted(tmp.iterdir())}
    (tmp / "COMPLETE").write_text(json.dumps({"key": key, "files": files}, indent=2))


def run(config: RunConfig | None = None, *, force: bool = False, progress: bool = False, **kwargs) -> Run:
    """Results of a run, training it only when no complete, intact result is stored.

    Args:
        config: a resolved :class:`RunConfig`, or None to resolve ``kwargs`` with
            :func:`~attnrank.profiles.resolve_config` (``arch=...``, ``profile=...``, overrides).
        force: train again even if a stored result exists (it is replaced when complete).
        progress: show the Trainer's progress bar.

    Raises:
        ConfigError: for invalid settings, before anything is trained.
    """
    cfg = config if config is not None else resolve_config(**kwargs)
    key = run_key(cfg)
    final = runs_dir() / f"{cfg.arch}-{key}"
    final.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(runs_dir() / f".{key}.lock")):
        if not force:
            stored = _read(final)
            if stored is not None:
                return stored
        from .train import train

        for stale in runs_dir().glob(f".tmp-{key}-*"):  # left by a process killed while writing
            shutil.rmtree(stale, ignore_errors=True)
        result = train(cfg, progress=progress)
        tmp = runs_dir() / f".tmp-{key}-{os.getpid()}"
        _write(tmp, cfg, result, key)
        if final.exists():
            shutil.rmtree(final)
        os.replace(tmp, final)
        stored = _read(final)
    stored.fresh = True
    return stored


def load_runs(filter: dict | None = None, *, keys=None, current_code: bool = True) -> pd.DataFrame:
    """One row per stored, complete run: config columns, summary columns and ``key``, ``path``.

    Args:
        filter: ``{column: value or list of values}`` to keep.
        keys: keep only these run keys.
        current_code: keep only runs made by the current library code (default).
    """
    rows = []
    current = code_hash()
    root = runs_dir()
    for path in sorted(root.glob("*-*")) if root.exists() else []:
        if keys is not None and path.name.split("-", 1)[1] not in keys:
            continue  # skip before reading (and checksumming) a run that was not asked for
        r = _read(path)
        if r is None or (current_code and r.summary.get("code_hash") != current):
            continue
        s = r.summary
        row = {**r.config, "key": r.key, "path": str(path), "status": s["status"],
               "failure_step": (s.get("failure") or {}).get("step"), "failure_reason": (s.get("failure") or {}).get("reason"),
               "initial_val_loss": s["initial_val_loss"], "final_val_loss": s["final_val_loss"],
               "wall_seconds": s["wall_seconds"], "device": s["device"], "steps": s["steps"]}
        row.update({f"initial_{k}": v for k, v in s["initial_rank"].items()})
        row.update({f"final_{k}": v for k, v in s["final_rank"].items()})
        rows.append(row)
    df = pd.DataFrame(rows)
    for col, val in (filter or {}).items():
        df = df[df[col].isin(val if isinstance(val, (list, tuple, set)) else [val])]
    return df.reset_index(drop=True)


def sweep(configs: list[RunConfig], *, progress: bool = True, desc: str = "runs") -> pd.DataFrame:
    """Run (or load) every config; returns :func:`load_runs` restricted to them, in order.

    A failed (diverged) run is kept with ``status == "failed"``; the sweep goes on.
    """
    from tqdm.auto import tqdm

    keys = []
    for cfg in tqdm(configs, desc=desc, disable=not progress):
        keys.append(run(cfg).key)
    df = load_runs(keys=set(keys))
    order = {k: i for i, k in enumerate(keys)}
    return df.assign(_o=df.key.map(order)).sort_values("_o").drop(columns="_o").reset_index(drop=True)


#: Config columns copied onto every row by :func:`load_table`.
ID_COLUMNS = ("key", "arch", "profile", "tau", "head_dim", "num_heads", "hidden_size", "seed", "status")


def load_table(runs: pd.DataFrame, name: str) -> pd.DataFrame:
    """Concatenate one table (``train_log``, ``eval_log``, ``ranks``, ``rank_summary``) over ``runs``.

    ``runs`` is a :func:`load_runs` / :func:`sweep` frame; each row of the result carries
    the run's :data:`ID_COLUMNS`.
    """
    if name not in _TABLES:
        from .errors import ConfigError

        raise ConfigError("name", f"got {name!r}; allowed values: {', '.join(_TABLES)}")
    frames = []
    for _, r in runs.iterrows():
        t = Run(Path(r["path"]), {}, {}).table(name)
        for col in ID_COLUMNS:
            t[col] = r[col]
        frames.append(t)
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
