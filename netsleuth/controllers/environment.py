"""Is this machine able to run these controllers?  Asked on each node of a cluster before its first job.

A node of a Ray cluster is a machine of its own: the controller environments
(``.venv-controller`` for os-ken/Ryu apps, ``.venv-faucet`` for Faucet, a POX
checkout) must exist there too.  Parsing the specs on the node finds each
one the way a job would, and the first missing piece is the error, raised
before any job starts rather than once per job.
"""

from __future__ import annotations

from collections.abc import Iterable

from netsleuth.controllers.external import find_controller_python
from netsleuth.controllers.faucet import find_faucet_bin
from netsleuth.controllers.spec import parse_controller
from netsleuth.trace.controller_spec import APP_KINDS, Kind


def check_environments(specs: Iterable[str]) -> None:
    """Raise the EnvironmentSetupError (or ControllerError) of the first controller that cannot run here."""
    for text in specs:
        spec = parse_controller(text)  # a POX spec finds its checkout and components here
        if spec.kind in APP_KINDS:
            find_controller_python()
        elif spec.kind is Kind.FAUCET:
            find_faucet_bin()


__all__ = ["check_environments"]
