"""POX, the controller of STS's case studies, as a ``pox:`` controller spec.

``pox:forwarding.l2_learning`` or ``pox:"openflow.discovery forwarding.l2_multi"``:
the words after ``pox:`` are POX's own command line (components, each
followed by its ``--options``), run from the user's POX checkout (env
``NETSLEUTH_POX`` or ``--pox DIR``) with ``openflow.of_01 --port=P`` added by
netsleuth, which chooses the port.  POX needs only the Python standard
library: it runs under the controller environment's Python (or python3).

The words' syntax is the spec's (trace/controller_spec.py). Everything a
spec names is checked before anything starts (controllers/spec.py): the checkout
exists and each component is a module in it (``pox/`` or ``ext/``), so a
typo is one line with the fix, not a controller that exits while starting.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from netsleuth.errors import ControllerError, EnvironmentSetupError

ENV = "NETSLEUTH_POX"
# An option a trace header may carry without --trust-trace-controller: a flag or a plain value
# (addresses, numbers, lists), never a path (some components write or read the files they are given).
_SAFE_OPTION = re.compile(r"--[A-Za-z0-9_-]+(=[A-Za-z0-9_.,:@+-]*)?\Z")


class PoxNotFoundError(EnvironmentSetupError):
    """No POX checkout where netsleuth was told to look."""


def pox_home() -> Path:
    """The POX checkout to run: ``$NETSLEUTH_POX`` (``--pox DIR`` sets it)."""
    where = os.environ.get(ENV, "")
    if not where:
        raise PoxNotFoundError("pox: controllers need a POX checkout and none was given",
                               f"pass --pox DIR or set {ENV}=DIR (a clone of github.com/noxrepo/pox, "
                               "branch gar for Python 3)")
    home = Path(where).expanduser().resolve()
    if not (home / "pox.py").is_file() or not (home / "pox").is_dir():
        raise PoxNotFoundError(f"{home} is not a POX checkout (no pox.py and pox/ there)",
                               f"point --pox or {ENV} at the folder that holds pox.py")
    return home


def check_components(words: tuple[str, ...], home: Path) -> None:
    """Each component a module of the checkout (``pox/`` first, then ``ext/``, as POX looks)."""
    for w in words:
        if w.startswith("-"):
            continue
        parts = w.partition(":")[0].split(".")
        found = any((base.joinpath(*parts).with_suffix(".py")).is_file()
                    or (base.joinpath(*parts) / "__init__.py").is_file()
                    for base in (home / "pox", home / "ext", home))
        if not found:
            raise ControllerError(f"POX component '{w}' does not exist in {home}",
                                  "check its name (e.g. forwarding.l2_learning, openflow.discovery) or put "
                                  "your component in the checkout's ext/ folder")


def trace_safe(words: list[str]) -> list[str]:
    """The words of a trace header's pox: spec that need the user's trust (options with paths)."""
    return [w for w in words if w.startswith("-") and not _SAFE_OPTION.match(w)]


def pox_argv(python: str, home: str, words: tuple[str, ...], host: str, port: int) -> list[str]:
    """``pox.py`` run by ``python`` with POX's own leading options, then openflow.of_01 on ``host:port``, then the
    components."""
    lead = 0
    while lead < len(words) and words[lead].startswith("-"):
        lead += 1
    return [python, str(Path(home) / "pox.py"), *words[:lead], "openflow.of_01", f"--port={port}",
            f"--address={host}", *words[lead:]]


__all__ = ["ENV", "PoxNotFoundError", "check_components", "pox_argv", "pox_home", "trace_safe"]
