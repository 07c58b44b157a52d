"""User errors, and the entry point every stage's `main` runs through.

A user error (bad params, a malformed data file, a model the pipeline cannot use, an
artefact that fails its checksum) ends a stage with one line on stderr and exit code 1:
the message already says what is wrong and what is allowed, so a traceback would only
bury it. Any other exception is a bug and keeps its traceback.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys


class UserError(Exception):
    """Input the user can fix; its message names the key or file and what is allowed."""


class ParamsError(UserError, ValueError):
    """A value in params.yaml (or one that does not fit the model or the data)."""


class ModelError(UserError, ValueError):
    """A model that cannot be loaded or is not a BERT-family encoder."""


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


def run_stage(main) -> None:
    """Run a stage's `main`: tied to its parent's life, user errors as one line."""
    die_with_parent()
    try:
        main()
    except UserError as error:
        print(f"error: {error}", file=sys.stderr)
        sys.exit(1)
