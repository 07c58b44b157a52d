"""Process lifetime: a stage and its workers end when the process that started them ends."""

from __future__ import annotations

import ctypes
import os
import signal
import sys


def die_with_parent(parent: int | None = None) -> None:
    """Get SIGKILL when the process that started this one (pid `parent`, default: the
    current parent) dies (Linux). DVC runs a stage as its child (its shell execs the
    one-line command): after a `kill -9` of `dvc repro` the stage and, through the same
    call in each worker, its workers must not train on, writing into a workspace that the
    next `dvc repro` uses."""
    if not sys.platform.startswith("linux"):
        return
    parent = os.getppid() if parent is None else parent
    ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # 1 = PR_SET_PDEATHSIG
    if os.getppid() != parent:  # the parent died before the call took effect
        os.kill(os.getpid(), signal.SIGKILL)
