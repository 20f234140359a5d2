"""Property names -> property classes: the library ``--property NAME`` resolves against.

The table is built from an explicit list of the classes the model checker
ships (the generic ones in ``properties.py`` and NICE's application-specific
ones in ``app_properties.py``), so what a name means never depends on which
modules happen to have been imported.  A user property joins it through an
explicit :func:`register` call, or is named as ``package.module:Class``.
"""

from __future__ import annotations

import importlib

from netsleuth.nice.app_properties import FlowAffinity, UseCorrectRoutingTable
from netsleuth.nice.errors import PropertyError
from netsleuth.nice.properties import (
    DirectPaths,
    NoBlackHoles,
    NoBlackHolesMobile,
    NoForgottenPackets,
    NoForwardingLoops,
    Property,
    StrictDirectPaths,
)

BUILTIN_PROPERTIES: tuple[type[Property], ...] = (
    NoForwardingLoops, NoBlackHoles, NoBlackHolesMobile, DirectPaths, StrictDirectPaths, NoForgottenPackets,
    FlowAffinity, UseCorrectRoutingTable)

LIBRARY: dict[str, type[Property]] = {c.name: c for c in BUILTIN_PROPERTIES}


def register(cls: type[Property]) -> type[Property]:
    """Add a user property to the library under ``cls.name`` (usable as a class decorator)."""
    if not (isinstance(cls, type) and issubclass(cls, Property)):
        raise TypeError("register() takes a Property subclass")
    LIBRARY[cls.name] = cls
    return cls


def resolve(names: list[str] | tuple[str, ...]) -> list[Property]:
    """Property instances for names (library names, case-insensitive, or ``package.module:Class``)."""
    out: list[Property] = []
    lower = {k.lower(): v for k, v in LIBRARY.items()}
    for name in names:
        if name.lower() in lower:
            out.append(lower[name.lower()]())
            continue
        if ":" in name:
            mod, _, cls_name = name.partition(":")
            try:
                cls = getattr(importlib.import_module(mod), cls_name)
            except (ImportError, AttributeError) as exc:
                raise PropertyError(f"cannot load property {name!r}: {exc}",
                                    "give package.module:Class of a netsleuth.nice.properties.Property") from None
            if isinstance(cls, type) and issubclass(cls, Property):
                out.append(cls())
                continue
        raise PropertyError(f"unknown property {name!r}",
                            f"use one of {', '.join(sorted(LIBRARY))} or package.module:Class")
    return out


__all__ = ["BUILTIN_PROPERTIES", "LIBRARY", "register", "resolve"]
