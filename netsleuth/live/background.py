"""A Session driven from synchronous code: the network on a loop in a background thread.

`netsleuth step` (live) and the test handle (`netsleuth.testing`) are
synchronous at their surface -- a console, a pytest test -- while the
network is asyncio. Both need the same thing: start a Session in a thread,
wait until it has bootstrapped, run coroutines on its loop from the caller's
thread (so every read and change of the World happens between two of the
loop's events, never halfway through one), and stop it so that the
controllers go down with it. That bridge lives here once.

The Session's own guarantees stay in force: however the loop ends, the trace
and result.json are written and every controller it started is stopped
(and the guard process takes them down should this process die outright).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

from netsleuth.errors import NetsleuthError
from netsleuth.live.driver import Runtime
from netsleuth.live.session import JobResult, Session

R = TypeVar("R")


class BackgroundSession:
    """One Session running in a daemon thread until :meth:`close`."""

    def __init__(self, session: Session, *, observers: tuple[Callable[[Any], None], ...] = (),
                 on_ready: Callable[[Session, Runtime], Coroutine[Any, Any, None]] | None = None,
                 stopped: Callable[[], NetsleuthError], name: str = "netsleuth-network") -> None:
        """Start ``session`` and return once it has bootstrapped (``on_ready`` awaited on its loop).

        ``stopped`` builds the error :meth:`call` raises once the network has
        gone (in the caller's own words: a console command, a test).
        Whatever the bootstrap raised (a controller that does not start, a
        refused handshake) is raised here, in the caller's thread.
        """
        self.session = session
        self._stopped = stopped
        self._on_ready = on_ready
        self._observers = observers
        self._stop: asyncio.Event | None = None
        self._ready = threading.Event()
        self.error: BaseException | None = None
        self.result: JobResult | None = None
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()
        self._ready.wait()
        if self.error is not None:
            self._thread.join(timeout=30)
            raise self.error

    def _run(self) -> None:
        async def body(s: Session, rt: Runtime) -> None:
            self.loop, self.rt, self.world = asyncio.get_running_loop(), rt, s.world
            self._stop = asyncio.Event()
            if self._on_ready is not None:
                await self._on_ready(s, rt)
            self._ready.set()
            await self._stop.wait()

        try:
            self.result = self.session.execute(body, observers=self._observers)
        except BaseException as exc:  # noqa: BLE001 - handed to the caller's thread
            self.error = exc
        finally:
            self._ready.set()

    @property
    def alive(self) -> bool:
        return self._thread.is_alive() and self.error is None

    def call(self, coro_fn: Callable[[], Coroutine[Any, Any, R]]) -> R:
        """Run ``coro_fn()`` on the network's loop and wait for its result."""
        if not self.alive:
            raise self._stopped()
        return asyncio.run_coroutine_threadsafe(coro_fn(), self.loop).result()

    def read(self, fn: Callable[..., R], *args: Any) -> R:
        """Run ``fn`` on the network's loop, between two of its events (for consistent reads)."""
        async def run() -> R:
            return fn(*args)
        return self.call(run)

    def close(self, timeout: float = 30.0) -> None:
        """Stop the network and its controllers; the trace and result.json stay on disk."""
        if self._thread.is_alive() and self._stop is not None:
            self.loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(timeout=timeout)
