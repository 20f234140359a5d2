"""Files that travel as bytes: a job's directory packed on a cluster node, unpacked where OUT is.

The nodes of a Ray cluster share no filesystem with the driver: a job run
there writes into a scratch directory of its node, and what it wrote comes
back inside its result as one gzip'd tar (``pack_dir``), which the driver
unpacks under its own output directory (``unpack_into``).  Only regular
files and directories are packed, and unpacking refuses anything that would
land outside the target (tarfile's ``data`` filter).
"""

from __future__ import annotations

import io
import shutil
import tarfile
import tempfile
from pathlib import Path


def pack_dir(path: Path) -> bytes:
    """The files under ``path`` as a gzip'd tar (names relative to ``path``); empty bytes if it is absent."""
    if not path.exists():
        return b""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz", compresslevel=3) as tar:
        for f in sorted(path.rglob("*")):
            if f.is_file() and not f.is_symlink():
                tar.add(f, arcname=str(f.relative_to(path)), recursive=False)
    return buf.getvalue()


def unpack_into(blob: bytes, target: Path) -> None:
    """Write the files of ``blob`` (from :func:`pack_dir`) under ``target``, replacing what was there."""
    if target.exists():
        shutil.rmtree(target)
    target.mkdir(parents=True, exist_ok=True)
    if not blob:
        return
    with tarfile.open(fileobj=io.BytesIO(blob), mode="r:gz") as tar:
        tar.extractall(target, filter="data")


def scratch_dir(prefix: str) -> Path:
    """A fresh directory in this node's temporary space (TMPDIR), for a job's files before they are shipped."""
    return Path(tempfile.mkdtemp(prefix=prefix))


__all__ = ["pack_dir", "unpack_into", "scratch_dir"]
