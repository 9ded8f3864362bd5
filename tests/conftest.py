"""Shared fixtures, and the tier of every test: the folder it lives in (``unit``, ``integration``, ``book``)."""

from pathlib import Path

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
