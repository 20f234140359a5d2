"""The field codec of the trace schema: dataclass fields to JSON values and back, derived from type hints.

Every event kind and the header are frozen dataclasses (:mod:`netsleuth.trace.schema`);
none writes its own (de)serializer. The codec reads a class's type hints once and
picks a converter per field, so a new kind cannot forget its validation, and a
hint the codec does not support fails when the class is first used rather than
silently when some trace is read. Converters are strict: ``bool`` is not an
``int``, ``int`` is widened to ``float`` (so a float field always prints the same
and rewriting a trace stays byte-identical), ``tuple`` fields go out as lists and
come back as tuples (fingerprints nest).
"""

from __future__ import annotations

import dataclasses
import math
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from netsleuth.errors import TraceFormatError

_SCALARS = (str, int, float, bool, type(None))


class _Bad(Exception):
    """A field value of the wrong shape; turned into TraceFormatError by the caller."""


def _check_int(v: Any) -> int:
    if type(v) is not int:  # bool is an int subclass but never a valid int field
        raise _Bad(f"must be an integer, got {v!r}")
    return v


def _to_float(v: Any) -> float:
    # ints are accepted and widened so a float field always prints as "1.0":
    # that keeps rewriting a trace byte-identical.
    if type(v) not in (int, float) or not math.isfinite(v):
        raise _Bad(f"must be a finite number, got {v!r}")
    return float(v)


def _check(kind: type) -> Callable[[Any], Any]:
    def check(v: Any) -> Any:
        if type(v) is not kind:
            raise _Bad(f"must be {'an object' if kind is dict else 'a ' + kind.__name__}, got {v!r}")
        return v

    return check


def _str_tuple_in(v: Any) -> tuple[str, ...]:
    if not isinstance(v, (list, tuple)) or not all(type(x) is str for x in v):
        raise _Bad(f"must be a list of strings, got {v!r}")
    return tuple(v)


def _str_tuple_out(v: Any) -> list[str]:
    if type(v) is not tuple or not all(type(x) is str for x in v):
        raise _Bad(f"must be a tuple of strings, got {v!r}")
    return list(v)


_SCALAR_TYPES = frozenset(_SCALARS)


def _fp_in(v: Any) -> Any:  # a tuple, or a scalar inside one
    # Exact types first: every fingerprint of every event read passes here, and JSON gives exact types.
    t = type(v)
    if t in _SCALAR_TYPES:
        return v
    if t is list or t is tuple or isinstance(v, (list, tuple)):
        return tuple([_fp_in(x) for x in v])
    if isinstance(v, _SCALARS):
        return v
    raise _Bad(f"must be a fingerprint (nested lists of scalars), got {v!r}")


def _fp_out(v: Any) -> Any:
    if type(v) is tuple:
        return [_fp_out(x) for x in v]
    if isinstance(v, _SCALARS):
        return v
    raise _Bad(f"must be a fingerprint (nested tuples of scalars), got {v!r}")


def _fp_top_in(v: Any) -> tuple[Any, ...]:
    if not isinstance(v, (list, tuple)):
        raise _Bad(f"must be a fingerprint (a list, possibly nested, of scalars), got {v!r:.80}")
    return tuple([_fp_in(x) for x in v])


def _fp_top_out(v: Any) -> Any:
    if type(v) is not tuple:
        raise _Bad(f"must be a fingerprint (a tuple, possibly nested, of scalars), got {v!r:.80}")
    return _fp_out(v)


def _optional(inner: Callable[[Any], Any]) -> Callable[[Any], Any]:
    def conv(v: Any) -> Any:
        return None if v is None else inner(v)

    return conv


# (to_json, from_json) per supported annotation. Anything else is a schema bug
# and fails at import time, not when the first trace is read.
_CODECS: dict[Any, tuple[Callable[[Any], Any], Callable[[Any], Any]]] = {
    int: (_check_int, _check_int),
    float: (_to_float, _to_float),
    str: (_check(str), _check(str)),
    bool: (_check(bool), _check(bool)),
    dict: (_check(dict), _check(dict)),
    tuple: (_fp_top_out, _fp_top_in),
    tuple[str, ...]: (_str_tuple_out, _str_tuple_in),
}


def _codec_for(hint: Any) -> tuple[Callable[[Any], Any], Callable[[Any], Any]]:
    if hint in _CODECS:
        return _CODECS[hint]
    args = typing.get_args(hint)
    if isinstance(hint, types.UnionType) and len(args) == 2 and type(None) in args:
        out, inp = _codec_for(args[0] if args[1] is type(None) else args[1])
        return _optional(out), _optional(inp)
    raise TypeError(f"trace schema: unsupported field type {hint!r}")


@dataclass(frozen=True, slots=True)
class _FieldSpec:
    name: str
    to_json: Callable[[Any], Any]
    from_json: Callable[[Any], Any]
    required: bool
    describe: str
    omit: tuple[Any] | None = None  # (default,): the field is written only when it differs from it


def _describe(hint: Any) -> str | None:
    return getattr(hint, "__name__", None) if not typing.get_args(hint) else str(hint)


_SPECS: dict[type, tuple[_FieldSpec, ...]] = {}


def _specs(cls: type) -> tuple[_FieldSpec, ...]:
    specs = _SPECS.get(cls)
    if specs is None:
        hints = typing.get_type_hints(cls)
        specs = tuple(
            _FieldSpec(f.name, *_codec_for(hints[f.name]),
                       required=f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING,
                       describe=str(_describe(hints[f.name])),
                       omit=(f.default,) if f.metadata.get("omit_default") else None)
            for f in dataclasses.fields(cls)
        )
        _SPECS[cls] = specs
    return specs


def encode_fields(obj: Any, what: str) -> dict[str, Any]:
    """The JSON object of dataclass ``obj``'s fields; ``what`` names it in the error if a field is malformed."""
    out: dict[str, Any] = {}
    for spec in _specs(type(obj)):
        if spec.omit is not None and getattr(obj, spec.name) == spec.omit[0]:
            continue  # an optional field at its default is left out of the line
        try:
            out[spec.name] = spec.to_json(getattr(obj, spec.name))
        except _Bad as exc:
            raise TraceFormatError(
                f"cannot record {what}: field {spec.name!r} {exc}",
                f"pass a {spec.describe} for {spec.name!r} when building {type(obj).__name__}",
            ) from None
    return out


_KNOWN: dict[tuple[type, tuple[str, ...]], frozenset[str]] = {}


def decode_fields(cls: type, d: Mapping[str, Any], what: str, skip: tuple[str, ...] = ()) -> Any:
    """Build dataclass ``cls`` from JSON object ``d``; TraceFormatError (naming ``what``) on a missing,
    unknown (``skip`` aside) or malformed field."""
    specs = _specs(cls)
    known = _KNOWN.get((cls, skip))
    if known is None:
        known = _KNOWN[(cls, skip)] = frozenset(s.name for s in specs) | frozenset(skip)
    if not known.issuperset(d):  # every line of every trace read passes here: the usual case is one test
        unknown = sorted(k for k in d if k not in known)
        raise TraceFormatError(
            f"{what} has unknown field(s) {', '.join(map(repr, unknown))}",
            "remove them, or read the trace with the netsleuth version that wrote it",
        )
    kwargs: dict[str, Any] = {}
    for spec in specs:
        if spec.name not in d:
            if spec.required:
                raise TraceFormatError(
                    f"{what} lacks required field {spec.name!r}",
                    "the trace was edited or truncated; restore the field or re-record the trace",
                )
            continue
        try:
            kwargs[spec.name] = spec.from_json(d[spec.name])
        except _Bad as exc:
            raise TraceFormatError(
                f"{what}: field {spec.name!r} {exc}",
                f"make {spec.name!r} a {spec.describe} or re-record the trace",
            ) from None
    return cls(**kwargs)


__all__ = ["encode_fields", "decode_fields"]
