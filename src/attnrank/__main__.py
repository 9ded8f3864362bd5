"""``python -m attnrank`` and the ``attnrank`` command (:func:`attnrank.cli.main`).

The command line's libraries (torch, transformers, scipy) take seconds to load; Ctrl-C in that time is held until
they have loaded and then ends the command with one line and exit status 130, as it does later (an interrupt inside
a library's initialisation would otherwise surface as a traceback, or as that library's ImportError).
"""

import signal
import sys


def run() -> int:
    """Load the command line with Ctrl-C held, then run it; returns the exit status."""
    held = []
    try:
        previous = signal.signal(signal.SIGINT, lambda *_: held.append(True))
    except ValueError:  # not the main thread: nothing to hold
        previous = None
    try:
        from .cli import main
    finally:
        if previous is not None:
            signal.signal(signal.SIGINT, previous)
    if held:
        print("attnrank: interrupted before it started: nothing was run", file=sys.stderr)
        return 130
    return main()


if __name__ == "__main__":
    sys.exit(run())
