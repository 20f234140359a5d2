"""POX gar, unmodified, for the tests that run it: from $NETSLEUTH_POX, or unpacked once from its tarball.

The tarball lives beside the checkout (``shared/controllers/``, found from
any ancestor of this file, so a git worktree finds it too).  It is unpacked
once per test session into the session's shared temporary root; xdist
workers take a file lock, and the first one unpacks while the others wait.
"""

from __future__ import annotations

import fcntl
import os
import tarfile
from pathlib import Path

import pytest

TARBALL = "pox-gar-5f82461.tar.gz"


def find_tarball() -> Path | None:
    for parent in Path(__file__).resolve().parents:
        candidate = parent / "shared" / "controllers" / TARBALL
        if candidate.is_file():
            return candidate
    return None


def pox_checkout(root: Path) -> Path:
    """The POX checkout to test with (``root``: a folder every xdist worker of the session shares)."""
    env = os.environ.get("NETSLEUTH_POX")
    if env and (Path(env) / "pox.py").is_file():
        return Path(env)
    tarball = find_tarball()
    if tarball is None:
        pytest.skip(f"POX is not available: set NETSLEUTH_POX to a POX gar checkout or put {TARBALL} in "
                    "shared/controllers/ beside the netsleuth checkout")
    home = root / "pox-gar" / "pox"
    with open(root / "pox-gar.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        done = root / "pox-gar" / ".unpacked"
        if not done.exists():
            with tarfile.open(tarball) as tar:
                tar.extractall(root / "pox-gar", filter="data")
            done.touch()
    return home
