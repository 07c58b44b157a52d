"""A report stage that fails or is killed while writing leaves the previous report.md and report.html as they
were: each is written whole to a temporary file beside it and renamed over it (src/core/files.py
write_text_atomically, called by src/claims/render.py write_report)."""

from __future__ import annotations

import builtins
import errno
from contextlib import contextmanager

import pytest

from src.core import files
from src.core.errors import StorageError
from tests.fake_evidence import RISING, Builder, render


class HalfWritten:
    """A text file whose write puts half of the text on disk, then fails as a full disk does."""

    def __init__(self, file):
        self.file = file

    def write(self, text: str) -> int:
        self.file.write(text[: len(text) // 2])
        self.file.flush()
        raise OSError(errno.ENOSPC, "No space left on device")


@contextmanager
def half_written(path, mode):
    with builtins.open(path, mode) as file:
        yield HalfWritten(file)


def test_a_report_write_that_fails_midway_leaves_the_previous_report_intact(tmp_path, monkeypatch):
    render(Builder().curve(RISING, trials=3).evidence(), tmp_path)
    before = {name: (tmp_path / name).read_text() for name in ("r.md", "r.html")}
    assert all(before.values())

    monkeypatch.setattr(files, "open", half_written, raising=False)  # the writer's open, nobody else's
    with pytest.raises(StorageError, match="r.md: could not be written"):
        render(Builder().curve([0.6, 0.6, 0.7, 0.7, 0.8], trials=4).evidence(), tmp_path)

    assert {name: (tmp_path / name).read_text() for name in before} == before
    assert not list(tmp_path.glob("*.tmp"))  # no partial file left beside them
