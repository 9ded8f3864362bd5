"""Cached intermediate tables: compute an expensive table once, serve it until an input changes.

:func:`cached` stores the :class:`pandas.DataFrame` that ``compute(**inputs)`` returns under
``data/cache/tables/<name>-<key>.parquet`` (``ATTNRANK_DATA`` moves ``data``). The key
(:func:`table_key`) holds everything that can change the table:

* ``name`` and the inputs, written canonically (JSON with sorted keys; tuples as lists,
  NumPy numbers as plain numbers), so equal inputs give one key whatever their order;
* the code: :func:`attnrank.runs.provenance.code_hash` of the result modules and of the module
  that defines ``compute`` (so editing the function, or anything it imports, recomputes);
* the environment: the torch thread count and the device (``cpu`` or ``cuda:<name>``).

Like the run store, a table is written to a temporary file and renamed into place (a
killed process leaves no partial table), and a file lock per key keeps two processes from
computing the same table at once. A file that cannot be read (truncated, damaged) is
computed again. Nothing is pickled.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import os
from pathlib import Path

import numpy as np
import pandas as pd

from ..core.data import acquire, data_dir, intact, seal, writing
from ..core.errors import ConfigError
from . import provenance

__all__ = ["cached", "canonical_inputs", "environment", "table_key", "tables_dir"]

log = logging.getLogger(__name__)
_NAME_CHARS = set("abcdefghijklmnopqrstuvwxyz0123456789_")


def tables_dir() -> Path:
    """Folder of the table cache: ``<data>/cache/tables`` (:func:`attnrank.core.data.data_dir`)."""
    return data_dir() / "cache" / "tables"


def _plain(value, where: str):
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        value = float(value)
        if not math.isfinite(value):
            return repr(value)  # JSON has no NaN or infinity
        return value
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, (list, tuple, np.ndarray)):
        return [_plain(v, f"{where}[{i}]") for i, v in enumerate(list(value))]
    if isinstance(value, dict):
        return {str(k): _plain(v, f"{where}.{k}") for k, v in value.items()}
    raise ConfigError(
        where, f"got a {type(value).__name__}; table inputs must be numbers, strings, None, or lists and dicts of them"
    )


def canonical_inputs(inputs: dict) -> str:
    """The inputs as canonical JSON (sorted keys, tuples as lists, NumPy numbers as numbers).

    Raises:
        ConfigError: naming the input whose value is not a number, string, None, list or dict.
    """
    return json.dumps({k: _plain(v, k) for k, v in inputs.items()}, sort_keys=True)


def environment() -> dict:
    """``{"threads": torch thread count, "device": "cpu" or "cuda:<name>"}``, part of every key."""
    import torch

    device = f"cuda:{torch.cuda.get_device_name()}" if torch.cuda.is_available() else "cpu"
    return {"threads": torch.get_num_threads(), "device": device}


def _module_of(compute) -> str:
    module = getattr(compute, "__module__", None) or ""
    if not (module == "attnrank" or module.startswith("attnrank.")):
        raise ConfigError(
            "compute",
            f"got {getattr(compute, '__qualname__', compute)!r} from module {module!r}; "
            "a cached table must be computed by a function of the attnrank library "
            "(its code is part of the key)",
        )
    return module


def table_key(name: str, compute, inputs: dict) -> str:
    """Key (16 hex digits) of table ``name`` computed by ``compute(**inputs)``: see the module docstring."""
    code = provenance.code_hash(tuple(provenance.RESULT_ROOTS) + (_module_of(compute),))
    payload = json.dumps(
        {
            "name": name,
            "function": f"{compute.__module__}.{compute.__qualname__}",
            "inputs": canonical_inputs(inputs),
            "code": code,
            "environment": environment(),
        },
        sort_keys=True,
    )
    return hashlib.sha256(payload.encode()).hexdigest()[:16]


def _read(path: Path) -> pd.DataFrame | None:
    if not intact(path, "the cached table"):
        return None
    try:
        return pd.read_parquet(path)
    except Exception as exc:  # noqa: BLE001 - pyarrow raises several types for a damaged file
        log.warning("cached table %s cannot be read (%s); it will be computed again", path, exc)
        return None


def cached(name: str, compute, **inputs) -> pd.DataFrame:
    """The table ``compute(**inputs)``, computed once per key and then read from the cache.

    Args:
        name: the table's name, lower-case letters, digits and ``_`` (part of the file name).
        compute: a function of the ``attnrank`` library returning a :class:`pandas.DataFrame`
            (column names strings; any index is dropped).
        **inputs: the function's keyword arguments: numbers, strings, None, or lists and dicts
            of them (a seed, sizes, a grid).

    Returns:
        The table (read back from Parquet, so a fresh and a cached call give equal frames).

    Raises:
        ConfigError: for a bad ``name``, a ``compute`` outside the library, an input that is
        not plain data, or a ``compute`` that does not return a DataFrame, before anything is
        written; naming ``ATTNRANK_DATA`` when the cache folder cannot be written.
    """
    if not isinstance(name, str) or not name or not set(name) <= _NAME_CHARS:
        raise ConfigError("name", f"got {name!r}; expected lower-case letters, digits and '_'")
    key = table_key(name, compute, inputs)
    root = tables_dir()
    path = root / f"{name}-{key}.parquet"
    table = _read(path)
    if table is not None:
        return table
    try:
        lock = acquire(root / f".{name}-{key}.lock")
    except OSError as exc:
        raise ConfigError(
            "ATTNRANK_DATA",
            f"cannot write the table cache {root} ({exc.strerror or exc}); set ATTNRANK_DATA to a writable folder",
        ) from None
    try:
        table = _read(path)  # another process may have computed it while we waited
        if table is not None:
            return table
        result = compute(**inputs)
        if not isinstance(result, pd.DataFrame):
            raise ConfigError("compute", f"returned a {type(result).__name__}; expected a pandas DataFrame")
        tmp = root / f".tmp-{name}-{key}-{os.getpid()}.parquet"
        with writing(tmp, f"the table {name}"):  # a full disk: one line naming ATTNRANK_DATA, no partial file
            result.reset_index(drop=True).to_parquet(tmp, index=False)
            seal(tmp, path)
    finally:
        lock.release()
    return pd.read_parquet(path)
