"""The daemons' virtual clock: libfaketime reading a file netsleuth writes.

Every daemon runs with libfaketime preloaded and told to look at one file on
every clock read (``FAKETIME_NO_CACHE=1``). The file holds an absolute time,
in its text and as its modification time; :meth:`FakeTimeClock.set` moves
both at once (the new file is renamed over the old one, so a daemon never
reads half a timestamp). Both give a stopped clock: wall time passing does
not move it, and both the real-time and the monotonic clocks read it. A
daemon asleep in poll() with a timeout computed on the old time does not
notice by itself: :class:`~.net.LiveNet` pokes it through its control
socket, and its event loop then runs the timers that are due.

FRR's daemons read the text (``FAKETIME_TIMESTAMP_FILE``): an open, a
read and a close per clock read. BIRD reads the modification time
(``FAKETIME="%x0"`` with ``FAKETIME_FOLLOW_FILE``): one stat() per clock
read, less than half the cost, and BIRD reads its clock half a million times
in a long run. The ``x0`` holds the clock still from that time (a rate of
nought); libfaketime divides sleep timeouts by the rate, so BIRD's poll()
waits without a timeout, for input -- the pokes -- which on a stopped clock
is all it could wake up for anyway. (FRR's event loops sleep in other calls,
so they keep the text.)

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
        seconds = int(EPOCH.timestamp()) + int(t)
        os.utime(tmp, (seconds, seconds))
        os.replace(tmp, self.path)
        self.now = t

    def env(self, index: int, daemon: str) -> dict[str, str]:
        """The environment of router ``index``'s daemons (BIRD's or FRR's, see the module's words)."""
        bird = daemon == "bird"
        lib = faketime_lib(threaded=not bird)   # BIRD 2 runs one thread: the single-threaded build
        assert lib is not None, "check_environment(clock=True) first"
        common = {"LD_PRELOAD": str(lib), "FAKETIME_NO_CACHE": "1",
                  "FAKERANDOM_SEED": f"0x{(self.seed * 1000003 + index) & 0xFFFFFFFFFFFFFFFF:016X}",
                  "FAKETIME_FAKEPID": str(1000 + index)}
        if bird:
            return {**common, "FAKETIME": "%x0", "FAKETIME_FOLLOW_FILE": str(self.path), "FAKETIME_DONT_RESET": "1"}
        return {**common, "FAKETIME_TIMESTAMP_FILE": str(self.path)}
