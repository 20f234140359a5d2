"""os-ken's ``from_jsondict`` and ``to_jsondict``, the same results at a fraction of their cost.

Every recorded OpenFlow message is rebuilt from its JSON when a trace is read
(the check of :mod:`netsleuth.trace.validate`) and again by every tool that
replays or exports it. os-ken's generic ``StringifyMixin.from_jsondict`` does
per field what could be done once per class: it looks the field's type up by
scanning the class's ``_TYPE`` lists, checks it against Python's reserved
words by scanning a list of about 150 names, and builds a decoder closure;
for a PACKET_IN that is ~30 us of a ~35 us rebuild.

:func:`from_jsondict` follows the same steps with those lookups done once per
class: a field's type decoder where ``_TYPE`` names one (the first type that
lists it, as os-ken finds it), else os-ken's default decoding (text is base64,
lists element by element, a one-key ``{"OFP...": {...}}`` object is a nested
class looked up in the class's module, any other object a mapping whose keys
become integers when they all are); reserved names get os-ken's trailing
underscore; the constructor gets the decoded fields and the extra arguments.
A class that overrides any of these steps (os-ken's 1.0 ``OFPMatch``, its
``OFPPacketOut``, 1.3 OXM fields, ...) is handed to its own
``from_jsondict``, so the result is os-ken's in every case.

Every message a live run exchanges is recorded as JSON, and os-ken's generic
``StringifyMixin.to_jsondict`` finds an object's fields with
``inspect.getmembers``: it lists and reads every attribute of the object and
its class (~100 of them for a message) to keep the few set on the instance;
for a FLOW_MOD that is most of the cost of recording it. :func:`to_jsondict`
keeps the same fields (the instance's own public, non-callable attributes that
are neither base attributes nor class attributes, reserved names without
os-ken's trailing underscore, in name order, as ``getmembers`` sorts them)
from the instance's ``__dict__``, and encodes them as os-ken does (the
field's ``_TYPE`` encoder, else base64 text, lists and mappings element by
element, nested objects by their own JSON). A class that overrides any of
these steps or lists optional attributes, a namedtuple, an object without a
``__dict__`` is handed to its own ``to_jsondict``.
"""

from __future__ import annotations

import builtins
import sys
from base64 import b64decode, b64encode
from typing import Any

from os_ken.lib import stringify
from os_ken.ofproto import ofproto_parser
from os_ken.ofproto import ofproto_v1_0_parser as parser10
from os_ken.ofproto import ofproto_v1_3_parser as parser13

__all__ = ["from_jsondict", "to_jsondict"]

_BASE = stringify.StringifyMixin
_RESERVED = frozenset(dir(builtins))  # os-ken's _RESERVED_KEYWORD, as a set
_STEPS = ("_decode_value", "_get_decoder", "_get_type", "_get_default_decoder", "obj_from_jsondict", "_is_class")
# os-ken's OpenFlow base class overrides the class lookup only to call stringify's.
_CLASS_LOOKUPS = frozenset({_BASE.cls_from_jsondict_key.__func__,
                            ofproto_parser.StringifyMixin.cls_from_jsondict_key.__func__})
# os-ken's OFPPacketOut reads a Packet object in "data" itself, and otherwise hands the dict to the
# generic from_jsondict unchanged (it reads dict_["data"] first, so a missing "data" is its error).
_GENERIC_UNLESS_PACKET = frozenset({parser10.OFPPacketOut, parser13.OFPPacketOut})
_PLAIN: dict[type, dict[str, Any] | None] = {}  # class -> its field type decoders, None when it decodes its own way
_ENCODE_STEPS = ("_encode_value", "_get_encoder", "_get_type", "_get_default_encoder", "_is_class")
_PLAIN_OUT: dict[type, dict[str, Any] | None] = {}  # class -> its field type encoders, None when it encodes its own way
_SCALARS = frozenset({int, float, bool, type(None)})  # values os-ken's default encoding keeps as they are


def _field_types(cls: Any) -> dict[str, Any] | None:
    """The type decoders of ``cls``'s fields, or None when ``cls`` changes os-ken's generic decoding
    (other than by an own ``from_jsondict``, which :func:`from_jsondict` looks at)."""
    try:
        return _PLAIN[cls]
    except (KeyError, TypeError):
        pass
    mixin: Any = cls  # (an os-ken class: its hooks are not typed)
    plain = isinstance(cls, type) and issubclass(cls, _BASE) and all(
        getattr(getattr(cls, step), "__func__", None) is getattr(_BASE, step).__func__ for step in _STEPS
    ) and mixin._restore_args is _BASE._restore_args and mixin.cls_from_jsondict_key.__func__ in _CLASS_LOOKUPS
    types: dict[str, Any] | None = None
    if plain:
        types = {}
        for name, fields in cls._TYPE.items():
            for f in fields:
                types.setdefault(f, stringify._types[name])  # the first type that lists it, as os-ken's _get_type
    if isinstance(cls, type):
        _PLAIN[cls] = types
    return types


def from_jsondict(cls: Any, attrs: Any, **extra: Any) -> Any:
    """``cls.from_jsondict(attrs, **extra)``, with os-ken's default base64 text decoding."""
    types = _field_types(cls)
    if types is None or not (cls.from_jsondict.__func__ is _BASE.from_jsondict.__func__ or (
            cls in _GENERIC_UNLESS_PACKET and "data" in attrs and not isinstance(attrs["data"], dict))):
        return cls.from_jsondict(attrs, **extra)
    kwargs: dict[str, Any] = {}
    for k, v in attrs.items():
        t = types.get(k)
        kwargs[k + "_" if k in _RESERVED else k] = t.decode(v) if t is not None else _decode(cls, v)
    kwargs.update(extra)
    return cls(**kwargs)


def _decode(cls: Any, v: Any) -> Any:
    """os-ken's default decoder of ``cls`` for a value without a declared type."""
    if type(v) in _SCALARS:  # most fields are numbers: kept as they are, the last of os-ken's cases
        return v
    if isinstance(v, (bytes, str)):
        return b64decode(v)
    if isinstance(v, list):
        return [_decode(cls, x) for x in v]
    if isinstance(v, dict):
        if cls._is_class(v):
            assert len(v) == 1
            ((name, fields),) = v.items()
            return from_jsondict(getattr(sys.modules[cls.__module__], name), fields)
        out = {k: _decode(cls, x) for k, x in v.items()}
        try:
            return {int(k): x for k, x in out.items()}  # os-ken's hack for integer keys (a switch's ports)
        except ValueError:
            return out
    return v


def _field_encoders(cls: type) -> dict[str, Any] | None:
    """The type encoders of ``cls``'s fields, or None when ``cls`` changes os-ken's generic encoding."""
    try:
        return _PLAIN_OUT[cls]
    except KeyError:
        pass
    mixin: Any = cls  # (an os-ken class: its hooks are not typed)
    osken_steps = issubclass(cls, _BASE) and all(
        getattr(getattr(cls, step), "__func__", None) is getattr(_BASE, step).__func__ for step in _ENCODE_STEPS
    ) and mixin.to_jsondict is _BASE.to_jsondict and mixin.stringify_attrs is _BASE.stringify_attrs
    # getmembers lists what dir() and getattr() give: the instance's __dict__ only when neither is overridden
    plain_attributes = not mixin._opt_attributes if osken_steps else False
    plain = plain_attributes and not hasattr(cls, "_fields") and not hasattr(cls, "__getattr__") and (
        mixin.__dir__ is object.__dir__ and mixin.__getattribute__ is object.__getattribute__)
    types: dict[str, Any] | None = None
    if plain:
        types = {}
        for name, fields in mixin._TYPE.items():
            for f in fields:
                types.setdefault(f, stringify._types[name].encode)  # the first type that lists it
    _PLAIN_OUT[cls] = types
    return types


def to_jsondict(obj: Any) -> dict[str, Any]:
    """``obj.to_jsondict()`` (os-ken's ``{"ClassName": {field: JSON value}}``, text as base64)."""
    cls = type(obj)
    encoders = _field_encoders(cls)
    own = getattr(obj, "__dict__", None)
    if encoders is None or own is None or "_fields" in own:
        described: dict[str, Any] = obj.to_jsondict()
        return described
    base = obj._base_attributes
    fields: dict[str, Any] = {}
    for k in sorted(own):
        v = own[k]
        if k.startswith("_") or callable(v) or k in base or hasattr(cls, k):
            continue
        if k.endswith("_") and k[:-1] in _RESERVED:
            k = k[:-1]
        encode = encoders.get(k)
        fields[k] = encode(v) if encode is not None else _encode(cls, v)
    return {cls.__name__: fields}


def _encode(cls: Any, v: Any) -> Any:
    """os-ken's default encoder of ``cls`` for a value without a declared type."""
    if type(v) in _SCALARS:
        return v
    if isinstance(v, (bytes, str)):
        return b64encode(v.encode("utf-8") if isinstance(v, str) else v).decode("ascii")
    if isinstance(v, list):
        return [_encode(cls, x) for x in v]
    if isinstance(v, dict):
        out = {str(k): _encode(cls, x) for k, x in v.items()}
        assert not cls._is_class(out)
        return out
    try:
        return to_jsondict(v) if isinstance(v, _BASE) else v.to_jsondict()
    except Exception:  # os-ken's own rule: a value that cannot describe itself is kept as it is
        return v
