"""Run one hosted-app handler as the model checker does: on a copy, with an API that collects what it sends.

Shared by the tests of the os-ken and POX handler servers.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from netsleuth.nice.app import ControllerAPI


def call(app: Any, handler: Callable[[Any], Any]) -> tuple[Any, ControllerAPI]:
    """The app after ``handler`` ran on a copy of it, and the API (its messages, the timers left pending)."""
    new = app.copy()
    api = ControllerAPI(0.0, (), False)
    new._api = api
    try:
        handler(new)
    finally:
        new._api = None
    return new, api


def run(app: Any, handler: Callable[[Any], Any]) -> tuple[Any, list]:
    """The app after ``handler`` ran on a copy of it, and the messages it sent."""
    new, api = call(app, handler)
    return new, api.out
