"""Every architecture record trains, probes and ablates (``attnrank.core.architectures``)."""

from __future__ import annotations

import pytest

from attnrank.core.architectures import ARCHITECTURES
from attnrank.core.profiles import resolve_config


@pytest.mark.parametrize("arch", list(ARCHITECTURES))
def test_every_architecture_trains_probes_and_ablates(arch, private_store, one_thread, tmp_path, monkeypatch):
    """A run of every record: two training steps, the rank probe at both ends, the ablation's evaluation
    reproduces the stored validation loss."""
    from attnrank.analysis import ablation
    from attnrank.runs import cache, store

    monkeypatch.setattr(cache, "tables_dir", lambda: tmp_path / "tables")
    run = store.run(resolve_config(arch, "ci", max_steps=2))
    assert run.summary["status"] == "complete"
    assert set(run.summary["final_rank"]) and all(v >= 1 for v in run.summary["final_rank"].values())
    losses = ablation.run_losses(run)
    assert losses["val_loss"] == run.summary["final_val_loss"] and losses["n_targets"] > 0
    assert losses["content_free_loss"] > 0
