"""The asyncio edge: joins the sans-I/O World to real controllers and real time.

Each switch opens one TCP connection per controller, as a real switch does.
Bytes from a controller are framed and decoded by a SwitchConnection and
enter the World's interposition buffers; the default policy here delivers
everything promptly, in arrival order. Whatever the World hands back for a
controller is encoded and written to its socket. Nothing else in netsleuth
touches a socket.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from netsleuth.errors import ControllerError
from netsleuth.openflow.connection import Connected, ErrorEvent, State, SwitchConnection, VersionMismatch
from netsleuth.world.events import Connect, Deliver, Disconnect
from netsleuth.world.world import World

CONNECT_RETRIES = 50
# How long a connection keeps its connect slot waiting for the controller's first bytes.
ADMIT_WAIT = 1.0
# Open vSwitch's reconnection backoff (rconn): the first redial after 1 s, doubling up to 8 s.
REDIAL_FIRST = 1.0
REDIAL_MAX = 8.0


@dataclass(slots=True)
class _Link:
    conn: int
    proto: SwitchConnection
    reader: asyncio.StreamReader
    writer: asyncio.StreamWriter
    task: asyncio.Task | None = None
    heard: asyncio.Event = field(default_factory=asyncio.Event)  # the controller spoke (or it closed)


@dataclass(frozen=True, slots=True)
class PingOutcome:
    src: str
    dst: str
    ok: bool
    rtt: float | None


class Runtime:
    """Drives a World against real controllers over TCP."""

    def __init__(self, world: World, endpoints: dict[str, tuple[str, int]], *,
                 connect_concurrency: int = 32, tick_interval: float = 0.1,
                 batch: int = 2000) -> None:
        self.world = world
        self.endpoints = endpoints
        self.connect_concurrency = connect_concurrency
        self.tick_interval = tick_interval
        self.batch = batch
        self.links: dict[int, _Link] = {}
        self._wake = asyncio.Event()
        self._pump_task: asyncio.Task | None = None
        self._tick_task: asyncio.Task | None = None
        self._activity = 0
        self.last_heard_at = 0.0   # loop time of the last bytes from any controller
        self.closed = False
        self.protocol_errors: list[str] = []
        self.version_mismatches: list[VersionMismatch] = []  # HELLO exchanges that found no common version
        self._background: set[asyncio.Task] = set()
        # The first exception that escaped a background task (the pump, the ticker, a reader):
        # a bug in netsleuth, which must end the run as an internal error instead of leaving
        # a network that silently stopped moving.
        self.failure: BaseException | None = None
        self.failed = asyncio.Event()
        self._backoff: dict[tuple[int, str], float] = {}  # (dpid, controller) -> the last redial's backoff

    # ---------------------------------------------------------------- lifecycle
    async def start(self, progress: Callable[[int], None] | None = None) -> None:
        """Connect every switch to every controller."""
        self._pump_task = self._watched(self._pump())
        self._tick_task = self._watched(self._ticker())
        sem = asyncio.Semaphore(self.connect_concurrency)
        done = 0

        async def one(dpid: int, controller: str, addr: tuple[str, int]) -> None:
            nonlocal done
            async with sem:
                conn = await self.connect(dpid, controller, addr)
                # Keep the slot until the controller has accepted the connection and spoken
                # (its HELLO), so the slots bound the connections waiting in its accept queue:
                # a full queue (os-ken listens with backlog 50) drops SYNs, and each drop
                # stalls that connect for a 1 s SYN retransmission.
                try:
                    await asyncio.wait_for(self.links[conn].heard.wait(), ADMIT_WAIT)
                except TimeoutError:
                    pass
            done += 1
            if progress:
                progress(done)

        jobs = [one(s.dpid, name, addr) for s in self.world.topology.switches
                for name, addr in self.endpoints.items()]
        await asyncio.gather(*jobs)

    async def connect(self, dpid: int, controller: str, addr: tuple[str, int]) -> int:
        delay = 0.02
        for attempt in range(CONNECT_RETRIES):
            try:
                reader, writer = await asyncio.open_connection(*addr)
                break
            except OSError as exc:
                if attempt == CONNECT_RETRIES - 1:
                    raise ControllerError(f"switch {dpid} cannot connect to controller {controller} at "
                                          f"{addr[0]}:{addr[1]}: {exc}",
                                          "check that the controller is running and listening") from exc
                await asyncio.sleep(delay)
                delay = min(delay * 2, 0.5)
        return self._attach(dpid, controller, reader, writer)

    def _attach(self, dpid: int, controller: str, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> int:
        conn = self.world.open_connection(dpid, controller, hello=True)
        proto = SwitchConnection(versions=self.world.offered_versions(dpid))
        link = _Link(conn, proto, reader, writer)
        self.links[conn] = link
        writer.write(proto.initiate())
        link.task = self._watched(self._read(link))
        return conn

    def _watched(self, coro: Any) -> asyncio.Task:
        """A background task whose unexpected exception is kept in ``failure`` (see ``failed``)."""
        task = asyncio.create_task(coro)
        task.add_done_callback(self._note_failure)
        return task

    def _note_failure(self, task: asyncio.Task) -> None:
        if task.cancelled() or task.exception() is None or self.closed:
            return
        if self.failure is None:
            self.failure = task.exception()
        self.failed.set()

    async def wait_handshake(self, timeout: float, progress: Callable[[int], None] | None = None) -> int:
        """Wait until every connection has answered FEATURES_REQUEST; the number that did."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        total = len(self.world.connections)
        while True:
            n = sum(1 for c in self.world.connections.values() if c.features_replied)
            if progress:
                progress(n)
            waiting = sum(1 for c in self.world.connections.values() if c.up and not c.features_replied)
            if n >= total or not waiting or loop.time() >= deadline:
                return n
            await asyncio.sleep(0.02)

    async def settle(self, quiet: float = 0.15, timeout: float = 10.0) -> bool:
        """Wait until nothing is pending and no controller spoke for ``quiet`` seconds."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        last = (-1, -1)
        quiet_since = loop.time()
        while loop.time() < deadline:
            now_state = (self._activity, self.world.stats.fired)
            if now_state != last or not self.world.quiescent():
                last = now_state
                quiet_since = loop.time()
            elif loop.time() - quiet_since >= quiet:
                return True
            await asyncio.sleep(0.01)
        return False

    async def until_answered(self, quiet: float, deadline: float) -> bool:
        """Wait, until loop time ``deadline`` at the latest, until nothing is pending and no controller
        has spoken for ``quiet`` seconds; True if that came first. Unlike :meth:`settle` it counts the
        quiet from the controllers' last message, so a network idle for long returns at once."""
        loop = asyncio.get_running_loop()
        while True:
            now = loop.time()
            if now - self.last_heard_at >= quiet and self.world.quiescent():
                return True
            if now >= deadline:
                return False
            await asyncio.sleep(0.005)

    async def close(self) -> None:
        self.closed = True
        for task in (self._pump_task, self._tick_task):
            if task:
                task.cancel()
        for link in self.links.values():
            if link.task:
                link.task.cancel()
            try:
                link.writer.close()
            except Exception:  # noqa: BLE001 - already broken sockets
                pass
        await asyncio.sleep(0)

    # ---------------------------------------------------------------- I/O
    async def _read(self, link: _Link) -> None:
        reason = "controller closed the connection"
        redial = True  # a switch its controller hung up on dials again; one that speaks no common version does not
        try:
            while True:
                data = await link.reader.read(65536)
                link.heard.set()
                if not data:
                    break
                self._activity += 1
                self.last_heard_at = asyncio.get_running_loop().time()
                for item in link.proto.receive_data(data):
                    if isinstance(item, (ErrorEvent, VersionMismatch)):
                        # malformed message or failed hello: answer with ERROR, as a switch does
                        reason = item.reason if isinstance(item, VersionMismatch) else str(item.error)
                        self.protocol_errors.append(reason)
                        if isinstance(item, VersionMismatch):
                            self.version_mismatches.append(item)
                        if item.reply:
                            link.writer.write(item.reply)
                            if isinstance(item, ErrorEvent) and item.error.err_type != 0:  # not HELLO_FAILED
                                self.world.note_undecodable(link.conn, item.error.err_type, item.error.err_code,
                                                            item.error.xid, item.error.version)
                        if link.proto.state is State.CLOSED:
                            redial = False
                            link.writer.close()
                            raise ConnectionError(reason)
                    elif isinstance(item, Connected):
                        if not self.world.negotiated(link.conn, item.version):
                            reason = (f"connection negotiated OpenFlow wire version {item.version} but the "
                                      f"switch already speaks another version on its first connection")
                            self.protocol_errors.append(reason)
                            redial = False
                            link.writer.close()
                            raise ConnectionError(reason)
                    else:
                        self.world.from_controller(link.conn, item)
                self._wake.set()
        except (ConnectionError, OSError) as exc:
            reason = f"connection error: {exc}"
        except asyncio.CancelledError:
            return
        link.heard.set()
        if self.closed:
            return
        c = self.world.connections[link.conn]
        key = (c.dpid, c.controller)
        before = self.world.redialing.get(key)
        if redial and self.world.connection_lost(link.conn, reason):
            # the first redial of an episode after 1 s, then doubling while the controller keeps hanging up
            same_episode = before is not None and self.world.redialing.get(key) == before
            self._backoff[key] = min(2 * self._backoff.get(key, REDIAL_FIRST), REDIAL_MAX) if same_episode \
                else REDIAL_FIRST
            task = asyncio.create_task(self._redial(c.dpid, c.controller, self._backoff[key]))
            self._background.add(task)
            task.add_done_callback(self._background.discard)
        else:
            self.world.close_connection(link.conn, reason)

    async def _redial(self, dpid: int, controller: str, backoff: float) -> None:
        """Dial ``controller`` again after ``backoff`` seconds, doubling it while the controller does not
        answer, as Open vSwitch does; stop when the World says the switch no longer should (it or the
        controller went down by an input, or another connection is up)."""
        while not self.closed:
            await asyncio.sleep(backoff)
            if self.closed or not self.world.wants_redial(dpid, controller):
                return
            try:
                reader, writer = await asyncio.open_connection(*self.endpoints[controller])
            except OSError:
                backoff = min(2 * backoff, REDIAL_MAX)
                continue
            self._attach(dpid, controller, reader, writer)
            return

    async def _pump(self) -> None:
        world = self.world
        while True:
            await self._wake.wait()
            self._wake.clear()
            n = 0
            while n < self.batch:
                effects = world.fire_next()
                if effects is None:
                    break
                n += 1
                if effects:
                    self.apply(effects)
            if not world.quiescent():
                self._wake.set()
                await asyncio.sleep(0)

    def kick(self) -> None:
        self._wake.set()

    def apply(self, effects: list) -> None:
        """Carry out what the World asks of the edge: write messages, drop or open connections."""
        for e in effects:
            if isinstance(e, Deliver):
                link = self.links.get(e.conn)
                if link is not None and not link.writer.is_closing():
                    link.writer.write(link.proto.send(e.msg))
            elif isinstance(e, Disconnect):
                link = self.links.pop(e.conn, None)
                if link is not None:
                    if link.task:
                        link.task.cancel()
                    link.writer.close()
            elif isinstance(e, Connect):
                addr = self.endpoints[e.controller]
                task = self._watched(self._reconnect(e.dpid, e.controller, addr))
                self._background.add(task)
                task.add_done_callback(self._background.discard)
        self._wake.set()

    async def _reconnect(self, dpid: int, controller: str, addr: tuple[str, int]) -> None:
        try:
            await self.connect(dpid, controller, addr)
        except ControllerError as exc:
            self.protocol_errors.append(exc.problem)

    async def _ticker(self) -> None:
        while True:
            await asyncio.sleep(self.tick_interval)
            self.world.tick()
            self._wake.set()

    # ---------------------------------------------------------------- traffic
    async def ping(self, src: str, dst: str, seq: int, timeout: float = 2.0) -> PingOutcome:
        world = self.world
        host = world.hosts[src]
        dst_ip = world.topology.host(dst).ip
        ident = (host.ip & 0xFFFF)
        loop = asyncio.get_running_loop()
        t0 = loop.time()
        world.inject_ping(src, dst, ident, seq)
        self.kick()
        while loop.time() - t0 < timeout:
            if host.got_reply(dst_ip, ident, seq):
                return PingOutcome(src, dst, True, round(loop.time() - t0, 6))
            await asyncio.sleep(0.002)
        return PingOutcome(src, dst, False, None)

    async def pingall(self, timeout: float = 2.0,
                      progress: Callable[[PingOutcome], None] | None = None) -> list[PingOutcome]:
        """Every host pings every other host, one at a time, as Mininet's pingall does."""
        results = []
        hosts = [h.name for h in self.world.topology.hosts]
        seq = 0
        for src in hosts:
            for dst in hosts:
                if src == dst:
                    continue
                seq += 1
                r = await self.ping(src, dst, seq, timeout)
                results.append(r)
                if progress:
                    progress(r)
        return results
