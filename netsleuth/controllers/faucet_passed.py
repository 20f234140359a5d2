"""Configs Faucet's own checker has passed, remembered by their bytes and Faucet's version.

Faucet's checker (``check_faucet_config``) is a fresh interpreter that
imports Faucet: about a second of CPU, paid before every start on a user's
config -- every replay of a minimization, every run of a campaign, every
CLI command that starts Faucet again on the same file. Its verdict depends
only on the file's bytes and on the Faucet that judges them, so a pass is
remembered under a hash of both (an empty file in the cache directory) and
the checker runs again only when either changes. A rejection is never
remembered: the checker runs and its complaint is quoted every time. A
config that includes other files is never remembered either (their bytes
are not in the hash).

The cache lives in ``$NETSLEUTH_CACHE_DIR``, else ``$XDG_CACHE_HOME/netsleuth``,
else ``~/.cache/netsleuth``; anything that keeps it from being read or written
only means the checker runs.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

SUBDIR = "faucet-config-passed"


def cache_root() -> Path:
    """Where netsleuth keeps what it may remember between runs."""
    explicit = os.environ.get("NETSLEUTH_CACHE_DIR")
    if explicit:
        return Path(explicit)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "netsleuth"


def _faucet_stamp(faucet_bin: Path) -> bytes:
    """What names the Faucet that judges: its environment's installed distribution (name and version)
    and the checker script itself."""
    checker = faucet_bin / "check_faucet_config"
    st = checker.stat()
    dists = sorted(p.name for p in faucet_bin.parent.glob("lib/python*/site-packages/faucet-*.dist-info"))
    return f"{checker.resolve()}\0{st.st_size}\0{st.st_mtime_ns}\0{','.join(dists)}".encode()


def _key(paths: list[Path], faucet_bin: Path) -> str | None:
    """The hash of the files and the checker, or None when the files cannot be remembered."""
    h = hashlib.sha256(_faucet_stamp(faucet_bin))
    for path in paths:
        data = path.read_bytes()
        if b"include" in data:   # a config that pulls in other files: their bytes are not hashed here
            return None
        h.update(len(data).to_bytes(8, "big"))
        h.update(data)
    return h.hexdigest()


def passed_before(paths: list[Path], faucet_bin: Path) -> str | None:
    """None when these files passed this checker before; else the key to :func:`remember` a pass by
    (empty when a pass cannot be remembered)."""
    try:
        key = _key(paths, faucet_bin)
    except OSError:
        return ""
    if key is None:
        return ""
    if (cache_root() / SUBDIR / key).exists():
        return None
    return key


def remember(key: str) -> None:
    """Note a pass (best effort: an unwritable cache only means the checker runs next time)."""
    if not key:
        return
    try:
        d = cache_root() / SUBDIR
        d.mkdir(parents=True, exist_ok=True)
        (d / key).touch()
    except OSError:
        pass
