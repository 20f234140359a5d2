"""Reading and writing traces as JSON Lines.

Line 1 is the header, every further line one event. Each line is compact
JSON with sorted keys, so the same events always give the same bytes: traces
can be diffed, hashed and compared across runs, and
``write_trace(p2, read_trace(p1))`` reproduces ``p1`` exactly.

The writer buffers whole lines and hands them to the file only on a flush
(every ``flush_every`` events, once ``flush_seconds`` have passed since the
last flush, and on close), so the file on disk always ends at a line
boundary: a run interrupted between flushes keeps a valid trace of
everything flushed so far, and a run killed outright (SIGKILL, power loss of
the process) loses at most the last ``flush_seconds`` of events.  A writer
that may sit idle between events should also be asked :meth:`flush_if_due`
periodically.

Every reading error is a :class:`TraceFormatError` naming the file and line.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import time
from collections.abc import Callable, Generator, Iterator
from pathlib import Path
from types import TracebackType
from typing import IO, Any

from netsleuth.errors import TraceFormatError
from netsleuth.trace.schema import (
    Event,
    Trace,
    TraceHeader,
    event_from_json,
    event_to_json,
    header_from_json,
    header_to_json,
)
from netsleuth.trace.validate import TraceValidator

PathLike = str | os.PathLike[str]

FLUSH_EVERY = 200
FLUSH_SECONDS = 0.8  # with a periodic flush_if_due every 0.2 s: at most ~1 s is lost


def dumps_line(obj: dict[str, Any]) -> str:
    """One canonical JSONL line (with its newline): compact, sorted keys, UTF-8 text."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False) + "\n"


class TraceWriter:
    """Appends events to a new trace file; use as a context manager.

    The header is written (and flushed) at construction, so even a run that
    dies before its first event leaves a readable, empty trace.
    """

    def __init__(self, path: PathLike, header: TraceHeader, *, flush_every: int = FLUSH_EVERY,
                 flush_seconds: float = FLUSH_SECONDS, clock: Callable[[], float] = time.monotonic) -> None:
        if flush_every < 1:
            raise ValueError("flush_every must be >= 1")
        self.path = Path(path)
        self.flush_every = flush_every
        self.flush_seconds = flush_seconds
        self._clock = clock
        self._flushed_at = clock()
        self.count = 0
        self._pending: list[str] = []
        line = dumps_line(header_to_json(header))  # validate before creating the file
        try:
            self._file: IO[str] | None = open(self.path, "w", encoding="utf-8", newline="\n")
        except OSError as exc:
            raise TraceFormatError(f"cannot create trace file {self.path}: {exc.strerror or exc}",
                                   "check that the directory exists and is writable") from exc
        self._file.write(line)
        self._file.flush()

    def write(self, event: Event) -> None:
        """Queue one event; it reaches the file at the next flush."""
        if self._file is None:
            raise ValueError(f"trace writer for {self.path} is closed")
        try:
            line = dumps_line(event_to_json(event))
        except (TypeError, ValueError) as exc:  # a dict field holding bytes, NaN, ...
            raise TraceFormatError(
                f"cannot record {type(event).__name__} seq={getattr(event, 'seq', '?')}: {exc}",
                "event dict fields must hold JSON values (str, numbers, bool, None, lists, dicts)",
            ) from exc
        self._pending.append(line)
        self.count += 1
        if len(self._pending) >= self.flush_every:
            self.flush()
        else:
            self.flush_if_due()

    def flush_if_due(self) -> None:
        """Flush when ``flush_seconds`` have passed since the last flush (cheap to call often)."""
        if self._pending and self._clock() - self._flushed_at >= self.flush_seconds:
            self.flush()

    def flush(self) -> None:
        """Write every queued line, whole, and push it to the OS."""
        self._flushed_at = self._clock()
        if self._file is None or not self._pending:
            return
        self._file.write("".join(self._pending))
        self._pending.clear()
        self._file.flush()

    def replace_header(self, header: TraceHeader) -> None:
        """Rewrite the header line with what the run learned after it began (the OpenFlow versions
        its switches negotiated), keeping every event written so far.

        The file is replaced atomically (a new file renamed over it), so a reader, or a kill in
        between, sees the old trace or the new one, each whole.
        """
        if self._file is None:
            raise ValueError(f"trace writer for {self.path} is closed")
        line = dumps_line(header_to_json(header))
        self.flush()
        self._file.close()
        self._file = None
        tmp = self.path.with_name(self.path.name + ".header-tmp")
        with open(self.path, encoding="utf-8", newline="\n") as old, \
                open(tmp, "w", encoding="utf-8", newline="\n") as new:
            old.readline()
            new.write(line)
            shutil.copyfileobj(old, new)
        os.replace(tmp, self.path)
        self._file = open(self.path, "a", encoding="utf-8", newline="\n")

    def close(self) -> None:
        if self._file is None:
            return
        try:
            self.flush()
        finally:
            self._file.close()
            self._file = None

    @property
    def closed(self) -> bool:
        return self._file is None

    def __enter__(self) -> TraceWriter:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        # Also on errors and Ctrl-C: what was recorded is what explains them.
        self.close()


def write_trace(path: PathLike, trace: Trace) -> None:
    """Write a whole in-memory trace."""
    with TraceWriter(path, trace.header) as writer:
        for event in trace.events:
            writer.write(event)


def _open(path: Path) -> IO[bytes]:
    try:
        return open(path, "rb")
    except FileNotFoundError:
        raise TraceFormatError(f"trace file {path} does not exist",
                               "check the path; `netsleuth run` and `netsleuth fuzz` write OUT/trace.jsonl") from None
    except OSError as exc:
        raise TraceFormatError(f"cannot open trace file {path}: {exc.strerror or exc}",
                               "check that the path is a readable file") from None


MAX_JSON_DEPTH = 32
"""Deepest JSON nesting a trace line may have; recorded lines nest at most 8 levels.

Checked before parsing, so a line of a million brackets is refused in
linear time instead of overflowing the recursion of the parser (or of
anything that walks the parsed value).
"""

_BRACKETS = re.compile(rb"[\[\]{}]")
_STRINGS = re.compile(rb'"(?:[^"\\]|\\.)*"')
_LONE_SURROGATE = re.compile(r"[\ud800-\udfff]")


def _too_deep(raw: bytes) -> bool:
    """Whether a line's JSON nests deeper than MAX_JSON_DEPTH (brackets inside strings not counted)."""
    if raw.count(b"[") + raw.count(b"{") <= MAX_JSON_DEPTH:  # the usual case: no scan at all
        return False
    depth = 0
    for m in _BRACKETS.finditer(_STRINGS.sub(b"", raw)):
        if m.group() in (b"[", b"{"):
            depth += 1
            if depth > MAX_JSON_DEPTH:
                return True
        else:
            depth -= 1
    return False


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


_DECODER = json.JSONDecoder(parse_constant=_no_constant)  # NaN and Infinity are Python's extension, not JSON


def _one_line(text: str) -> str:
    """``text`` with line breaks and other control characters as spaces: an error stays one line."""
    return text if text.isprintable() else "".join(c if c.isprintable() else " " for c in text)


def _line_error(path: Path, lineno: int, problem: str, fix: str) -> TraceFormatError:
    return TraceFormatError(f"{path} line {lineno}: {_one_line(problem)}", fix)


def _lines(path: Path, f: IO[bytes]) -> Iterator[tuple[int, str, Any]]:
    """(line number, its text, parsed JSON) for each line, with file/line in every error."""
    lineno = 0
    for lineno, raw in enumerate(f, 1):
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise _line_error(path, lineno, "the line is not valid UTF-8",
                              "the file is corrupt or not a trace; re-record it") from None
        if not text.strip():
            raise _line_error(path, lineno, "blank line",
                              "delete the blank line; every line of a trace is one JSON object")
        if _too_deep(raw):
            raise _line_error(path, lineno, f"JSON nests deeper than {MAX_JSON_DEPTH} levels",
                              "the line is corrupt; delete it or re-record the trace")
        try:
            obj = _DECODER.decode(text)
        except json.JSONDecodeError as exc:
            truncated = not raw.endswith(b"\n")
            raise _line_error(
                path, lineno, f"malformed JSON ({exc.msg} at column {exc.colno})",
                "the last line was cut off (interrupted run?); delete it to keep the rest"
                if truncated else "fix or delete this line",
            ) from None
        except (ValueError, RecursionError) as exc:  # NaN/Infinity, integers of thousands of digits
            raise _line_error(path, lineno, f"malformed JSON ({str(exc)[:100]})",
                              "numbers in a trace are finite JSON numbers; fix or delete this line") from None
        if b"\\u" in raw and _LONE_SURROGATE.search(json.dumps(obj, ensure_ascii=False)):
            # json.loads pairs valid surrogate escapes; an unpaired one cannot be written back as UTF-8.
            raise _line_error(path, lineno, "a string holds an unpaired UTF-16 surrogate escape (\\ud800-\\udfff)",
                              "strings in a trace are valid Unicode text; fix or delete this line")
        yield lineno, text, obj
    if lineno == 0:
        raise TraceFormatError(f"{path} line 1: the trace file is empty (no header line)",
                               "re-record the trace; a trace starts with a header line")


def _reraise(path: Path, lineno: int, exc: TraceFormatError) -> TraceFormatError:
    return TraceFormatError(f"{path} line {lineno}: {_one_line(exc.problem)}", _one_line(exc.fix), exc.details)


def _stream(path: PathLike) -> Generator[TraceHeader | Event, None, None]:
    """The header, then each event, parsed and validated lazily (see netsleuth.trace.validate)."""
    p = Path(path)
    with _open(p) as f:
        lines = _lines(p, f)
        validator: TraceValidator | None = None
        for lineno, text, obj in lines:
            try:
                if validator is None:
                    header = header_from_json(obj)
                    validator = TraceValidator(header)
                    yield header
                else:
                    event = event_from_json(obj)
                    validator.check(event, text)
                    yield event
            except TraceFormatError as exc:
                raise _reraise(p, lineno, exc) from exc


def read_header(path: PathLike) -> TraceHeader:
    """Only the header (cheap, whatever the trace's length)."""
    stream = _stream(path)
    try:
        header = next(stream)
    finally:
        stream.close()
    assert isinstance(header, TraceHeader)
    return header


def iter_trace(path: PathLike) -> Iterator[Event]:
    """The events one by one, without holding the trace in memory.

    The file is opened and its header validated now (so a bad path fails
    here, not at the first ``next``); read the header with
    :func:`read_header`. The file stays open until the iterator is exhausted
    or closed.
    """
    stream = _stream(path)
    next(stream)  # the header
    return stream  # type: ignore[return-value]


def read_trace(path: PathLike) -> Trace:
    """The whole trace in memory."""
    stream = _stream(path)
    header = next(stream)
    assert isinstance(header, TraceHeader)
    events: list[Event] = list(stream)  # type: ignore[arg-type]
    return Trace(header, events)


__all__ = ["TraceWriter", "write_trace", "read_trace", "read_header", "iter_trace", "dumps_line", "FLUSH_EVERY"]
