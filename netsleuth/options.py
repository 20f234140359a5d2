"""Option checks that run before any work: argparse ``type=`` functions and path checks.

A bad option must be refused at once, in one line, with exit code 2 --
not after a controller was started, not as a traceback from deep inside a
job, and never silently accepted (``--steps -5`` once ran zero rounds and
exited 0).  The ``type=`` functions below raise ``argparse.ArgumentTypeError``,
which the CLI's parser turns into ``error: ... -- fix: ...``; the path checks
raise :class:`OptionError` for callers outside argparse.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from pathlib import Path

from netsleuth.errors import NetsleuthError


class OptionError(NetsleuthError):
    """An option's value cannot work (a path that cannot be written, a negative count)."""


def _number(kind: type[int] | type[float], text: str) -> int | float:
    try:
        value: int | float = kind(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not {'an integer' if kind is int else 'a number'}") from None
    if kind is float and value != value:  # NaN compares unequal to itself
        raise argparse.ArgumentTypeError("NaN is not a number this option can take")
    return value


def at_least(minimum: int) -> Callable[[str], int]:
    """An integer >= ``minimum``."""
    def parse(text: str) -> int:
        value = int(_number(int, text))
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be an integer >= {minimum}, not {value}")
        return value
    parse.__name__ = f"integer >= {minimum}"
    return parse


def seconds(*, allow_zero: bool = False) -> Callable[[str], float]:
    """A duration: > 0 (or >= 0 with ``allow_zero``), finite."""
    def parse(text: str) -> float:
        value = float(_number(float, text))
        if value == float("inf") or value < 0 or (value == 0 and not allow_zero):
            raise argparse.ArgumentTypeError(f"must be a number {'>=' if allow_zero else '>'} 0, not {text}")
        return value
    parse.__name__ = "duration"
    return parse


def fraction(text: str) -> float:
    """A number in [0, 1] (a probability, a jitter factor)."""
    value = float(_number(float, text))
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"must be between 0 and 1, not {text}")
    return value


def _first_existing(path: Path) -> Path:
    p = path.absolute()
    while not p.exists() and p != p.parent:
        p = p.parent
    return p


def check_out_dir(path: str | Path, flag: str = "--out") -> Path:
    """A directory that exists or can be created (nothing is created here)."""
    p = Path(path)
    if p.exists() and not p.is_dir():
        raise OptionError(f"{flag} {path} is an existing file, not a directory",
                          f"pass a directory for {flag} (it is created if missing)")
    base = _first_existing(p)
    if not base.is_dir():
        raise OptionError(f"{flag} {path} cannot be created: {base} is a file",
                          "pass a directory path whose parents are directories")
    if not os.access(base, os.W_OK | os.X_OK):
        raise OptionError(f"{flag} {path} cannot be created: {base} is not writable",
                          "pass a directory you can write to")
    return p


def check_out_file(path: str | Path, flag: str = "--out") -> Path:
    """A file path that can be written: not a directory, inside a directory that exists."""
    p = Path(path)
    if p.is_dir():
        raise OptionError(f"{flag} {path} is a directory", f"pass a file name for {flag}")
    parent = p.absolute().parent
    if not parent.is_dir():
        raise OptionError(f"{flag} {path} cannot be written: {parent} is not an existing directory",
                          "create the directory first or pass another path")
    if not os.access(parent, os.W_OK | os.X_OK) or (p.exists() and not os.access(p, os.W_OK)):
        raise OptionError(f"{flag} {path} cannot be written", "pass a path you can write to")
    return p


def _as_type(check: Callable[[str | Path, str], Path], flag: str) -> Callable[[str], str]:
    def parse(text: str) -> str:
        try:
            check(text, flag)
        except OptionError as exc:
            raise argparse.ArgumentTypeError(exc.one_line()) from None
        return text
    parse.__name__ = "path"
    return parse


def out_dir(flag: str = "--out") -> Callable[[str], str]:
    """argparse ``type=`` for an output directory (see :func:`check_out_dir`)."""
    return _as_type(check_out_dir, flag)


def out_file(flag: str = "--out") -> Callable[[str], str]:
    """argparse ``type=`` for an output file (see :func:`check_out_file`)."""
    return _as_type(check_out_file, flag)


__all__ = ["OptionError", "at_least", "seconds", "fraction", "check_out_dir", "check_out_file", "out_dir",
           "out_file"]
