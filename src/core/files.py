"""Files every stage writes the same way: atomically, as strict JSON, with checksums."""

from __future__ import annotations

import hashlib
import json
import math
import os
from pathlib import Path

from src.core.errors import StorageError


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def json_safe(value):
    """`value` with every non-finite float (an undefined statistic, a diverged loss) as None:
    NaN and Infinity are not JSON, and DVC and most tools refuse them."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {key: json_safe(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(item) for item in value]
    return value


def write_json_atomically(path: Path, payload: dict) -> None:
    """A killed run leaves no half-written file that could pass for a finished result."""
    # A bad payload fails here, before any file is touched.
    write_text_atomically(path, json.dumps(json_safe(payload), indent=1, allow_nan=False) + "\n")


def write_text_atomically(path: Path, text: str) -> None:
    """`text` at `path`, all of it or none: it is written to a temporary file in the same folder, then
    renamed over `path` (os.replace, atomic on one filesystem), so a stage killed or failing mid-write
    leaves the previous file as it was, never half of the new one."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    try:
        with open(tmp, "w") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())  # on disk before it takes the file's name, even after a power cut
        os.replace(tmp, path)
    except BaseException as error:  # a full disk, or a Ctrl-C mid-write: no partial file left behind
        tmp.unlink(missing_ok=True)
        if isinstance(error, OSError):
            raise StorageError(f"{path}: could not be written ({error.strerror or error})") from None
        raise
