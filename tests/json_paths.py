"""Paths into parsed JSON, for the tests that corrupt recorded traces and messages one place at a time."""

from __future__ import annotations

from typing import Any


def json_paths(obj: Any, path: tuple = ()) -> list[tuple]:
    """Every path (keys and list indexes from the top) to a value inside ``obj``, ``()`` included."""
    out = [path]
    if isinstance(obj, dict):
        for k, v in obj.items():
            out += json_paths(v, path + (k,))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            out += json_paths(v, path + (i,))
    return out
