"""A stage run through a shell dies with the process that started the shell (kill -9 included)."""

import os
import shutil
import signal
import subprocess
import sys
import time

import pytest

from tests.support import REPO

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux-only")

# The stage says its pid once tied to its starter; the starter runs `<shell> -c <stage>` and
# waits, as `dvc repro` does.
STAGE = (
    "import os, time; from src.core.process import die_with_parent; "
    "die_with_parent(); print(os.getpid(), flush=True); time.sleep(60)"
)
STARTER = "import subprocess, sys, time; subprocess.Popen(sys.argv[1:]); time.sleep(60)"


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError):  # gone before the open, or between the open and the read
        return False


@pytest.mark.parametrize("shell", ["dash", "bash"])  # dash forks the command and waits, bash execs it
def test_a_stage_under_a_shell_dies_when_its_starter_is_killed(shell):
    if shutil.which(shell) is None:
        pytest.skip(f"no {shell}")
    command = f'{sys.executable} -c "{STAGE}"'
    starter = subprocess.Popen(
        [sys.executable, "-c", STARTER, shutil.which(shell), "-c", command],
        stdout=subprocess.PIPE,
        text=True,
        env=dict(os.environ, PYTHONPATH=str(REPO)),
    )
    stage = int(starter.stdout.readline())
    assert _alive(stage)
    os.kill(starter.pid, signal.SIGKILL)
    starter.wait()
    deadline = time.monotonic() + 5
    while _alive(stage) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(stage), f"the stage under {shell} outlived a kill -9 of its starter"
