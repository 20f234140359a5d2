"""The daemons' virtual clock: libfaketime reading a timestamp file netsleuth writes.

Every daemon runs with libfaketime preloaded, told to read the time from
one file on every call (``FAKETIME_TIMESTAMP_FILE`` with
``FAKETIME_NO_CACHE=1``). The file holds an absolute time, which libfaketime
treats as a stopped clock: wall time passing does not move it, and both the
real-time and the monotonic clocks read it. :meth:`FakeTimeClock.set` moves it
(an atomic rename, so a daemon never reads half a timestamp). A daemon
asleep in poll() with a timeout computed on the old time does not notice by
itself: :class:`~.net.LiveNet` pokes it through its control socket, and its
event loop then runs the timers that are due.

Randomness is pinned too (``FAKERANDOM_SEED``, and a fake pid per daemon),
so timer jitter is the same in every run.
"""

from __future__ import annotations

import datetime as dt
import os
from pathlib import Path

from netsleuth.defined.daemons.host import faketime_lib

EPOCH = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)


class FakeTimeClock:
    def __init__(self, path: Path, seed: int = 0) -> None:
        self.path = path
        self.seed = seed
        self.now = 0.0
        self.set(0.0)

    def stamp(self, t: float) -> str:
        """libfaketime's absolute (stopped) format for virtual second ``t``."""
        return (EPOCH + dt.timedelta(seconds=int(t))).strftime("%Y-%m-%d %H:%M:%S")

    def set(self, t: float) -> None:
        if t < self.now:
            raise ValueError("the virtual clock only moves forward")
        tmp = self.path.with_name(self.path.name + ".new")
        tmp.write_text(self.stamp(t) + "\n")
        tmp.chmod(0o644)
        os.replace(tmp, self.path)
        self.now = t

    def env(self, index: int, threaded: bool = True) -> dict[str, str]:
        """The environment of router ``index``'s daemons; ``threaded``: they run more than one thread
        (FRR's do; BIRD 2 runs one, and reads its clock without libfaketime's lock)."""
        lib = faketime_lib(threaded)
        assert lib is not None, "check_environment(clock=True) first"
        return {"LD_PRELOAD": str(lib), "FAKETIME_TIMESTAMP_FILE": str(self.path), "FAKETIME_NO_CACHE": "1",
                "FAKERANDOM_SEED": f"0x{(self.seed * 1000003 + index) & 0xFFFFFFFFFFFFFFFF:016X}",
                "FAKETIME_FAKEPID": str(1000 + index)}
