"""``netsleuth ARGS`` as a user runs it: a process of its own, for the tests of what a command prints and exits with.

A separate interpreter, not ``main()`` in the test's process: exit codes,
output streams, signals and the absence of a traceback are properties of the
process, and a command must not lean on anything the test process imported.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def cli(*args: str, timeout: float = 180, cwd: Path | None = None,
        env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """Run ``python -m netsleuth.cli ARGS`` with this interpreter; ``env`` adds to the test's environment."""
    return subprocess.run([sys.executable, "-m", "netsleuth.cli", *args], capture_output=True, text=True,
                          timeout=timeout, cwd=cwd, env={**os.environ, **env} if env else None)
