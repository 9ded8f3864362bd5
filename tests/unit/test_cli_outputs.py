"""Every output path of the command line is checked before any compute (round five of the hostile pass: `attnrank
verdicts` into a missing folder computed every verdict, then ended in a 21-line traceback; `attnrank gpu-check` into a
read-only folder trained 8 runs first)."""

from __future__ import annotations

import os

import pytest

import attnrank.cli
from attnrank.cli import main

pytestmark = pytest.mark.unit


@pytest.mark.parametrize("where", ["missing", "folder", "read-only"])
def test_verdicts_refuses_an_output_it_cannot_write_before_computing(tmp_path, capsys, monkeypatch, where):
    monkeypatch.setattr(attnrank.cli, "verdict_rows", lambda *a, **k: pytest.fail("verdicts were computed"))
    if where == "read-only" and os.geteuid() == 0:
        pytest.skip("root writes into a read-only folder")
    out = {
        "missing": tmp_path / "no such folder" / "v.csv",
        "folder": tmp_path,
        "read-only": tmp_path / "ro" / "v.csv",
    }[where]
    if where == "read-only":
        out.parent.mkdir()
        out.parent.chmod(0o500)
    assert main(["verdicts", str(out), "--profile", "ci"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("attnrank: error: out: ")


def test_gpu_check_refuses_a_folder_it_cannot_make_before_training(tmp_path, capsys):
    blocker = tmp_path / "a file"
    blocker.write_text("")
    assert main(["gpu-check", str(blocker / "out"), "--profile", "ci", "--seeds", "1", "--max-steps", "1"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "out" in err[0] and "not a folder this user can write" in err[0]
