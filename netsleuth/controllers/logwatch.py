"""Read a controller's log as it grows, for the tracebacks in it (the `exceptions` invariant).

The parsing is :mod:`netsleuth.invariants.exceptions`' (sans-I/O); this is only the file end:
each poll reads what was appended since the last one (bytes decoded incrementally, so a
character split between two reads survives), and a file that does not exist yet reads as empty.
"""

from __future__ import annotations

import codecs
from pathlib import Path

from netsleuth.invariants.exceptions import Traceback, TracebackParser

CHUNK = 1 << 20


class LogWatch:
    def __init__(self, path: Path) -> None:
        """Watch what is appended to ``path`` from now on (an earlier run into the same directory
        left its own lines there)."""
        self.path = Path(path)
        try:
            self.offset = self.path.stat().st_size
        except OSError:
            self.offset = 0
        self.parser = TracebackParser()
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")

    def poll(self, final: bool = False) -> list[Traceback]:
        """The tracebacks completed since the last poll (``final``: the log is over, flush what is held)."""
        out: list[Traceback] = []
        try:
            with open(self.path, "rb") as fh:
                fh.seek(self.offset)
                while True:
                    data = fh.read(CHUNK)
                    if not data:
                        break
                    self.offset += len(data)
                    out.extend(self.parser.feed(self._decoder.decode(data)))
        except OSError:
            pass
        out.extend(self.parser.close() if final else self.parser.settle())
        return out
