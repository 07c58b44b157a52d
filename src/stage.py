"""The entry point every stage's `main` runs through.

A user error (bad params, a malformed data file, a model the pipeline cannot use, an
artefact that fails its checksum) ends a stage with one line on stderr and exit code 1:
the message already says what is wrong and what is allowed, so a traceback would only
bury it. Any other exception is a bug and keeps its traceback.

With TRANSFER_RECORD_PARAMS=<folder>, the stage also writes which params keys it read
(tests/test_dvc_params.py checks them against its dvc.yaml `params:`).
"""

from __future__ import annotations

import ctypes
import hashlib
import json
import os
import signal
import sys
from pathlib import Path

from src.config.schema import keys_read
from src.errors import UserError


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
    finally:
        _record_params_read()


def _record_params_read() -> None:
    folder = os.environ.get("TRANSFER_RECORD_PARAMS")
    if folder:
        argv = [Path(sys.argv[0]).with_suffix("").name, *sys.argv[1:]]
        name = hashlib.sha256(" ".join(argv).encode()).hexdigest()[:16]
        Path(folder).mkdir(parents=True, exist_ok=True)
        (Path(folder) / f"{name}.json").write_text(json.dumps({"argv": argv, "read": sorted(keys_read())}))
