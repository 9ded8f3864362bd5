"""A chapter executed by papermill on a local dataset folder (the chapters' ``dataset`` parameter)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

CHAPTERS = Path(__file__).resolve().parents[2] / "chapters"


def test_papermill_chapter_trains_on_the_dataset_parameter(corpus, tmp_path, monkeypatch):
    """``papermill -p dataset hf:<folder>`` at ci: the chapter's runs are trained on that folder
    (their stored config names it); a bad dataset stops in the first cell, naming ``dataset``,
    before anything is trained."""
    papermill = pytest.importorskip("papermill")
    monkeypatch.setenv("ATTNRANK_DATA", str(tmp_path / "data"))
    monkeypatch.delenv("ATTNRANK_RUNS", raising=False)
    monkeypatch.delenv("ATTNRANK_DATASET", raising=False)
    run = lambda params: papermill.execute_notebook(  # noqa: E731
        str(CHAPTERS / "dynamics.ipynb"),
        str(tmp_path / "out.ipynb"),
        cwd=str(CHAPTERS),
        kernel_name="python3",
        progress_bar=False,
        parameters={"profile": "ci", "seeds": 2, "taus": [0.001, 1.0], "head_dims": [16], **params},
    )
    with pytest.raises(papermill.PapermillExecutionError) as e:
        run({"dataset": f"hf:{corpus / 'missing'}"})
    assert e.value.ename == "ConfigError" and e.value.evalue.startswith("dataset: ")
    assert e.value.exec_count == 3  # the first cell after the parameters cell and papermill's injected one
    assert "book.check_parameters(" in e.value.source
    assert not (tmp_path / "data" / "runs").exists()
    run({"dataset": f"hf:{corpus}"})
    configs = [json.loads(p.read_text()) for p in (tmp_path / "data" / "runs").glob("*/config.json")]
    assert len(configs) == 8  # 2 temperatures x 2 seeds x 2 models at the profile's head dimension
    assert {c["dataset"] for c in configs} == {f"hf:{corpus}"}
