"""SIGINT during ``jupyter-book build`` (while a chapter executes), then a rebuild: the rebuild
executes the chapter again and shows its value; nothing of the interrupted build is served."""

from __future__ import annotations

import os
import signal
import subprocess
import time

from test_book_build import JUPYTER_BOOK, _notebook, build, make_book, shown

SLOW = (
    "import os, time\n"
    "from attnrank import book\n"
    "from attnrank.glossary import fmt\n"
    "from attnrank.profiles import resolve_profile\n"
    "open(os.environ['STARTED'], 'w').close()\n"
    "time.sleep(float(os.environ.get('SLEEP', '0')))\n"
    "book.glue('value', f\"{resolve_profile('auto')} {fmt(1 / 3)}\")"
)


def test_sigint_during_a_build_then_a_rebuild(tmp_path):
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
    )
    deadline = time.time() + 600
    while time.time() < deadline and not started.exists() and first.poll() is None:
        time.sleep(0.2)
    assert started.exists(), first.communicate()[0][-3000:]
    os.killpg(first.pid, signal.SIGINT)  # Ctrl-C in the terminal: the whole process group
    out, _ = first.communicate(timeout=300)
    assert first.returncode != 0, out[-3000:]
    started.unlink()
    again = build(tmp_path, {**env, "SLEEP": "0"})
    assert again.returncode == 0, (again.stdout + again.stderr)[-3000:]
    assert started.exists()  # the chapter executed again: the interrupted execution was not cached
    assert shown(tmp_path) == ("ci 0.33", "ci 0.33")
