"""Seeds: every random draw of a run derives from printable parts (seed, purpose, task, size, trial).

A derived seed depends on its parts alone, so a run drawn on another machine, or alone,
draws exactly what it draws inside a study."""

from __future__ import annotations

import hashlib


def derive_seed(*parts) -> int:
    """A stable 63-bit seed from any printable parts (Python's hash() is salted per process)."""
    digest = hashlib.sha256("/".join(str(p) for p in parts).encode()).digest()
    return int.from_bytes(digest[:8], "little") >> 1
