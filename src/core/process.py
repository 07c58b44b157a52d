"""Process lifetime: a stage and its workers end when the process that started them ends."""

from __future__ import annotations

import ctypes
import os
import select
import signal
import sys
import threading
from pathlib import Path

# Shells that run a stage's one-line command. bash execs it, so the stage is DVC's child;
# dash (Debian's /bin/sh, which DVC uses when $SHELL is unset) forks it and waits.
_SHELLS = {"sh", "dash", "bash", "zsh", "fish", "ksh", "mksh"}


def die_with_parent(parent: int | None = None) -> None:
    """Get SIGKILL when the process that started this one dies (Linux).

    DVC runs a stage through a shell: after a `kill -9` of `dvc repro` the stage and,
    through the same call in each worker (`parent` = the stage's pid), its workers must
    not train on, writing into a workspace that the next `dvc repro` uses. The parent's
    death is delivered by PR_SET_PDEATHSIG; when the parent is a shell that did not exec
    the command, the shell outlives DVC, so the process that started the shell is
    watched as well."""
    if not sys.platform.startswith("linux"):
        return
    parent = os.getppid() if parent is None else parent
    ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # 1 = PR_SET_PDEATHSIG
    if os.getppid() != parent:  # the parent died before the call took effect
        os.kill(os.getpid(), signal.SIGKILL)
    if _is_shell(parent):
        _watch(_parent_of(parent))


def _is_shell(pid: int) -> bool:
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    return len(argv) > 1 and Path(argv[0].decode(errors="replace")).name in _SHELLS and b"-c" in argv[1:]


def _parent_of(pid: int) -> int:
    stat = Path(f"/proc/{pid}/stat").read_text()
    return int(stat.rsplit(")", 1)[1].split()[1])  # the command name in (...) may hold spaces


def _watch(pid: int) -> None:
    """SIGKILL this process when `pid` ends: a daemon thread blocks on the process's pidfd."""
    try:
        pidfd = os.pidfd_open(pid)
    except ProcessLookupError:  # it has already ended
        os.kill(os.getpid(), signal.SIGKILL)
    except OSError:  # no pidfd (Linux < 5.3): the parent-death signal alone
        return

    def wait_then_die() -> None:
        select.select([pidfd], [], [])
        os.kill(os.getpid(), signal.SIGKILL)

    threading.Thread(target=wait_then_die, name="die-with-starter", daemon=True).start()
