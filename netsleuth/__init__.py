"""netsleuth: test and troubleshoot the control software of networks."""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any

__version__ = "0.1.0"


def lazy_attribute(package: str, where: Mapping[str, str], name: str) -> Any:
    """What a package's ``__getattr__`` (PEP 562) returns for ``name``: the object of that name in the
    package's submodule ``where[name]``, imported on first use, so that importing the package costs
    nothing until one of its names is touched.  Any other name is an AttributeError (a submodule,
    ``from package import sub``, is then imported as usual)."""
    if name not in where:
        raise AttributeError(f"module {package!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{package}.{where[name]}"), name)
