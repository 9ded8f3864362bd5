"""SIGINT during ``jupyter-book build`` (while a chapter executes), then a rebuild: the rebuild
executes the chapter again and shows its value; nothing of the interrupted build is served."""

from __future__ import annotations

import os
import signal
import subprocess
import time

import pytest
from test_book_build import JUPYTER_BOOK, _notebook, build, make_book, shown

SLOW = (
    "import os, time\n"
    "from attnrank import book\n"
    "from attnrank.words.glossary import fmt\n"
    "from attnrank.core.profiles import resolve_profile\n"
    "open(os.environ['STARTED'], 'w').write(str(os.getpid()))\n"
    "time.sleep(float(os.environ.get('SLEEP', '0')))\n"
    "book.glue('value', f\"{resolve_profile('auto')} {fmt(1 / 3)}\")"
)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return not open(f"/proc/{pid}/stat").read().split()[2] == "Z"  # a zombie has ended


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_a_signal_during_a_build_then_a_rebuild(tmp_path, signum):
    """Ctrl-C (SIGINT to the terminal's process group), SIGTERM (to the build's process alone, as `timeout`,
    `kill` and CI runners send it) and SIGHUP (the terminal closing) all stop the build and the kernel executing
    the chapter within seconds."""
    if signum == signal.SIGHUP and signal.getsignal(signal.SIGHUP) == signal.SIG_IGN:
        pytest.skip("SIGHUP is ignored here (as under nohup), and the build leaves an ignored SIGHUP alone by design")
    started = tmp_path / "started"
    env = make_book(tmp_path, notebook=_notebook(SLOW, "# Notebook\n\nShown: {glue:text}`value:s`."))
    env = {**env, "STARTED": str(started), "SLEEP": "120"}
    first = subprocess.Popen(
        [str(JUPYTER_BOOK), "build", str(tmp_path / "book")],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
        # a terminal's Ctrl-C is live; a shell's background job (`cmd &`) starts with SIGINT ignored, and Python then
        # raises no KeyboardInterrupt: restore the default, as a terminal has it
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    deadline = time.time() + 600
    while time.time() < deadline and not started.exists() and first.poll() is None:
        time.sleep(0.2)
    assert started.exists(), first.communicate()[0][-3000:]
    kernel = int(started.read_text() or 0)
    if signum == signal.SIGINT:
        os.killpg(first.pid, signal.SIGINT)  # Ctrl-C in the terminal: the whole process group
    else:
        os.kill(first.pid, signum)
    out, _ = first.communicate(timeout=300)  # seconds when idle; generous on a loaded machine
    assert first.returncode != 0, out[-3000:]
    deadline = time.time() + 15
    while time.time() < deadline and _alive(kernel):
        time.sleep(0.2)
    assert not _alive(kernel), "the kernel executing the chapter outlived the build"
    assert "BrokenPipe" not in out
    started.unlink()
    again = build(tmp_path, {**env, "SLEEP": "0"})
    assert again.returncode == 0, (again.stdout + again.stderr)[-3000:]
    assert started.exists()  # the chapter executed again: the interrupted execution was not cached
    assert shown(tmp_path) == ("ci 0.33", "ci 0.33")
