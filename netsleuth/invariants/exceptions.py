"""Python tracebacks in a controller's log, read as violations (the `exceptions` invariant).

A controller framework catches what an app's handler raises, logs the traceback and goes on
(os-ken: "Exception occurred during handler processing"; POX: "Exception reading connection";
Faucet writes it to its exception log and stops).  The network keeps running, so nothing a
check computes changes: the traceback is the finding.  STS found bugs exactly this way (a
KeyError in POX's l2_multi).

This module is sans-I/O: :class:`TracebackParser` takes log text as it grows and hands back
whole tracebacks; :func:`finding` words one.  The log files are read by the edge.

Which frame is the app's: the deepest frame that is not the framework's or a library's.
A frame is the framework's when its file is in Python's standard library, in an installed
package other than the apps (``site-packages``: os-ken and Ryu outside their ``app``
folders, eventlet, ...; Faucet, os-ken's and Ryu's sample apps are apps), in POX's own
machinery (``pox/lib``, ``pox/openflow``, ``pox/core.py``, ``pox/boot.py``, ``pox.py``) or
netsleuth's launcher.  Every other file (your app, a POX component such as
``forwarding/l2_multi.py``) is the app's.  When no frame is the app's (the framework itself
crashed), the deepest frame is named and said to be the framework's.

A violation's identity (``details["group"]``) is the exception type and that frame (file,
function, line): the message may name a MAC or a dpid that differs from run to run, the
place it was raised does not, so a replay recognises it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field

from netsleuth.invariants.forwarding import Finding

_START = "Traceback (most recent call last):"
_CHAIN = ("During handling of the above exception, another exception occurred:",
          "The above exception was the direct cause of the following exception:")
_FRAME = re.compile(r'^\s+File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<func>.+?)\s*$')
_EXC = re.compile(r"^(?P<type>[A-Za-z_][\w.]*)(?::(?P<msg>.*))?$")
_CARET = re.compile(r"^\s*[\^~\s]+$")
_EVENT = re.compile(r"servicing event \[(?P<event>\w+)\]")
_HANDLER = re.compile(r"offending handler \[(?P<handler>\w+)\]")

_LIBRARY_APPS = ("faucet/", "os_ken/app/", "ryu/app/")
_POX_FRAMEWORK = ("pox/lib/", "pox/openflow/", "pox/core.py", "pox/boot.py", "pox/log/", "pox/messenger/",
                  "pox/web/")
_OWN = ("netsleuth/controllers/",)


@dataclass(frozen=True, slots=True)
class StackFrame:
    file: str
    line: int
    func: str
    source: str = ""

    @property
    def short(self) -> str:
        """The file as a user names it, the same wherever the code is installed or checked out."""
        return short_path(self.file)

    def words(self) -> str:
        return f"{self.short}:{self.line} in {self.func}" + (f": {self.source}" if self.source else "")


@dataclass(frozen=True, slots=True)
class Traceback:
    """One logged exception: its type and message, its frames (outermost first), the log line
    before it (the framework's words: which handler, which event) and the exceptions it was
    raised while handling (``chain``: their type and message, oldest first)."""

    type: str
    message: str
    frames: tuple[StackFrame, ...]
    context: str = ""
    chain: tuple[str, ...] = ()

    @property
    def app_frame(self) -> StackFrame | None:
        """The deepest frame in the app's own code, or None when every frame is the framework's."""
        return next((f for f in reversed(self.frames) if not is_framework(f.file)), None)

    @property
    def blamed(self) -> StackFrame | None:
        """The frame the violation names: the app's, else the deepest one."""
        return self.app_frame or (self.frames[-1] if self.frames else None)

    @property
    def handler(self) -> str | None:
        m = _HANDLER.search(self.context)
        return m.group("handler") if m else None

    @property
    def event(self) -> str | None:
        """The framework's event class being handled (os-ken names it), e.g. ``EventOFPPortStatus``."""
        m = _EVENT.search(self.context)
        return m.group("event") if m else None

    def identity(self) -> tuple[str, ...]:
        f = self.blamed
        return (self.type,) + ((f.short, f.func, str(f.line)) if f else ())


def short_path(path: str) -> str:
    p = path.replace("\\", "/")
    for marker in ("/site-packages/", "/dist-packages/"):
        if marker in p:
            return p.split(marker, 1)[1]
    if "/pox/" in p:
        return "pox/" + p.rsplit("/pox/", 1)[1]
    return p.rsplit("/", 1)[-1]


def is_framework(path: str) -> bool:
    """Whether a frame's file is the framework's or a library's, not the app's (see the module doc)."""
    p = path.replace("\\", "/")
    if p.startswith("<"):          # <frozen importlib._bootstrap>, <string>
        return True
    for marker in ("/site-packages/", "/dist-packages/"):
        if marker in p:
            rest = p.split(marker, 1)[1]
            return not rest.startswith(_LIBRARY_APPS)
    if re.search(r"/lib/python3\.\d+/", p):   # the standard library
        return True
    if any(own in p for own in _OWN):
        return True
    if p.endswith("/pox.py") or p == "pox.py":
        return True
    tail = "pox/" + p.rsplit("/pox/", 1)[1] if "/pox/" in p else ""
    return bool(tail) and tail.startswith(_POX_FRAMEWORK)


@dataclass
class _Building:
    context: str
    frames: list[StackFrame] = field(default_factory=list)
    chain: list[str] = field(default_factory=list)


class TracebackParser:
    """Tracebacks out of log text fed in pieces of any size (a line may be split between two feeds).

    ``feed`` returns the tracebacks completed so far.  A traceback is complete at its exception line,
    but a chained one ("During handling of the above exception ...") continues after it, so the last
    one is held until the next log line shows it is over, or until :meth:`settle` (the log has no
    more to say for now) or :meth:`close`."""

    def __init__(self) -> None:
        self._partial = ""
        self._last_line = ""
        self._cur: _Building | None = None
        self._in_frames = False
        self._done: Traceback | None = None     # complete, unless a chain follows
        self._chained: _Building | None = None  # a chain marker was seen after _done

    def feed(self, text: str) -> list[Traceback]:
        data = self._partial + text
        lines = data.split("\n")
        self._partial = lines.pop()
        out: list[Traceback] = []
        for line in lines:
            out.extend(self._line(line.rstrip("\r")))
        return out

    def settle(self) -> list[Traceback]:
        """The log has been read to its end: a finished traceback is not waiting for a chain."""
        if self._done is not None and self._chained is None and self._cur is None:
            tb, self._done = self._done, None
            return [tb]
        return []

    def close(self) -> list[Traceback]:
        out = self.feed("\n") if self._partial else []
        return out + self.settle()

    def _line(self, line: str) -> Iterator[Traceback]:
        if self._cur is not None:
            yield from self._in_traceback(line)
        elif self._done is not None and line.strip() in _CHAIN:
            self._chained = _Building(self._done.context, chain=[*self._done.chain,
                                                                 _exc_words(self._done.type, self._done.message)])
        elif self._done is not None and not line.strip():
            pass  # the blank lines around a chain marker
        elif _START in line:
            if self._done is not None and self._chained is None:
                yield self._take_done()
            base = self._chained or _Building(self._last_line.strip())
            self._chained = None
            self._done = None
            self._cur, self._in_frames = base, True
        else:
            if self._done is not None:
                yield self._take_done()
            self._last_line = line

    def _take_done(self) -> Traceback:
        assert self._done is not None
        tb, self._done, self._chained = self._done, None, None
        return tb

    def _in_traceback(self, line: str) -> Iterator[Traceback]:
        cur = self._cur
        assert cur is not None
        m = _FRAME.match(line)
        if m:
            cur.frames.append(StackFrame(m.group("file"), int(m.group("line")), m.group("func")))
            return
        if line.startswith((" ", "\t")) or not line.strip():
            if cur.frames and line.strip() and not _CARET.match(line) and not cur.frames[-1].source:
                f = cur.frames[-1]
                cur.frames[-1] = StackFrame(f.file, f.line, f.func, line.strip())
            return
        e = _EXC.match(line.strip())
        self._cur = None
        if e is None:  # not a traceback after all (a truncated one): forget it
            self._last_line = line
            return
        self._done = Traceback(e.group("type"), (e.group("msg") or "").strip(), tuple(cur.frames), cur.context,
                               tuple(cur.chain))
        yield from ()


def _exc_words(kind: str, message: str) -> str:
    return f"{kind}: {message}" if message else kind


MESSAGE_WIDTH = 70


def finding(controller: str, tb: Traceback, *, after: str = "", count: int = 1) -> Finding:
    """The violation for one distinct exception of ``controller``: type, message and the app's frame in
    the headline; the frame's source line, the handler and the input that preceded it below."""
    msg = tb.message if len(tb.message) <= MESSAGE_WIDTH else tb.message[:MESSAGE_WIDTH - 3] + "..."
    f = tb.blamed
    where = f" in {f.func} ({f.short}:{f.line})" if f else ""
    whose = "" if tb.app_frame is not None or f is None else " (in the framework: no frame of the app's own code)"
    details: dict = {
        "group": list(tb.identity()), "controller": controller, "exception": tb.type, "exception_message": tb.message,
        "frames": [[fr.file, fr.line, fr.func] for fr in tb.frames], "count": count,
    }
    if f is not None:
        details["frame_text"] = f.words() + whose
    if tb.handler or tb.event:
        details["handler_text"] = " ".join(part for part in (
            f"{tb.handler}" if tb.handler else "", f"handling {tb.event}" if tb.event else "") if part)
    if tb.chain:
        details["chain_text"] = "raised while handling " + "; ".join(tb.chain)
    if after:
        details["after_text"] = after
    return Finding("exceptions", f"controller {controller} raised {_exc_words(tb.type, msg)}{where}",
                   details=details)


__all__ = ["StackFrame", "Traceback", "TracebackParser", "finding", "is_framework", "short_path"]
