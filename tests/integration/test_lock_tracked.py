"""A clean clone has the lock file: CI installs from it (a git subprocess, so not in the unit tier)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("name", ["requirements.lock", "requirements-torch-cpu.txt", ".ci/run"])
def test_the_files_ci_installs_from_are_not_ignored_by_git(name):
    """``*.lock`` in .gitignore is for filelock's files; the lock file itself must reach a clone."""
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    assert (ROOT / name).is_file(), name
    ignored = subprocess.run(["git", "-C", str(ROOT), "check-ignore", "-q", name], check=False)
    assert ignored.returncode == 1, f"{name} is ignored by .gitignore: a clean clone would not have it"
