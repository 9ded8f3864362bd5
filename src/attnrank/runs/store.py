"""The run store: train a configuration once, reuse its results everywhere.

:func:`run` returns the results of a run, training it only when no complete result is
stored. A run is keyed by a hash of its fully resolved :class:`~attnrank.core.profiles.RunConfig`
(thread count included), of the library source that determines results
(:func:`attnrank.runs.provenance.code_hash`), of the
``torch``/``transformers`` versions and of the environment (device type, precision,
world size), so a code change never serves a stale result.

Layout of ``data/runs/<arch>-<key>/``: ``config.json``, ``train_log.csv``, ``eval_log.csv``,
``ranks.parquet``, ``rank_summary.csv``, ``sequences.parquet`` (per-sequence probe values),
``summary.json`` (with the git commit and whether the tree was dirty, ``None`` outside a
checkout), ``model.safetensors``, ``attention.safetensors`` (the attention probabilities of a
few probe sequences at a few probe steps: :meth:`Run.attention`) and the
completion marker ``COMPLETE`` (a JSON manifest with the run's key and the SHA-256 of
every file). Only a folder named ``<arch>-<16 hex digits>`` whose marker names the same
key and lists :data:`REQUIRED_FILES` and every file the summary names (``summary["files"]``),
whose files match their checksums and whose manifest, config and summary have the
expected shape (:data:`MANIFEST_SCHEMA`, :data:`CONFIG_SCHEMA`, :data:`SUMMARY_SCHEMA`, and
:data:`SEQUENCES_SCHEMA` for the columns of ``sequences.parquet``) is a result; anything else is ignored with a warning and trained again.

A run is written to a temporary folder ``.tmp-<key>-<pid>`` and renamed into place only
when complete. Replacing a stored run (``force=True``, or a damaged one) first renames the
old folder to ``.old-<arch>-<key>``, then renames the new one into place, then deletes the
old one: a process killed at any point leaves the old or the new result, and the next
reader serves whichever is there (an interrupted replacement is undone under the lock).
Reading a complete run takes no lock, so a read-only store serves what it holds; a file
lock keeps two processes from training the same run at once; a process waiting for it says
who holds it (pid, host, since when, stopped or not) and keeps saying it. A run that cannot be
written (a full disk) leaves no temporary folder and stops with one line naming
``ATTNRANK_RUNS``. Weights whose tensors do not match the model the run's config builds (only
the tied output embeddings may be missing) raise :class:`~attnrank.core.errors.RunDamaged`.
Nothing is pickled.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import logging
import os
import re
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import torch
from filelock import FileLock

from ..core import train
from ..core.data import acquire, bounded_path, data_dir, dataset_fingerprint, file_sha256
from ..core.errors import ConfigError, RunDamaged
from ..core.measures import MEASURES
from ..core.models import model_from_config
from ..core.profiles import ALL_ARCHS, RunConfig, resolve_config
from . import provenance

__all__ = [
    "Run",
    "Attention",
    "ATTENTION_FILE",
    "code_hash",
    "run_key",
    "run",
    "read",
    "load_runs",
    "load_table",
    "runs_dir",
]

log = logging.getLogger(__name__)

_TABLES = {
    "train_log": "train_log.csv",
    "eval_log": "eval_log.csv",
    "ranks": "ranks.parquet",
    "rank_summary": "rank_summary.csv",
    "sequences": "sequences.parquet",
}
#: Name of a result folder: ``<arch>-<key>``.
RESULT_NAME = re.compile(rf"(?:{'|'.join(ALL_ARCHS)})-([0-9a-f]{{16}})")
#: Prefix of a result moved out of the way while its replacement is renamed into place.
ASIDE = ".old-"

#: The files every complete run lists in its marker (and that must match their checksums); the
#: summary also names every file written with it (``summary["files"]``: the weights, the
#: per-sequence table...), and a marker that leaves out any of them makes the run damaged,
#: whatever the folder holds.
REQUIRED_FILES = ("config.json", "summary.json", "train_log.csv", "eval_log.csv", "ranks.parquet", "rank_summary.csv")

_NUMBER = {"type": "number"}
_INTEGER = {"type": "integer"}
#: Shape of the completion marker ``COMPLETE``.
MANIFEST_SCHEMA = {
    "type": "object",
    "required": ["key", "files"],
    "properties": {
        "key": {"type": "string", "pattern": "^[0-9a-f]{16}$"},
        "files": {
            "type": "object",
            "required": list(REQUIRED_FILES),
            "propertyNames": {"pattern": "^[A-Za-z0-9_][A-Za-z0-9_.-]*$"},  # plain names inside the folder
            "additionalProperties": {"type": "string", "pattern": "^[0-9a-f]{64}$"},
        },
    },
}
#: Shape of ``config.json`` (the fields that readers of the store use; more may be present).
CONFIG_SCHEMA = {
    "type": "object",
    "required": [
        "arch",
        "profile",
        "tau",
        "hidden_size",
        "num_layers",
        "num_heads",
        "head_dim",
        "max_len",
        "dropout",
        "seed",
    ],
    "properties": {
        "arch": {"enum": list(ALL_ARCHS)},
        "profile": {"type": "string"},
        "tau": _NUMBER,
        "dropout": _NUMBER,
        **{k: _INTEGER for k in ("hidden_size", "num_layers", "num_heads", "head_dim", "max_len", "seed")},
    },
}
#: Shape of ``summary.json`` (the fields that readers of the store use; more may be present).
SUMMARY_SCHEMA = {
    "type": "object",
    "required": [
        "status",
        "failure",
        "steps",
        "initial_val_loss",
        "final_val_loss",
        "initial_rank",
        "final_rank",
        "wall_seconds",
        "probe_seconds",
        "device",
        "code_hash",
        "files",
    ],
    "properties": {
        "status": {"enum": ["complete", "failed"]},
        "failure": {
            "anyOf": [
                {"type": "null"},
                {
                    "type": "object",
                    "required": ["step", "reason"],
                    "properties": {"step": _INTEGER, "reason": {"type": "string"}},
                },
            ]
        },
        "steps": _INTEGER,
        "initial_val_loss": _NUMBER,
        "final_val_loss": {"type": ["number", "null"]},  # null: a failed run has none
        "wall_seconds": _NUMBER,
        "probe_seconds": _NUMBER,
        "validation_seconds": _NUMBER,
        "initial_rank": {"type": "object", "additionalProperties": _NUMBER},
        "final_rank": {"type": "object", "additionalProperties": {"type": ["number", "null"]}},
        "device": {"type": "string"},
        "code_hash": {"type": "string"},
        "vocab_size": _INTEGER,
        "pad_token_id": _INTEGER,
        "files": {"type": "array", "items": {"type": "string"}},
        "git_commit": {"type": ["string", "null"]},
        "git_dirty": {"type": ["boolean", "null"]},
    },
}

#: File of the kept attention probabilities in a run folder (safetensors; see :class:`Attention`).
ATTENTION_FILE = "attention.safetensors"

_INTEGERS = {"enum": ["int16", "int32", "int64"]}
#: Shape of ``sequences.parquet``, written as ``{column: Arrow type}`` (read from the file's
#: footer): ``step`` and ``sequence`` integers, ``split`` a string (``"val"``: the held-out
#: probe sequences; ``"train"``: the fixed training blocks), and one float32 column per rank
#: measure of :data:`attnrank.core.rank.MEASURES`, at least one, nothing else.
SEQUENCES_SCHEMA = {
    "type": "object",
    "required": ["step", "split", "sequence"],
    "minProperties": 4,
    "properties": {"step": _INTEGERS, "sequence": _INTEGERS, "split": {"enum": ["string", "large_string"]}},
    "propertyNames": {"enum": ["step", "split", "sequence", *MEASURES]},
    "additionalProperties": {"const": "float"},
}


def runs_dir() -> Path:
    """Folder of the run store: ``$ATTNRANK_RUNS`` if set, else ``data/runs``.

    Raises:
        ConfigError: naming ``ATTNRANK_RUNS`` (``ATTNRANK_DATA`` when the store is its ``runs`` folder) when the path exists but is not a folder
        (or cannot be examined).
    """
    env = os.environ.get("ATTNRANK_RUNS")
    root = bounded_path("ATTNRANK_RUNS", env) if env else data_dir(write=False) / "runs"  # reading needs no write
    try:
        usable = not root.exists() or root.is_dir()
    except OSError as exc:
        raise _store_error(root, exc) from None
    if not usable:
        name = _store_setting()
        raise ConfigError(name, f"the run store {root} is not a folder; set {name} to a folder")
    return root


def check_writable() -> Path:
    """The run store's folder, created, after writing and removing a file in it.

    Raises:
        ConfigError: naming ``ATTNRANK_RUNS`` (``ATTNRANK_DATA`` when the store is its ``runs`` folder) when the folder cannot be created or written
        (read-only media, no space left, a data folder that cannot be written).
    """
    import tempfile

    root = runs_dir()
    try:
        root.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(prefix=".write-check-", dir=root)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise _store_error(root, exc, "train runs in") from None
    return root


def _store_setting() -> str:
    """The setting that placed the run store: ``ATTNRANK_RUNS`` when it is set, else ``ATTNRANK_DATA``
    (the store is its ``runs`` folder), so an error names the variable the user can change."""
    return "ATTNRANK_RUNS" if os.environ.get("ATTNRANK_RUNS") else "ATTNRANK_DATA"


def _store_error(root: Path, exc: OSError, doing: str = "use") -> ConfigError:
    reason = exc.strerror or type(exc).__name__
    wanted = "a readable folder" if doing == "read" else "a writable folder"
    name = _store_setting()
    return ConfigError(name, f"cannot {doing} the run store {root} ({reason}); set {name} to {wanted}")


def code_hash() -> str:
    """:func:`attnrank.runs.provenance.code_hash` of :data:`~attnrank.runs.provenance.RUN_ROOTS`: the import
    closure of the training path, and the torch/transformers versions (16 hex digits)."""
    return provenance.code_hash(provenance.RUN_ROOTS)


def run_key(cfg: RunConfig) -> str:
    """Key of a run (16 hex digits): hash of the resolved config (thread count included),
    :func:`code_hash`, the dataset's content (:func:`attnrank.core.data.dataset_fingerprint`) and
    the environment (device type, precision, world size: :func:`attnrank.core.train.run_environment`).

    Raises:
        ConfigError: naming ``WORLD_SIZE`` under a multi-process launch (``torchrun``),
        before any lock is taken.
    """
    payload = (
        json.dumps(cfg.to_dict(), sort_keys=True)
        + code_hash()
        + dataset_fingerprint(cfg.dataset)
        + json.dumps(train.run_environment(), sort_keys=True)
    )
    return hashlib.sha256(payload.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class Attention:
    """The attention probabilities a run kept of its first probe sequences, at a few probe steps.

    Attributes:
        steps: int64 ``[T]``, the probe steps, increasing (step 0 is the initialisation).
        probabilities: float32 ``[T, layers, S, heads, n, n]``: row ``i`` of a matrix is the
            attention of query token ``i`` over the key tokens (rows sum to one), exactly the
            matrices the rank probe measured at that step (eval mode, float32, no autocast).
        input_ids: int64 ``[S, n]``, the token ids of the ``S`` probe sequences (the first
            ``S`` of the run's probe batch, :meth:`Run.probe_batch`).
        tokens: ``S`` lists of ``n`` strings, the text of each token.
    """

    steps: torch.Tensor
    probabilities: torch.Tensor
    input_ids: torch.Tensor
    tokens: list

    def at(self, step: int) -> torch.Tensor:
        """The probabilities ``[layers, S, heads, n, n]`` at probe ``step``.

        Raises:
            ConfigError: naming ``step`` when the run kept no attention at that step (lists the steps).
        """
        hits = (self.steps == int(step)).nonzero().flatten()
        if not len(hits):
            raise ConfigError("step", f"got {step!r}; the run kept attention at steps {self.steps.tolist()}")
        return self.probabilities[int(hits[0])]


def save_attention(attention: dict, path: Path) -> None:
    """Write a run's kept attention (``steps``, ``probabilities``, ``input_ids``, ``tokens``) with safetensors.

    The tensors are stored as they are (int64, float32); the token strings as JSON, the only
    entry of the file's metadata (safetensors writes several entries in an order that changes
    from one save to the next), so equal inputs give the same bytes.
    """
    tensors = {k: attention[k].contiguous() for k in ("steps", "probabilities", "input_ids")}
    _save_safetensors(tensors, path, {"tokens": json.dumps(attention["tokens"])})


def _save_safetensors(tensors: dict, path: Path, metadata: dict) -> None:
    """``safetensors.torch.save_file``, except that an I/O failure (a full disk) is an ``OSError``:
    the bytes are made in memory, then written by Python (safetensors raises its own error type)."""
    from safetensors.torch import save

    Path(path).write_bytes(save(tensors, metadata=metadata))


def _check_attention(path: Path, config: dict) -> None:
    """Raise ValueError unless ``path`` holds the tensors of :class:`Attention` with the shapes of ``config``.

    Reads only the file's header.
    """
    from safetensors import safe_open

    try:
        with safe_open(str(path), framework="pt") as f:
            shapes = {k: tuple(f.get_slice(k).get_shape()) for k in f.keys()}
            dtypes = {k: f.get_slice(k).get_dtype() for k in f.keys()}
            tokens = json.loads((f.metadata() or {}).get("tokens", "null"))
    except Exception as exc:  # safetensors raises its own errors on a damaged header
        raise ValueError(f"{path.name} is not a readable safetensors file ({exc})") from None
    expected = {"steps": "I64", "probabilities": "F32", "input_ids": "I64"}
    if dtypes != expected:
        raise ValueError(f"{path.name} holds {dtypes}; expected {expected}")
    (t,), (s, n) = shapes["steps"], shapes["input_ids"]
    want = (t, config["num_layers"], s, config["num_heads"], config["max_len"], config["max_len"])
    if shapes["probabilities"] != want or n != config["max_len"]:
        raise ValueError(f"{path.name} has probabilities {shapes['probabilities']}, expected {want}")
    if not (isinstance(tokens, list) and len(tokens) == s and all(isinstance(r, list) and len(r) == n for r in tokens)):
        raise ValueError(f"{path.name} has no token strings of shape [{s}, {n}]")


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
        return self.path.name.rsplit("-", 1)[1]

    def table(self, name: str) -> pd.DataFrame:
        """One of ``train_log``, ``eval_log``, ``ranks``, ``rank_summary``, ``sequences``.

        ``sequences`` has one row per probe step, split (``"val"``, ``"train"``) and sequence,
        and one float32 column per rank measure (the sequence's value averaged over layers
        and heads); see :class:`attnrank.core.probe.RankProbe`.

        Raises:
            ConfigError: naming ``name`` for another name, or for ``sequences`` of a run stored
            without it.
        """
        if name not in _TABLES:
            raise ConfigError("name", f"got {name!r}; allowed values: {', '.join(_TABLES)}")
        file = self.path / _TABLES[name]
        if not file.exists() and name == "sequences":
            raise ConfigError("name", f"run {self.path.name} has no per-sequence table (stored by older code)")
        return pd.read_parquet(file) if file.suffix == ".parquet" else pd.read_csv(file)

    train_log = property(lambda self: self.table("train_log"))
    eval_log = property(lambda self: self.table("eval_log"))
    ranks = property(lambda self: self.table("ranks"))
    rank_summary = property(lambda self: self.table("rank_summary"))
    sequences = property(lambda self: self.table("sequences"))

    def attention(self) -> Attention:
        """The attention probabilities the run kept (:class:`Attention`), read with safetensors.

        Raises:
            ConfigError: naming ``attention`` for a run stored without them (older code).
        """
        from safetensors import safe_open

        file = self.path / ATTENTION_FILE
        if not file.exists():
            raise ConfigError(
                "attention", f"run {self.path.name} kept no attention probabilities (stored by older code)"
            )
        with safe_open(str(file), framework="pt") as f:
            tensors = {k: f.get_tensor(k) for k in f.keys()}
            tokens = json.loads(f.metadata()["tokens"])
        return Attention(tensors["steps"], tensors["probabilities"], tensors["input_ids"], tokens)

    @property
    def run_config(self) -> RunConfig:
        """The run's :class:`~attnrank.core.profiles.RunConfig`, rebuilt (and checked) from ``config.json``."""
        return RunConfig(**{k: v for k, v in self.config.items() if k != "head_dim"})

    def probe_batch(self):
        """The fixed probe sequences of the run: token ids ``[probe_size, max_len]`` (int64).

        The same held-out blocks the rank probe measured at every step.
        """
        return train.prepare_data(self.run_config)[3].clone()

    def ranks_wide(self) -> pd.DataFrame:
        """The ``ranks`` table with one column per measure: one row per ``step, layer, head``."""
        wide = self.table("ranks").pivot_table(
            index=["step", "layer", "head"], columns="measure", values="value", sort=True
        )
        wide.columns.name = None
        return wide.reset_index()

    def initial_model(self):
        """The model this run started from: same architecture and seed, untrained, in eval mode."""
        return model_from_config(
            self.config, vocab_size=self.summary["vocab_size"], pad_token_id=self.summary["pad_token_id"]
        ).eval()

    def load_model(self):
        """The trained model (weights read with ``safetensors``, never pickle), in eval mode."""
        from safetensors.torch import load_file

        weights = self.path / "model.safetensors"
        if not weights.is_file():
            raise RunDamaged(f"run {self.path.name} has no model.safetensors; train it again with force=True")
        model = self.initial_model()
        state = load_file(str(weights))
        result = model.load_state_dict(state, strict=False)  # tied output embeddings are stored once
        tied = _tied_names(model)
        missing = [k for k in result.missing_keys if k not in tied]
        if missing or result.unexpected_keys:
            raise RunDamaged(
                f"run {self.path.name}: model.safetensors does not match the model its config builds "
                f"(missing: {', '.join(missing[:3]) or 'none'}{' ...' if len(missing) > 3 else ''}; "
                f"unexpected: {', '.join(result.unexpected_keys[:3]) or 'none'}"
                f"{' ...' if len(result.unexpected_keys) > 3 else ''}); train it again with force=True"
            )
        return model.eval()


def _tied_names(model) -> set[str]:
    """Names in ``model.state_dict()`` whose tensor shares its storage with an earlier name (the
    tied output embeddings): the ones :func:`save_weights` leaves out."""
    seen, tied = set(), set()
    for name, t in model.state_dict().items():
        view = (t.untyped_storage().data_ptr(), t.storage_offset(), tuple(t.shape), tuple(t.stride()))
        if view in seen:
            tied.add(name)
        seen.add(view)
    return tied


@functools.cache
def _validator(name: str):
    import jsonschema

    schema = {
        "COMPLETE": MANIFEST_SCHEMA,
        "config.json": CONFIG_SCHEMA,
        "summary.json": SUMMARY_SCHEMA,
        "sequences.parquet": SEQUENCES_SCHEMA,
    }[name]
    return jsonschema.Draft202012Validator(schema)


def _validate(document, name: str) -> None:
    """Raise ValueError unless ``document`` (the parsed file ``name``) has its schema's shape."""
    error = next(iter(_validator(name).iter_errors(document)), None)
    if error is not None:
        where = "/".join(map(str, error.absolute_path)) or "top level"
        raise ValueError(f"{name} has the wrong shape at {where}: {error.message}")


def read(path: Path | str) -> Run | None:
    """Read a complete run, or None if it is missing, incomplete, misnamed or damaged.

    ``path`` is ``<arch>-<key>`` (or that name after :data:`ASIDE`); the marker must name
    the same key and have the shape of :data:`MANIFEST_SCHEMA`, every file listed must
    match its SHA-256, and the config and summary must have the shapes of
    :data:`CONFIG_SCHEMA` and :data:`SUMMARY_SCHEMA`. A damaged run is logged as a warning, once per process.
    """
    path = Path(path)
    name = path.name[len(ASIDE) :] if path.name.startswith(ASIDE) else path.name
    match = RESULT_NAME.fullmatch(name)
    marker = path / "COMPLETE"
    if match is None or not marker.exists():
        return None
    try:
        manifest = json.loads(marker.read_text())
        _validate(manifest, "COMPLETE")
        if manifest["key"] != match.group(1):
            raise ValueError(f"the marker names key {manifest['key']}, the folder {match.group(1)}")
        for file, digest in manifest["files"].items():
            if file_sha256(path / file) != digest:
                raise ValueError(f"checksum mismatch in {file}")
        config = json.loads((path / "config.json").read_text())
        _validate(config, "config.json")
        summary = json.loads((path / "summary.json").read_text())
        _validate(summary, "summary.json")
        unlisted = sorted(set(summary.get("files", ())) - set(manifest["files"]))
        if unlisted:
            raise ValueError(f"the marker does not list {', '.join(unlisted)}, which the summary names")
        if set(summary["initial_rank"]) != set(summary["final_rank"]):
            raise ValueError("summary.json has different measures in initial_rank and final_rank")
        if "sequences.parquet" in manifest["files"]:
            _validate(_arrow_columns(path / "sequences.parquet"), "sequences.parquet")
        if ATTENTION_FILE in manifest["files"]:
            _check_attention(path / ATTENTION_FILE, config)
        return Run(path, config, summary)
    except (OSError, ValueError, RecursionError) as exc:  # JSONDecodeError, UnicodeDecodeError: ValueErrors
        # RecursionError: a file nested deeper than the parser (or the schema check) follows
        reason = "nested too deeply to read" if isinstance(exc, RecursionError) else exc
        if (str(path), str(reason)) not in _WARNED:  # read again under the run's lock: one warning, not two
            _WARNED.add((str(path), str(reason)))
            log.warning("run %s is damaged (%s); it will be trained again", path, reason)
        return None


#: The damaged runs (folder, reason) this process has warned about.
_WARNED: set[tuple[str, str]] = set()


def _arrow_columns(file: Path) -> dict:
    """``{column: Arrow type name}`` of a Parquet file, from its footer (the data are not read)."""
    import pyarrow.parquet as pq

    try:
        schema = pq.read_schema(file)
    except Exception as exc:  # pyarrow raises ArrowInvalid and others on a damaged file
        raise ValueError(f"{file.name} is not a readable Parquet file ({exc})") from None
    return {f.name: str(f.type) for f in schema if not f.name.startswith("__index_level")}


def _result_path(root: Path, name: str) -> Path:
    """The folder that holds result ``name``: ``root/name``, or the old result set aside
    by a replacement that was interrupted before the new one was renamed into place."""
    final = root / name
    aside = root / (ASIDE + name)
    return aside if not final.exists() and aside.exists() else final


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


def _recover(final: Path) -> None:
    """Finish or undo an interrupted replacement of ``final`` (call under the run's lock).

    Killed after the old result was set aside but before the new one was renamed in: the
    old one is put back. Killed after the new one was renamed in: the old one is deleted.
    """
    aside = final.with_name(ASIDE + final.name)
    if not aside.exists() and not aside.is_symlink():
        return
    if final.exists():
        _remove(aside)
    else:
        os.replace(aside, final)


def _install(tmp: Path, final: Path) -> None:
    """Rename the complete run ``tmp`` to ``final``, replacing a stored one without a gap.

    The old result is renamed aside first, the new one renamed in, then the old one
    deleted: at every moment ``final`` or its aside name holds a complete result (see
    :func:`_recover` and :func:`_result_path`).
    """
    aside = final.with_name(ASIDE + final.name)
    if final.exists():
        os.replace(final, aside)
    os.replace(tmp, final)
    _remove(aside)


def save_weights(model, path: Path) -> None:
    """Write ``model``'s weights to ``path`` with ``safetensors``, byte-identical for equal weights.

    Tied tensors (the output embeddings of BERT and GPT-2 share the input embeddings) are
    stored once, under their first name in ``state_dict`` order; the file's metadata is only
    ``{"format": "pt"}``. (``safetensors.torch.save_model`` records the dropped names in
    metadata whose order changes from one save to the next, so equal models gave files with
    different bytes and checksums.) :meth:`Run.load_model` re-ties them.
    """
    tied = _tied_names(model)
    state = {name: t.contiguous() for name, t in model.state_dict().items() if name not in tied}
    _save_safetensors(state, path, {"format": "pt"})


def _write(tmp: Path, cfg: RunConfig, result, key: str) -> None:
    tmp.mkdir(parents=True)
    (tmp / "config.json").write_text(json.dumps({**cfg.to_dict(), "head_dim": cfg.head_dim}, indent=2, sort_keys=True))
    result.train_log.to_csv(tmp / "train_log.csv", index=False)
    result.eval_log.to_csv(tmp / "eval_log.csv", index=False)
    result.ranks.to_parquet(tmp / "ranks.parquet", index=False)
    result.rank_summary.to_csv(tmp / "rank_summary.csv", index=False)

    if len(getattr(result, "sequences", ())):
        result.sequences.to_parquet(tmp / "sequences.parquet", index=False)
    if getattr(result, "attention", None) is not None:
        save_attention(result.attention, tmp / ATTENTION_FILE)
    summary = {
        **result.summary,
        "key": key,
        "code_hash": code_hash(),
        **provenance.git_state(),
        "finished_at": time.strftime("%Y-%m-%dT%H:%M:%S"),
    }
    if result.model is not None:
        save_weights(result.model, tmp / "model.safetensors")
        summary["vocab_size"] = result.model.config.vocab_size
        summary["pad_token_id"] = result.model.config.pad_token_id
    summary["files"] = sorted({p.name for p in tmp.iterdir()} | {"summary.json"})  # what the marker must list
    (tmp / "summary.json").write_text(json.dumps(summary, indent=2, sort_keys=True))
    files = {p.name: file_sha256(p) for p in sorted(tmp.iterdir())}
    (tmp / "COMPLETE").write_text(json.dumps({"key": key, "files": files}, indent=2))


def run(config: RunConfig | None = None, *, force: bool = False, progress: bool = False, **kwargs) -> Run:
    """Results of a run, training it only when no complete, intact result is stored.

    Args:
        config: a resolved :class:`RunConfig`, or None to resolve ``kwargs`` with
            :func:`~attnrank.core.profiles.resolve_config` (``arch=...``, ``profile=...``, overrides).
        force: train again even if a stored result exists (it is replaced atomically
            when the new one is complete: a kill at any point leaves the old or the new).
        progress: show the Trainer's progress bar.

    A complete stored run is read without a lock. Training takes a file lock per key in the
    store, so two processes asking for the same run share one training.

    Raises:
        ConfigError: for invalid settings or a ``config`` that is not a :class:`RunConfig`, before
        anything is trained; naming
        ``ATTNRANK_RUNS`` (``ATTNRANK_DATA`` when the store is its ``runs`` folder) when the store
        is not a folder, or cannot be written (read-only media) and the run must be trained.
    """
    cfg = config if config is not None else resolve_config(**kwargs)
    if not isinstance(cfg, RunConfig):
        raise ConfigError("config", f"got a {type(cfg).__name__}; expected a RunConfig (resolve_config(...))")
    key = run_key(cfg)
    root = runs_dir()
    final = root / f"{cfg.arch}-{key}"
    if not force:  # reading a complete run needs no lock (nor a writable store)
        stored = read(final)
        if stored is not None:
            return stored
    try:
        root.mkdir(parents=True, exist_ok=True)
        lock = _acquire(root, key, final.name)
    except OSError as exc:
        # a store that cannot be written still serves the old result of an interrupted replacement
        stored = None if force else read(_result_path(root, final.name))
        if stored is not None:
            return stored
        lock_file = root / f".{key}.lock"
        if getattr(exc, "filename", None) == str(lock_file) and os.path.lexists(lock_file):
            name = _store_setting()
            raise ConfigError(name, _lock_problem(lock_file, root, key, final.name, exc, name)) from None
        if not os.environ.get("ATTNRANK_RUNS"):
            data_dir(write=True)  # the store is the data folder's: its own check names ATTNRANK_DATA
        raise _store_error(root, exc, f"train run {final.name} in") from None
    try:
        _recover(final)
        if not force:
            stored = read(final)
            if stored is not None:
                return stored

        for stale in root.glob(f".tmp-{key}-*"):  # left by a process killed while writing
            _remove(stale)
        result = train.train(cfg, progress=progress)
        tmp = root / f".tmp-{key}-{os.getpid()}"
        try:
            _write(tmp, cfg, result, key)
            _install(tmp, final)
        except OSError as exc:  # a full disk, a quota: nothing half-written stays behind
            _remove(tmp)
            name = _store_setting()
            raise ConfigError(
                name,
                f"cannot write run {final.name} to the run store {root} ({exc.strerror or type(exc).__name__}); "
                f"free space there or set {name} to another folder (the run trained, nothing was stored)",
            ) from None
        stored = read(final)
    finally:
        _release(lock, root, key)
    stored.fresh = True
    return stored


def _lock_problem(lock_file: Path, root: Path, key: str, name: str, exc: OSError, setting: str) -> str:
    """Why run ``name``'s lock file cannot be opened, in words that are true for the reader: a folder in its place, a
    store the reader cannot write, or a lock file of another user, with who holds it where its holder file says."""
    reason = exc.strerror or type(exc).__name__
    if os.path.isdir(lock_file):
        return f"the lock path {lock_file} of run {name} is a folder, not a lock file; remove that folder"
    if not os.access(root, os.W_OK):
        return (
            f"cannot open the lock file {lock_file} of run {name} ({reason}): the run store {root} cannot be written "
            f"by this user, and training it (or --force) writes there; set {setting} to a folder of your own"
        )
    holder = _holder_file(root, key)
    if holder.exists():
        return (
            f"cannot open the lock file {lock_file} of run {name} ({reason}): it belongs to another user, and "
            f"{_describe_holder(holder)}; wait for that process, or set {setting} to a folder of your own"
        )
    return (
        f"cannot open the lock file {lock_file} of run {name} ({reason}): it belongs to another user; if none of "
        f"that user's processes is training this run, they (or an administrator) can remove it; or set {setting} to a "
        "folder of your own"
    )


#: Seconds a second process waits for a run's lock before it says who holds it, then between reports.
LOCK_REPORT_FIRST, LOCK_REPORT_EVERY = 2.0, 30.0


def _holder_file(root: Path, key: str) -> Path:
    return root / f".{key}.holder"


def _acquire(root: Path, key: str, name: str) -> FileLock:
    """Take run ``key``'s lock (:func:`attnrank.core.data.acquire`); while another process holds it, say who (pid,
    host, since when) on stderr after :data:`LOCK_REPORT_FIRST` seconds and again every :data:`LOCK_REPORT_EVERY`
    seconds.

    Raises:
        OSError: the lock file cannot be opened (the caller names it).
    """
    import socket
    import sys

    def waiting(seconds):
        print(
            f"waiting for run {name}: {_describe_holder(_holder_file(root, key))}; waited {seconds:.0f} s",
            file=sys.stderr,
            flush=True,
        )

    lock = acquire(root / f".{key}.lock", waiting=waiting, first=LOCK_REPORT_FIRST, every=LOCK_REPORT_EVERY)
    try:  # who holds it, for the next process that waits (best effort: a read-only store has none)
        holder = {
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "since": time.strftime("%Y-%m-%dT%H:%M:%S"),
            "started": time.time(),
            "command": " ".join(sys.argv)[:200],
        }
        tmp = _holder_file(root, key).with_suffix(f".tmp{os.getpid()}")
        tmp.write_text(json.dumps(holder))
        os.replace(tmp, _holder_file(root, key))
    except OSError:
        pass
    return lock


def _describe_holder(path: Path) -> str:
    """Who holds a run's lock, from its holder file: pid, host, since when, the command, and whether
    that process is stopped or gone (on this host)."""
    import socket

    try:
        h = json.loads(path.read_text())
        pid, host, since = int(h["pid"]), str(h["host"]), str(h["since"])
    except (OSError, ValueError, KeyError, TypeError, RecursionError):
        return "another process holds its lock (it has not said which)"
    text = f"its lock is held by pid {pid} on {host} since {since} ({time.time() - float(h.get('started', 0)):.0f} s)"
    if h.get("command"):
        text += f", running {h['command']!r}"
    if host == socket.gethostname():
        import psutil

        try:
            status = psutil.Process(pid).status()
        except psutil.Error:
            status = None
        if status == psutil.STATUS_STOPPED:
            text += f"; that process is stopped (resume it with kill -CONT {pid}, or end it)"
        elif status is None:
            text += "; no such process here now (the lock passes on when its holder exits)"
    return text


def _release(lock: FileLock, root: Path, key: str) -> None:
    try:
        _holder_file(root, key).unlink(missing_ok=True)
    except OSError:
        pass
    lock.release()


#: Columns of :func:`load_runs` besides the config fields and ``initial_<measure>``/``final_<measure>``.
RUN_COLUMNS = (
    "key",
    "path",
    "status",
    "failure_step",
    "failure_reason",
    "initial_val_loss",
    "final_val_loss",
    "wall_seconds",
    "probe_seconds",
    "cpu_seconds",
    "probe_cpu_seconds",
    "validation_cpu_seconds",
    "device",
    "steps",
)


def load_runs(filter: dict | None = None, *, keys=None, current_code: bool = True) -> pd.DataFrame:
    """One row per stored, complete run: config columns, summary columns and ``key``, ``path``.

    A damaged run (see :func:`run`) is skipped with a warning. Takes no lock and writes
    nothing, so it reads a store on read-only media.

    Args:
        filter: ``{column: value or list of values}`` to keep; a column is a config field,
            ``head_dim``, one of :data:`RUN_COLUMNS` or ``initial_<measure>``/``final_<measure>``.
        keys: keep only these run keys.
        current_code: keep only runs made by the current library code (default).

    Raises:
        ConfigError: naming ``filter`` for a column that no run has (listing the allowed
        ones), or ``ATTNRANK_RUNS`` (``ATTNRANK_DATA`` when the store is its ``runs`` folder)
        for a store path that is not a folder.
    """
    rows = []
    current = code_hash()
    root = runs_dir()
    try:
        entries = [p.name for p in root.iterdir()] if root.exists() else []
    except OSError as exc:
        raise _store_error(root, exc, "read") from None
    names = set()
    for entry in entries:
        name = entry[len(ASIDE) :] if entry.startswith(ASIDE) else entry
        if RESULT_NAME.fullmatch(name):
            names.add(name)
    for name in sorted(names):
        if keys is not None and name.rsplit("-", 1)[1] not in keys:
            continue  # skip before reading (and checksumming) a run that was not asked for
        path = _result_path(root, name)
        r = read(path)
        if r is None or (current_code and r.summary.get("code_hash") != current):
            continue
        s = r.summary
        row = {
            **r.config,
            "key": r.key,
            "path": str(path),
            "status": s["status"],
            "failure_step": (s.get("failure") or {}).get("step"),
            "failure_reason": (s.get("failure") or {}).get("reason"),
            "initial_val_loss": s["initial_val_loss"],
            "final_val_loss": s["final_val_loss"],
            "wall_seconds": s["wall_seconds"],
            "probe_seconds": s["probe_seconds"],
            # process CPU seconds (NaN for runs stored before they were recorded)
            **{k: s.get(k, float("nan")) for k in ("cpu_seconds", "probe_cpu_seconds", "validation_cpu_seconds")},
            "device": s["device"],
            "steps": s["steps"],
        }
        row.update({f"initial_{k}": v for k, v in s["initial_rank"].items()})
        row.update({f"final_{k}": v for k, v in s["final_rank"].items()})
        rows.append(row)
    df = pd.DataFrame(rows)
    for col in [c for c in df if c.startswith(("initial_", "final_"))]:  # losses and ranks
        df[col] = pd.to_numeric(df[col], errors="coerce").astype(float)  # a failed run's None: NaN
    allowed = set(df.columns) | {f.name for f in dataclasses.fields(RunConfig)} | {"head_dim", *RUN_COLUMNS}
    unknown = sorted(set(filter or {}) - allowed)
    if unknown:
        raise ConfigError("filter", f"unknown column {unknown[0]!r}; allowed columns: {', '.join(sorted(allowed))}")
    for col, val in (filter or {}).items():
        if col not in df:
            return df.iloc[0:0].reset_index(drop=True)  # a known column, but no runs
        df = df[df[col].isin(val if isinstance(val, (list, tuple, set)) else [val])]
    return df.reset_index(drop=True)


#: Config columns copied onto every row by :func:`load_table`.
ID_COLUMNS = ("key", "arch", "profile", "tau", "head_dim", "num_heads", "hidden_size", "seed", "status")


def load_table(runs: pd.DataFrame, name: str) -> pd.DataFrame:
    """Concatenate one table (``train_log``, ``eval_log``, ``ranks``, ``rank_summary``, ``sequences``) over ``runs``.

    ``runs`` is a :func:`load_runs` / :func:`attnrank.runs.grid.sweep` frame; each row of the result carries
    the run's :data:`ID_COLUMNS`.
    """
    if name not in _TABLES:
        raise ConfigError("name", f"got {name!r}; allowed values: {', '.join(_TABLES)}")
    frames = []
    for _, r in runs.iterrows():
        t = Run(Path(r["path"]), {}, {}).table(name)
        for col in ID_COLUMNS:
            t[col] = r[col]
        frames.append(t)
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
