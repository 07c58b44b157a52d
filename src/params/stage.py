"""The entry point every stage's `main` runs through.

A user error (bad params, a malformed data file, a model the pipeline cannot use, an
artefact that fails its checksum) ends a stage with one line on stderr and exit code 1:
the message already says what is wrong and what is allowed, so a traceback would only
bury it. Any other exception is a bug and keeps its traceback.

With TRANSFER_RECORD_PARAMS=<folder>, the stage also writes which params keys it read
(tests/contract/test_dvc_params.py checks them against its dvc.yaml `params:`).
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from pathlib import Path

from src.config.schema import keys_read
from src.core.errors import UserError
from src.core.process import die_with_parent


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
