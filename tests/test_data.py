"""Corpus, tokenizers, token blocks and dataset errors."""

from __future__ import annotations

import numpy as np
import pytest

from attnrank import data
from attnrank.errors import ConfigError, DatasetUnavailable


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


@pytest.mark.parametrize("arch", ["bert", "gpt2"])
def test_token_blocks_have_the_right_shape_and_specials(arch):
    train, val, tok = data.token_blocks(arch, "shakespeare", 512, 32)
    assert train.shape[1] == val.shape[1] == 32 and len(train) > 10 * len(val) / 2
    assert train.dtype == np.int64 and train.max() < len(tok)
    if arch == "bert":
        assert (train[:, 0] == tok.cls_token_id).all() and (train[:, -1] == tok.sep_token_id).all()
    else:
        assert (train == tok.eos_token_id).any()  # documents are separated by <|endoftext|>
    again = data.token_blocks(arch, "shakespeare", 512, 32)[0]
    np.testing.assert_array_equal(train, again)


def test_unknown_dataset_names_the_parameter():
    with pytest.raises(ConfigError) as e:
        data.check_dataset("wikipedia")
    assert e.value.param == "dataset" and "shakespeare" in str(e.value)


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
        data.token_blocks("bert", f"hf:{corpus}", 260, 512, min_train=8)
    assert e.value.param == "max_len" and "blocks" in str(e.value)


def test_empty_folder_is_a_clear_error(tmp_path):
    with pytest.raises(DatasetUnavailable) as e:
        data.load_texts(f"hf:{tmp_path}")
    assert e.value.param == "dataset"
