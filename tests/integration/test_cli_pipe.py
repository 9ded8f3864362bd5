"""The command line in a child process: a closed output pipe."""

from __future__ import annotations


def test_a_closed_output_pipe_ends_without_a_traceback():
    """``attnrank ... | head``: when the reader has gone, the command stops without a traceback (exit 1)."""
    import os
    import subprocess
    import sys

    read, write = os.pipe()
    os.close(read)  # nobody reads: the first write fails with EPIPE
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "attnrank", "sweep", "--profile", "ci", "--dry-run"],
            stdout=write,
            stderr=subprocess.PIPE,
            text=True,
            timeout=600,  # a guard against a hang: imports alone take a minute on two loaded cores
            env={**os.environ, "HF_HUB_OFFLINE": "1"},
        )
    finally:
        os.close(write)
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.returncode == 1
