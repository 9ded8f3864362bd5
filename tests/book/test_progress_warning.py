"""Importing the library inside a Jupyter kernel puts no tqdm "IProgress not found" warning on a page."""

import importlib.util
import subprocess
import sys

import pytest

CODE = """
import warnings
import ipykernel.zmqshell            # what tqdm.autonotebook takes as "running in a kernel"
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    import attnrank
    from attnrank.runs import store       # the run store's progress bar
    import tqdm.auto                 # and transformers' Trainer, which imports the same module
print([str(w.message)[:40] for w in caught if "IProgress" in str(w.message)])
"""


@pytest.mark.skipif(importlib.util.find_spec("ipywidgets") is not None, reason="with ipywidgets tqdm does not warn")
def test_no_iprogress_warning_in_a_kernel():
    """In a (simulated) kernel without ipywidgets, importing attnrank and then tqdm.auto raises no TqdmWarning."""
    out = subprocess.run([sys.executable, "-c", CODE], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == "[]"


def test_papermill_shows_training_progress_in_the_terminal(tmp_path):
    """`papermill chapter.ipynb out.ipynb` in a terminal (a pseudo-terminal here): the runs a chapter trains show their
    progress bar and one line per run on the terminal, not only in the executed notebook."""
    import os
    import pty

    import nbformat

    code = (
        "from attnrank.runs import grid\n"
        "from attnrank.core.profiles import resolve_config\n"
        "grid.sweep([resolve_config('gpt2', 'ci', max_steps=2, seed=s) for s in range(2)], executor='serial',\n"
        "           progress=True, desc='papermill-progress runs')"
    )
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(code)])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, tmp_path / "in.ipynb")
    env = {**os.environ, "ATTNRANK_DATA": str(tmp_path / "data"), "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
    papermill = [sys.executable, "-m", "papermill", str(tmp_path / "in.ipynb"), str(tmp_path / "out.ipynb")]
    pid, fd = pty.fork()
    if pid == 0:  # the child: papermill on a pseudo-terminal 120 columns wide, as a user's shell starts it
        import fcntl
        import struct
        import termios

        fcntl.ioctl(1, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 120, 0, 0))
        os.execvpe(sys.executable, papermill, env)
    seen = b""
    while True:
        try:
            chunk = os.read(fd, 4096)
        except OSError:  # the child closed the terminal
            break
        if not chunk:
            break
        seen += chunk
    _, status = os.waitpid(pid, 0)
    text = seen.decode(errors="replace")
    assert os.waitstatus_to_exitcode(status) == 0, text[-3000:]
    assert "papermill-progress runs" in text and "2/2" in text, text[-3000:]
    assert "gpt2 tau=1 head_dim=16 seed=1: trained in" in text
