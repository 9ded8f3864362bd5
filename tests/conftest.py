"""Shared fixtures, and the tier of every test: the folder it lives in (``unit``, ``integration``, ``book``)."""

from pathlib import Path

import pandas as pd
import pytest
import torch

TIERS = ("unit", "integration", "book")


def pytest_collection_modifyitems(config, items):
    """Mark each test with its tier, the name of its folder under ``tests/``."""
    for item in items:
        tier = item.path.parent.name
        if tier not in TIERS:
            raise pytest.UsageError(f"{item.nodeid}: a test lives in one of tests/{{{','.join(TIERS)}}}/")
        item.add_marker(getattr(pytest.mark, tier))


@pytest.fixture
def one_thread():
    """Run a test on one torch thread: small tensors gain nothing from more, and spin-wait."""
    old = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(old)


@pytest.fixture
def corpus(tmp_path) -> Path:
    """A local dataset folder: three plays to train on, a fourth to validate on."""
    from attnrank.data import shakespeare_plays

    plays = shakespeare_plays()
    names = sorted(plays)
    folder = tmp_path / "corpus"
    folder.mkdir()
    (folder / "train.txt").write_text("\n".join(plays[n] for n in names[:3]))
    (folder / "validation.txt").write_text(plays[names[3]])
    return folder


@pytest.fixture
def private_store(tmp_path, monkeypatch) -> Path:
    """A private, empty run store (``ATTNRANK_RUNS``); tokenizers and token caches stay where they are."""
    monkeypatch.setenv("ATTNRANK_RUNS", str(tmp_path / "runs"))
    return tmp_path / "runs"


def fake_train(final_val_loss: float = 3.0, sequences: pd.DataFrame | None = None):
    """A stand-in for :func:`attnrank.train.train` whose result is recognisable by its final loss.

    ``sequences`` is the per-sequence probe table of the result (empty when None). Patch it in with
    ``monkeypatch.setattr("attnrank.train.train", fake_train(2.0))``; a child process imports it from
    this file (``sys.path`` holding ``tests/``).
    """
    from attnrank.train import TrainResult

    def train(cfg, progress=False):
        log = pd.DataFrame({"step": [0, cfg.max_steps], "loss": [7.0, final_val_loss]})
        summary = {
            "status": "complete",
            "failure": None,
            "steps": cfg.max_steps,
            "initial_val_loss": 7.0,
            "final_val_loss": final_val_loss,
            "initial_rank": {"rank_rtol_1e-2": 9.0, "effective_rank": 9.0},
            "final_rank": {"rank_rtol_1e-2": 4.0, "effective_rank": 4.0},
            "wall_seconds": 0.5,
            "probe_seconds": 0.1,
            "validation_seconds": 0.1,
            "device": "cpu",
        }
        return TrainResult(
            train_log=log,
            eval_log=log,
            ranks=log,
            rank_summary=log,
            summary=summary,
            model=None,
            sequences=pd.DataFrame() if sequences is None else sequences,
        )

    return train
