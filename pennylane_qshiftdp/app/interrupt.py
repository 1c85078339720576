r"""Ctrl-C during training: finish the step in progress, then stop with everything written.

A private step clips, adds noise, charges the ledger and updates the weights; a
``KeyboardInterrupt`` raised in the middle of it could leave weights that no ledger entry pays
for. :func:`deferred_interrupt` therefore turns the first SIGINT of its block into a request
(:attr:`InterruptRequest.requested`) that the training loop reads after each whole step; the
loop then writes the ledger, the statement and a checkpoint of the steps taken. A second
SIGINT raises ``KeyboardInterrupt`` at once, as usual (abort without writing).

The handler is installed only for the block and only in the main thread (the only thread
Python delivers signals to); the previous handler is restored on exit.
"""

from __future__ import annotations

import contextlib
import signal
import sys
import threading
from collections.abc import Iterator

__all__ = ["InterruptRequest", "deferred_interrupt"]


class InterruptRequest:
    """Whether a SIGINT arrived in a :func:`deferred_interrupt` block."""

    def __init__(self) -> None:
        self.requested = False


@contextlib.contextmanager
def deferred_interrupt(prog: str = "qshiftdp train") -> Iterator[InterruptRequest]:
    """Defer the first SIGINT of the block to the caller's next check of the request.

    Args:
        prog: names the program in the message printed (to stderr) on the first SIGINT.

    Yields:
        InterruptRequest: its ``requested`` turns ``True`` on the first SIGINT.

    Example:
        >>> with deferred_interrupt() as request:
        ...     signal.raise_signal(signal.SIGINT)   # what Ctrl-C sends
        ...     print(request.requested)
        True
    """
    request = InterruptRequest()
    if threading.current_thread() is not threading.main_thread():
        yield request  # signals reach the main thread only: nothing to defer here
        return

    def handler(signum, frame):
        if request.requested:
            raise KeyboardInterrupt
        request.requested = True
        print(f"\n{prog}: interrupted: finishing the current step, then writing the ledger, "
              f"the privacy statement and a checkpoint of the steps taken (Ctrl-C again to "
              f"abort without writing them).", file=sys.stderr, flush=True)

    previous = signal.signal(signal.SIGINT, handler)
    try:
        yield request
    finally:
        signal.signal(signal.SIGINT, previous)
