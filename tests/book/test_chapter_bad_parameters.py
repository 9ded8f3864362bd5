"""Every chapter, run by papermill with a parameter it does not have or a value of the wrong type,
stops in its first cells with a ConfigError naming that parameter, before anything is trained."""

from __future__ import annotations

from pathlib import Path

import pytest

CHAPTERS = Path(__file__).resolve().parents[2] / "chapters"
NOTEBOOKS = sorted(p.stem for p in CHAPTERS.glob("*.ipynb"))


def _execute(chapter: str, parameters: dict, tmp_path: Path):
    papermill = pytest.importorskip("papermill")
    with pytest.raises(papermill.PapermillExecutionError) as e:
        papermill.execute_notebook(
            str(CHAPTERS / f"{chapter}.ipynb"),
            str(tmp_path / "out.ipynb"),
            parameters={"profile": "ci", **parameters},
            cwd=str(CHAPTERS),
            kernel_name="python3",
            progress_bar=False,
        )
    return e.value


@pytest.mark.parametrize("chapter", NOTEBOOKS)
def test_an_unknown_parameter_name_is_named(chapter, tmp_path, monkeypatch):
    monkeypatch.setenv("ATTNRANK_DATA", str(tmp_path / "data"))  # nothing may be trained or stored
    error = _execute(chapter, {"seedz": 3}, tmp_path)
    assert error.ename == "ConfigError"
    assert error.evalue.startswith("seedz: unknown parameter; this chapter accepts: profile")
    assert not (tmp_path / "data" / "runs").exists()


@pytest.mark.parametrize("chapter", NOTEBOOKS)
def test_a_value_of_the_wrong_type_is_named(chapter, tmp_path, monkeypatch):
    monkeypatch.setenv("ATTNRANK_DATA", str(tmp_path / "data"))
    error = _execute(chapter, {"profile": 3}, tmp_path)
    assert error.ename == "ConfigError"
    assert error.evalue.startswith("profile: got 3")
    assert not (tmp_path / "data" / "runs").exists()
