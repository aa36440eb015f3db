#!/usr/bin/env python3
"""Load tool for `journal serve` and, in the same run, pycrdt-websocket + pycrdt-store.

Real WebSocket clients over loopback, the same client code and process model for both servers
(worker processes, each an asyncio loop holding a share of the connections). See README.md.
"""
import argparse
import asyncio
import json
import multiprocessing as mp
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))  # <repo>/Tools/bench/relay-load
sys.path.insert(0, os.path.join(REPO, "Tools", "bench", "workload"))
import which_generator  # noqa: E402  (the standard session generator, or ours when it is missing)
CLK_TCK = os.sysconf("SC_CLK_TCK")

# ----------------------------------------------------------------------------- workload


class Stroke:
    __slots__ = ("uuid", "lines", "end", "points", "color", "width")

    def __init__(self, uuid):
        self.uuid = uuid
        self.lines = []  # canonical point lines, as in the file
        self.end = None  # the end line, if any
        self.points = []  # (x, y, pressure, t)
        self.color = "#000000FF"
        self.width = 2.0


def read_strokes(workload, limit=None):
    """Strokes of the session's replica files, interleaved (replica 0's first, replica 1's
    first, ...), each with its point lines exactly as in the file. Events that are not points
    or ends (undo, redo, erase, clear) are left out: only strokes are fed."""
    files = sorted(f for f in os.listdir(workload) if f.startswith("replica-") and f.endswith(".ndjson"))
    per_file = []
    for name in files:
        strokes, open_ = [], {}
        with open(os.path.join(workload, name)) as f:
            for line in f:
                line = line.rstrip("\n")
                ev = json.loads(line)
                kind = ev.get("type")
                if kind == "point":
                    s = open_.get(ev["stroke"])
                    if s is None:
                        s = open_[ev["stroke"]] = Stroke(ev["stroke"])
                        s.color = ev.get("color", "#000000FF")
                        s.width = ev.get("width", 2.0)
                        strokes.append(s)
                    s.lines.append(line)
                    s.points.append((ev["x"], ev["y"], ev.get("pressure"), ev.get("t")))
                elif kind == "end":
                    s = open_.pop(ev["stroke"], None)
                    if s is not None:
                        s.end = line
                if limit is not None and len(strokes) >= limit:
                    break
        per_file.append(strokes)
    out = []
    for i in range(max(len(s) for s in per_file)):
        for strokes in per_file:
            if i < len(strokes):
                out.append(strokes[i])
    return out[:limit] if limit else out


def stroke_uuid(tag, client, k):
    return "%08x-%04x-4000-8000-%012x" % (tag & 0xFFFFFFFF, client & 0xFFFF, k & 0xFFFFFFFFFFFF)


class Encoded:
    """A stroke's frames with its id left out, so that a client can send it under a fresh id:
    `collab` (one CollabSketch DrawingStroke line: all points, then the end) and `lines` (one
    canonical line per point, then the end line)."""
    __slots__ = ("collab", "lines", "npoints", "ypoints", "color", "width")

    def __init__(self, s):
        c = s.color.lstrip("#")
        if len(c) == 6:
            c += "FF"
        rgba = [int(c[i:i + 2], 16) / 255 for i in (0, 2, 4, 6)]
        pts = ",".join('{"x":%r,"y":%r}' % (p[0], p[1]) for p in s.points)
        self.collab = ('{"id":"', '","points":[%s],"red":%r,"green":%r,"blue":%r,"alpha":%r,"lineWidth":%r}'
                       % (pts, rgba[0], rgba[1], rgba[2], rgba[3], float(s.width)))
        lines = list(s.lines) + [s.end or '{"type":"end","stroke":"%s"}' % s.uuid]
        self.lines = [tuple(line.split(s.uuid, 1)) for line in lines]
        self.npoints = len(s.points)
        self.ypoints = [{"x": p[0], "y": p[1], "pressure": p[2], "t": p[3]} for p in s.points]
        self.color = s.color
        self.width = float(s.width)


# ----------------------------------------------------------------------------- clients
# One client "connection" object per socket; the same loops drive both servers, only the
# frame encoding and the meaning of the acknowledgement differ (Proto below).


def ws_header_bytes(n):
    return 2 if n < 126 else (4 if n < 65536 else 10)


def token_field():
    """The hello's token, with --auth (a token minted by Server for every board)."""
    token = os.environ.get("RELAY_LOAD_TOKEN")
    return ',"token":%s' % json.dumps(token) if token else ""


class OursProto:
    """Our relay: text frames; ack = `{"type":"ack","upTo":N}` (frames 1..N fsynced)."""
    kind = "ours"

    def __init__(self, port):
        self.port = port

    def url(self, board):
        return "ws://127.0.0.1:%d/boards/%s/ws" % (self.port, board)

    async def open(self, ws, blocks=False):
        hello = '{"type":"hello","have":{}' + (',"blocks":true' if blocks else "") + token_field() + "}"
        await ws.send(hello)
        while True:  # empty boards: caughtUp comes at once
            m = await ws.recv(decode=False)
            if m.startswith(b'{"type":"caughtUp"'):
                return
            if m.startswith(b'{"type":"error"'):
                raise RuntimeError(m.decode())

    @staticmethod
    def acked(m):
        """Frames acknowledged by this message, or None."""
        if m[:13] == b'{"type":"ack"':
            return int(m[m.rindex(b":") + 1:-1])
        if m[:15] == b'{"type":"error"':
            raise RuntimeError(m.decode())
        return None

    def stroke_frames(self, enc, uuid, per_point):
        """[(frame, points)]"""
        if per_point:
            out = [(a + uuid + b, 1) for a, b in enc.lines[:-1]]
            a, b = enc.lines[-1]
            out.append((a + uuid + b, 0))
            return out
        a, b = enc.collab
        return [(a + uuid + b, enc.npoints)]


class PeerProto:
    """pycrdt-websocket: binary Y sync-update messages; 'ack' = the peer server's commit
    notice (b'\\xfe' + count of this client's updates that SQLiteYStore committed)."""
    kind = "peer"

    def __init__(self, port):
        self.port = port
        self.doc = None

    def url(self, board):
        return "ws://127.0.0.1:%d/%s" % (self.port, board)

    async def open(self, ws, blocks=False):
        from pycrdt import Doc, Map
        m = await ws.recv(decode=False)  # the server's SYNC_STEP1
        assert m[0] == 0, m[:8]
        self.doc = Doc()
        self.strokes = self.doc.get("strokes", type=Map)
        self.updates = []
        self.doc.observe(lambda e: self.updates.append(e.update))

    @staticmethod
    def acked(m):
        if m[0] == 0xFE:
            return int(m[1:])
        return None

    def stroke_frames(self, enc, uuid, per_point):
        from pycrdt import Array, Map, create_update_message
        doc, strokes, ups = self.doc, self.strokes, self.updates
        ups.clear()
        if per_point:
            with doc.transaction():
                strokes[uuid] = Map({"color": enc.color, "width": enc.width, "points": Array(enc.ypoints[:1])})
            arr = strokes[uuid]["points"]
            for p in enc.ypoints[1:]:
                with doc.transaction():
                    arr.append(p)
            return [(create_update_message(u), 1) for u in ups]
        with doc.transaction():
            strokes[uuid] = Map({"color": enc.color, "width": enc.width, "points": Array(enc.ypoints)})
        return [(create_update_message(u), enc.npoints) for u in ups]


def cpu_seconds():
    t = os.times()
    return t.user + t.system


# Which WebSocket client the workers use (`--client`; set before they fork).
CLIENT = "raw"


class RawWs(asyncio.Protocol):
    """A lean WebSocket client on asyncio's transport, for the ingest and latency loops: the
    clients share the machine's 2 cores with the server under test, and the `websockets`
    library's took 0.36–0.79 cores at 12,000 frames/s (0.26–0.30 for this one; README). Frames are built and masked in a few C-level operations, replies are parsed from
    the buffer in `data_received` and handed to `on_message` without a task wake-up. The
    frames on the wire are ordinary RFC 6455 client frames (masked, random key per socket).
    Used for both servers; `--client websockets` runs the library instead."""

    def __init__(self, port, path):
        import base64
        self.request = ("GET %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                        "Sec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n\r\n"
                        % (path, port, base64.b64encode(os.urandom(16)).decode())).encode()
        loop = asyncio.get_running_loop()
        self.opened = loop.create_future()
        self.buf = bytearray()
        self.upgraded = False
        self.queue = []  # messages while nobody handles them (`recv`)
        self.waiter = None
        self.on_message = None
        self.on_close = None
        self.closed = None
        self.drained = None
        self.mask = os.urandom(4)

    # -- asyncio callbacks

    def connection_made(self, transport):
        self.transport = transport
        transport.write(self.request)

    def data_received(self, data):
        buf = self.buf
        buf += data
        if not self.upgraded:
            end = buf.find(b"\r\n\r\n")
            if end < 0:
                return
            head = bytes(buf[:end])
            del buf[:end + 4]
            if b" 101 " not in head.split(b"\r\n", 1)[0]:
                retry = re.search(rb"\r\nRetry-After: *(\d+)", head, re.IGNORECASE)
                error = RuntimeError("no upgrade: %r" % head[:200])
                # The relay's admission asks a client that opens too many sockets at once to
                # come back (503, Retry-After): `connect` does, instead of failing the run.
                error.retry_after = int(retry.group(1)) if b" 503 " in head.split(b"\r\n", 1)[0] and retry else None
                self.opened.set_exception(error)
                self.transport.close()
                return
            self.upgraded = True
            self.opened.set_result(None)
        pos, end = 0, len(buf)
        while end - pos >= 2:
            n, hdr = buf[pos + 1] & 0x7F, 2
            if n == 126:
                if end - pos < 4:
                    break
                n, hdr = int.from_bytes(buf[pos + 2:pos + 4], "big"), 4
            elif n == 127:
                if end - pos < 10:
                    break
                n, hdr = int.from_bytes(buf[pos + 2:pos + 10], "big"), 10
            if end - pos < hdr + n:
                break
            opcode = buf[pos] & 0x0F
            payload = bytes(buf[pos + hdr:pos + hdr + n])
            pos += hdr + n
            if opcode == 8:
                self.transport.close()
                break
            if opcode == 9:
                # A ping (journal serve sends one every 30 s and closes a socket that does not answer).
                self.transport.write(self.frame(payload, opcode=10))
                continue
            if opcode in (1, 2):
                if self.on_message is not None:
                    self.on_message(payload)
                else:
                    self.queue.append(payload)
                    if self.waiter is not None and not self.waiter.done():
                        self.waiter.set_result(None)
        del buf[:pos]

    def connection_lost(self, exc):
        self.closed = exc or ConnectionError("the server closed the connection")
        if not self.opened.done():
            self.opened.set_exception(self.closed)
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_result(None)
        if self.drained is not None and not self.drained.done():
            self.drained.set_result(None)
        if self.on_close is not None:
            self.on_close(self.closed)

    def pause_writing(self):
        self.drained = asyncio.get_running_loop().create_future()

    def resume_writing(self):
        if self.drained is not None and not self.drained.done():
            self.drained.set_result(None)
        self.drained = None

    # -- what the loops call (the `websockets` calls they use)

    def frame(self, data, opcode=None):
        payload, kind = (data.encode(), 1) if isinstance(data, str) else (data, 2)
        opcode = opcode or kind
        n = len(payload)
        if n < 126:
            head = bytes((0x80 | opcode, 0x80 | n))
        elif n < 65536:
            head = bytes((0x80 | opcode, 0xFE)) + n.to_bytes(2, "big")
        else:
            head = bytes((0x80 | opcode, 0xFF)) + n.to_bytes(8, "big")
        key = (self.mask * (n // 4 + 1))[:n]
        return head + self.mask + (int.from_bytes(payload, "little") ^ int.from_bytes(key, "little")).to_bytes(n, "little")

    async def send(self, data):
        await self.send_many((data,))

    async def send_many(self, datas):
        if self.closed is not None:
            raise self.closed
        self.transport.write(b"".join(self.frame(d) for d in datas))
        if self.drained is not None:
            await self.drained

    async def recv(self, decode=False):
        while not self.queue:
            if self.closed is not None:
                raise self.closed
            self.waiter = asyncio.get_running_loop().create_future()
            await self.waiter
        return self.queue.pop(0)

    async def close(self):
        if self.closed is None:
            self.transport.write(self.frame(b"\x03\xe8", opcode=8))  # 1000: normal closure
            self.transport.close()


async def connect(proto, board, blocks=False):
    if CLIENT == "raw":
        from urllib.parse import urlparse
        loop = asyncio.get_running_loop()
        for attempt in range(10):
            _, ws = await loop.create_connection(lambda: RawWs(proto.port, urlparse(proto.url(board)).path), "127.0.0.1", proto.port)
            try:
                await asyncio.wait_for(ws.opened, 120)
                break
            except RuntimeError as error:
                if getattr(error, "retry_after", None) is None or attempt == 9:
                    raise
                await asyncio.sleep(error.retry_after)
        await proto.open(ws, blocks)
        return ws
    from websockets.asyncio.client import connect as ws_connect
    ws = await ws_connect(proto.url(board), compression=None, max_size=None, ping_interval=None,
                          open_timeout=120, close_timeout=5)
    await proto.open(ws, blocks)
    return ws


class Client:
    def __init__(self, proto, board, index):
        self.proto, self.board, self.index = proto, board, index
        self.sent = 0
        self.acked = 0
        self.cum = [0]  # points in frames 1..i
        self.send_times = []
        self.latencies = []
        self.ack_event = asyncio.Event()
        self.first_send = None
        self.last_ack = None
        self.bytes_in = 0
        self.record_latency = False
        self.error = None

    def handle(self, m):
        self.bytes_in += len(m)
        n = self.proto.acked(m)
        if n is not None and n > self.acked:
            now = time.monotonic()
            if self.record_latency:
                st = self.send_times
                self.latencies.extend(now - st[i] for i in range(self.acked, n))
            self.acked = n
            self.last_ack = now
            self.ack_event.set()

    def failed(self, e):
        self.error = self.error or repr(e)
        self.ack_event.set()

    async def reader(self):
        ws = self.ws
        if isinstance(ws, RawWs):
            # Messages are handled as they are parsed; this task only waits for the end.
            done = asyncio.get_running_loop().create_future()

            def closed(e):
                if not done.done():
                    done.set_result(e)
            ws.on_close = closed
            try:
                for m in ws.queue:
                    self.handle(m)
                ws.queue.clear()
                ws.on_message = self._handle_or_fail
                if ws.closed is not None:
                    closed(ws.closed)
                self.failed(await done)
            except asyncio.CancelledError:
                pass
            return
        try:
            while True:
                self.handle(await ws.recv(decode=False))
        except Exception as e:  # closed
            if not isinstance(e, asyncio.CancelledError):
                self.failed(e)
            else:
                self.ack_event.set()

    def _handle_or_fail(self, m):
        try:
            self.handle(m)
        except Exception as e:  # an error frame
            self.failed(e)

    async def send(self, frame, points):
        await self.ws.send(frame)
        self.sent += 1
        self.cum.append(self.cum[-1] + points)

    async def send_batch(self, batch):
        """Several frames in one write: the library frames and masks each (its sans-I/O
        protocol), then writes and drains once; the frames are the same as `send`'s."""
        ws = self.ws
        if isinstance(ws, RawWs):
            await ws.send_many([frame for frame, _ in batch])
        else:
            async with ws.send_context():
                for frame, _ in batch:
                    if isinstance(frame, str):
                        ws.protocol.send_text(frame.encode())
                    else:
                        ws.protocol.send_binary(frame)
        cum = self.cum
        for _, points in batch:
            cum.append(cum[-1] + points)
        self.sent += len(batch)

    async def wait_acked(self, n, timeout):
        end = time.monotonic() + timeout
        while self.acked < n and self.error is None:
            self.ack_event.clear()
            left = end - time.monotonic()
            if left <= 0:
                break
            try:
                await asyncio.wait_for(self.ack_event.wait(), left)
            except asyncio.TimeoutError:
                break


async def ingest_loop(c, pool, tag, per_point, window, deadline, args_drain):
    """Sends strokes as fast as the window allows until `deadline`: the frames that fit in
    the window go out in one batch (one write), then it waits for acks."""
    k = 0
    pending = []
    c.first_send = time.monotonic()
    while time.monotonic() < deadline and c.error is None:
        room = window - (c.sent - c.acked)
        if room <= 0:
            c.ack_event.clear()
            if window - (c.sent - c.acked) <= 0:
                await c.ack_event.wait()
            continue
        while len(pending) < room:
            enc = pool[(c.index * 7919 + k) % len(pool)]
            pending += c.proto.stroke_frames(enc, stroke_uuid(tag, c.index, k), per_point)
            k += 1
        batch, pending = pending[:room], pending[room:]
        await c.send_batch(batch)
    await c.wait_acked(c.sent, args_drain)


async def latency_loop(c, pool, tag, hz, start, deadline, warmup):
    period = 1.0 / hz
    k, tick = 0, 0
    frames = []
    while c.error is None:
        if not frames:
            enc = pool[(c.index * 7919 + k) % len(pool)]
            frames = c.proto.stroke_frames(enc, stroke_uuid(tag, c.index, k), True)
            k += 1
        due = start + tick * period
        if due >= deadline:
            break
        delay = due - time.monotonic()
        if delay > 0:
            await asyncio.sleep(delay)
        frame, pts = frames.pop(0)
        c.send_times.append(time.monotonic())
        await c.send(frame, pts)
        tick += 1
    await c.wait_acked(c.sent, 30)


def worker_main(conn, proto_kind, port, specs, scenario, params):
    """A worker process: connects its clients, reports 'ready', runs on 'go', reports 'done'."""
    try:
        asyncio.run(worker_async(conn, proto_kind, port, specs, scenario, params))
    except Exception as e:
        conn.send(("error", repr(e)))


async def worker_async(conn, proto_kind, port, specs, scenario, params):
    pool = params.get("pool")
    clients = []

    async def open_one(board, index):
        proto = OursProto(port) if proto_kind == "ours" else PeerProto(port)
        c = Client(proto, board, index)
        c.ws = await connect(proto, board)
        return c

    sem = asyncio.Semaphore(32)

    async def guarded(board, index):
        async with sem:
            return await open_one(board, index)

    clients = await asyncio.gather(*(guarded(b, i) for b, i in specs))
    readers = [asyncio.create_task(c.reader()) for c in clients]
    loop = asyncio.get_running_loop()
    conn.send(("ready",))
    msg = await loop.run_in_executor(None, conn.recv)
    cpu0 = cpu_seconds()
    if scenario == "ingest":
        go, seconds = msg[1], params["seconds"]
        delay = go - time.monotonic()
        if delay > 0:
            await asyncio.sleep(delay)
        await asyncio.gather(*(ingest_loop(c, pool, params["tag"], params["per_point"], params["window"], go + seconds, params["drain"]) for c in clients))
    elif scenario == "latency":
        go, seconds = msg[1], params["seconds"]
        for c in clients:
            c.record_latency = True
        await asyncio.gather(*(latency_loop(c, pool, params["tag"], params["hz"], go + (c.index % 97) / 97 / params["hz"],
                                            go + seconds, params["warmup"]) for c in clients))
    elif scenario == "idle":
        pass  # msg was 'close'
    cpu1 = cpu_seconds()
    result = {"cpu": cpu1 - cpu0, "clients": []}
    for c in clients:
        r = {"sent": c.sent, "acked": c.acked, "points": c.cum[min(c.acked, c.sent)],
             "pointsSent": c.cum[-1], "firstSend": c.first_send, "lastAck": c.last_ack, "error": c.error}
        if scenario == "latency":
            # drop the warm-up (frames sent in the first `warmup` seconds)
            start = msg[1] + params["warmup"]
            kept = [(l, t) for l, t in zip(c.latencies, c.send_times) if t >= start]
            r["latencies"] = [l for l, _ in kept]
            r["sentAt"] = [t - msg[1] for _, t in kept]
        result["clients"].append(r)
    for c in clients:
        await c.ws.close()
    for t in readers:
        t.cancel()
    conn.send(("done", result))


class Workers:
    """Worker processes holding `specs` [(board, index)], split round-robin."""

    def __init__(self, n, proto_kind, port, specs, scenario, params):
        ctx = mp.get_context("fork")
        self.procs, self.pipes = [], []
        n = max(1, min(n, len(specs)))
        for w in range(n):
            parent, child = ctx.Pipe()
            p = ctx.Process(target=worker_main, args=(child, proto_kind, port, specs[w::n], scenario, params), daemon=True)
            p.start()
            self.procs.append(p)
            self.pipes.append(parent)
        for pipe in self.pipes:
            m = pipe.recv()
            if m[0] != "ready":
                self.kill()
                raise RuntimeError("worker: %s" % (m,))

    def go(self, message):
        for pipe in self.pipes:
            pipe.send(message)

    def results(self):
        out = []
        for pipe in self.pipes:
            m = pipe.recv()
            if m[0] != "done":
                raise RuntimeError("worker: %s" % (m,))
            out.append(m[1])
        for p in self.procs:
            p.join(10)
        return out

    def kill(self):
        for p in self.procs:
            if p.is_alive():
                p.kill()


# ----------------------------------------------------------------------------- servers


def free_port():
    """A port free now, below the kernel's range of ephemeral ports where there is room: a port
    from that range (what binding port 0 gives) can be handed to an outgoing connection while
    the relay that owns it is down between a kill and its restart, which then cannot listen
    (a cluster campaign's node exiting 74, "port … is in use")."""
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            ephemeral_low = int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        ephemeral_low = 0
    candidates = random.Random().sample(range(10000, ephemeral_low), 50) if ephemeral_low > 11000 else []
    for port in candidates + [0]:
        s = socket.socket()
        try:
            s.bind(("127.0.0.1", port))
            return s.getsockname()[1]
        except OSError:
            continue
        finally:
            s.close()
    raise OSError("no free port on 127.0.0.1")


def proc_cpu(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def proc_rss(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


def load1():
    return os.getloadavg()[0]


class Server:
    def __init__(self, kind, args, data):
        self.kind, self.data = kind, data
        self.port = free_port()
        if kind == "ours":
            cmd = [args.journal, "serve", "--port", str(self.port), "--data", data]
            # Throughput, not fairness, is measured here: the per-connection event budget (a
            # policy against one flooding drawer) is lifted where the build has one.
            if "--max-events-per-second" in subprocess.run([args.journal, "serve", "--help"], capture_output=True, text=True).stdout:
                cmd += ["--max-events-per-second", "0"]
            if args.auth:
                # Clients present an admin token for every board (workers inherit it).
                os.environ["RELAY_LOAD_TOKEN"] = subprocess.run(
                    [args.journal, "token", "--data", data, "--board", "*", "--scope", "admin", "--ttl", "1d"],
                    check=True, capture_output=True, text=True).stdout.strip()
            else:
                cmd.append("--open")
        else:
            cmd = [sys.executable, os.path.join(HERE, "peer_server.py"), "--port", str(self.port), "--data", data]
        self.log = open(data.rstrip("/") + ".log", "w")
        self.proc = subprocess.Popen(cmd, stdout=self.log, stderr=subprocess.STDOUT)
        end = time.time() + 30
        while time.time() < end:
            try:
                socket.create_connection(("127.0.0.1", self.port), 0.2).close()
                break
            except OSError:
                if self.proc.poll() is not None:
                    raise RuntimeError("%s server exited: see %s" % (kind, self.log.name))
                time.sleep(0.05)
        else:
            raise RuntimeError("%s server did not listen" % kind)

    @property
    def pid(self):
        return self.proc.pid

    def stop(self):
        self.proc.send_signal(signal.SIGINT)
        try:
            self.proc.wait(15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()


def fresh_dir(root, name):
    path = os.path.join(root, name)
    shutil.rmtree(path, ignore_errors=True)
    os.makedirs(path)
    return path


# ----------------------------------------------------------------------------- scenarios


def run_ingest(args, kind, pool, clients, per_point, per_board, tag):
    data = fresh_dir(args.scratch, "%s-ingest" % kind)
    server = Server(kind, args, data)
    try:
        specs = [("i%d" % (i // per_board), i) for i in range(clients)]
        params = {"pool": pool, "seconds": args.seconds, "tag": tag, "per_point": per_point,
                  "window": args.window if per_point else args.stroke_window, "drain": args.drain}
        workers = Workers(args.workers, kind, server.port, specs, "ingest", params)
        la = load1()
        s0 = proc_cpu(server.pid)
        go = time.monotonic() + 0.2
        workers.go(("go", go))
        results = workers.results()
        s1 = proc_cpu(server.pid)
    finally:
        server.stop()
    cl = [c for r in results for c in r["clients"]]
    points = sum(c["points"] for c in cl)
    sent = sum(c["pointsSent"] for c in cl)
    errors = [c["error"] for c in cl if c["error"]]
    end = max((c["lastAck"] or go) for c in cl)
    wall = end - go
    return {"clients": clients, "frames": "point" if per_point else "stroke", "clientsPerBoard": per_board,
            "points": points, "pointsSent": sent, "frameCount": sum(c["acked"] for c in cl), "window": params["window"],
            "seconds": round(wall, 3), "pointsPerSecond": round(points / wall) if wall > 0 else 0,
            "serverCPU": round((s1 - s0) / wall, 2), "clientCPU": round(sum(r["cpu"] for r in results) / wall, 2),
            "load1": round(la, 2), "errors": errors[:3], "errorCount": len(errors)}


def run_latency(args, kind, pool, tag):
    data = fresh_dir(args.scratch, "%s-latency" % kind)
    server = Server(kind, args, data)
    n, per_board = args.latency_clients, args.latency_per_board
    try:
        specs = [("l%d" % (i // per_board), i) for i in range(n)]
        params = {"pool": pool, "seconds": args.latency_seconds, "tag": tag, "hz": args.latency_hz, "warmup": 1.0}
        workers = Workers(args.workers, kind, server.port, specs, "latency", params)
        la = load1()
        s0 = proc_cpu(server.pid)
        go = time.monotonic() + 0.2
        workers.go(("go", go))
        results = workers.results()
        s1 = proc_cpu(server.pid)
    finally:
        server.stop()
    wall = time.monotonic() - go
    cl = [c for r in results for c in r["clients"]]
    lat = sorted(l for c in cl for l in c["latencies"])
    acked = sum(c["acked"] for c in cl)
    errors = [c["error"] for c in cl if c["error"]]
    unacked = sum(c["sent"] - c["acked"] for c in cl)

    def pct(p):
        return round(lat[min(len(lat) - 1, int(p / 100 * len(lat)))] * 1000, 2) if lat else None
    # When the slow acks were sent: per quarter second, how many took over 50 ms (stalls that
    # hit every client at once show as a spike here, a slow client as a flat line).
    slow = {}
    for c in cl:
        for l, t in zip(c["latencies"], c.get("sentAt", [])):
            if l > 0.05:
                slow[int(t * 4)] = slow.get(int(t * 4), 0) + 1
    timeline = [slow.get(q, 0) for q in range(int(args.latency_seconds * 4))]
    return {"clients": n, "hz": args.latency_hz, "clientsPerBoard": per_board, "seconds": args.latency_seconds,
            "samples": len(lat), "framesSent": sum(c["sent"] for c in cl), "p50Ms": pct(50), "p90Ms": pct(90), "p99Ms": pct(99),
            "maxMs": round(lat[-1] * 1000, 2) if lat else None, "unacked": unacked, "acked": acked,
            "note": "percentiles over acknowledged frames sent after a 1 s warm-up; unacked = frames still unacknowledged 30 s after sending stopped",
            "framesPerSecond": round(sum(c["sent"] for c in cl) / args.latency_seconds),
            "serverCPU": round((s1 - s0) / wall, 2), "clientCPU": round(sum(r["cpu"] for r in results) / wall, 2),
            "load1": round(la, 2), "errors": errors[:3], "errorCount": len(errors),
            "slowPerQuarterSecond": timeline}


def settle_rss(pid, seconds=1.5):
    time.sleep(seconds)
    return proc_rss(pid)


def run_memory(args, kind):
    data = fresh_dir(args.scratch, "%s-memory" % kind)
    server = Server(kind, args, data)
    nb, nc = args.memory_boards, args.memory_connections
    try:
        la = load1()
        rss0 = settle_rss(server.pid)
        boards = Workers(args.workers, kind, server.port, [("m%d" % i, i) for i in range(nb)], "idle", {})
        rss1 = settle_rss(server.pid)
        conns = Workers(args.workers, kind, server.port, [("m0", 100000 + i) for i in range(nc)], "idle", {})
        rss2 = settle_rss(server.pid)
        conns.go(("close",))
        conns.results()
        boards.go(("close",))
        boards.results()
        rss3 = settle_rss(server.pid, 3)
    finally:
        server.stop()
    return {"boards": nb, "connections": nc, "rssStartBytes": rss0, "rssBoardsBytes": rss1,
            "rssConnectionsBytes": rss2, "rssAfterCloseBytes": rss3,
            "perBoardBytes": round((rss1 - rss0) / nb), "perConnectionBytes": round((rss2 - rss1) / nc), "load1": round(la, 2)}


# -- late joiner


def prepare_ours_board(args, data, board):
    path = os.path.join(data, board)
    files = sorted(f for f in os.listdir(args.workload) if f.startswith("replica-") and f.endswith(".ndjson"))
    t0 = time.monotonic()
    subprocess.run([args.journal, "init", path], check=True, stdout=subprocess.DEVNULL)
    for f in files:
        subprocess.run([args.journal, "record", "-C", path, os.path.join(args.workload, f)], check=True,
                       stdout=subprocess.DEVNULL)
    return time.monotonic() - t0


class RawSocket:
    """A minimal WebSocket client on a plain socket, for the late joiner: the catch-up is
    millions of small frames, and the `websockets` library spends ~15 µs of Python per frame
    receiving them (the first measurement: 30 s of client CPU for 2M frames), so the client
    was the bottleneck. This reads big chunks and walks frame headers (server frames are
    unmasked). Used for both servers' joins."""

    def __init__(self, port, path):
        import base64
        self.sock = socket.create_connection(("127.0.0.1", port))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        key = base64.b64encode(os.urandom(16)).decode()
        self.sock.sendall(("GET %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                           "Sec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n\r\n" % (path, port, key)).encode())
        buf = b""
        while b"\r\n\r\n" not in buf:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise RuntimeError("closed during the handshake")
            buf += chunk
        head, self.buf = buf.split(b"\r\n\r\n", 1)
        if b" 101 " not in head.split(b"\r\n", 1)[0]:
            raise RuntimeError("no upgrade: %r" % head[:200])
        self.wire = len(self.buf)
        self.pos = 0

    def send(self, payload, opcode):
        mask = os.urandom(4)
        n = len(payload)
        if n < 126:
            head = bytes([0x80 | opcode, 0x80 | n])
        elif n < 65536:
            head = bytes([0x80 | opcode, 0x80 | 126]) + n.to_bytes(2, "big")
        else:
            head = bytes([0x80 | opcode, 0x80 | 127]) + n.to_bytes(8, "big")
        masked = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
        self.sock.sendall(head + mask + masked)

    def frames(self):
        """Yields (opcode, memoryview of the payload) for every frame; the view is valid until
        the next one."""
        while True:
            buf, pos = self.buf, self.pos
            end = len(buf)
            while True:
                if end - pos < 2:
                    break
                b1 = buf[pos + 1] & 0x7F
                hdr = 2
                if b1 == 126:
                    if end - pos < 4:
                        break
                    b1 = int.from_bytes(buf[pos + 2:pos + 4], "big")
                    hdr = 4
                elif b1 == 127:
                    if end - pos < 10:
                        break
                    b1 = int.from_bytes(buf[pos + 2:pos + 10], "big")
                    hdr = 10
                if end - pos < hdr + b1:
                    break
                opcode = buf[pos] & 0x0F
                self.pos = pos + hdr + b1
                yield opcode, buf, pos + hdr, pos + hdr + b1
                pos = self.pos
            rest = buf[pos:]
            total = 0  # the next frame's size, if a big one
            if len(rest) >= 10 and rest[1] & 0x7F == 127:
                total = int.from_bytes(rest[2:10], "big") + 10
            if total > (1 << 20):  # read it whole into one buffer
                big = bytearray(total)
                big[:len(rest)] = rest
                view, have = memoryview(big), len(rest)
                while have < total:
                    n = self.sock.recv_into(view[have:], min(total - have, 16 << 20))
                    if n == 0:
                        return
                    have += n
                    self.wire += n
                self.buf, self.pos = big, 0
                continue
            chunk = self.sock.recv(1 << 20)
            if not chunk:
                return
            self.wire += len(chunk)
            self.buf = rest + chunk if rest else chunk
            self.pos = 0

    def close(self):
        try:
            self.send(b"\x03\xe8", 0x8)
        except OSError:
            pass
        self.sock.close()


def join_ours(port, board, blocks):
    t0 = time.monotonic()
    c0 = cpu_seconds()
    ws = RawSocket(port, "/boards/%s/ws" % board)
    hello = '{"type":"hello","have":{}' + (',"blocks":true' if blocks else "") + token_field() + "}"
    ws.send(hello.encode(), 0x1)
    text = binary = events = binframes = 0
    caught = error = None
    for opcode, buf, a, b in ws.frames():
        if opcode == 0x1:
            text += b - a
            if b - a >= 18 and buf[a + 9] == 0x63 and buf[a:a + 18] == b'{"type":"caughtUp"':  # 'c'
                caught = json.loads(buf[a:b])
                break
            if b - a >= 15 and buf[a + 9] == 0x65 and buf[a:a + 15] == b'{"type":"error"':  # 'e'
                error = bytes(buf[a:b]).decode()
                break
            events += 1
        elif opcode == 0x2:
            binary += b - a
            binframes += 1
        elif opcode == 0x8:
            error = "closed by the server: %r" % bytes(buf[a:b])
            break
    else:
        error = error or "connection ended before caughtUp"
    t1 = time.monotonic()
    c1 = cpu_seconds()
    wire = ws.wire - (len(ws.buf) - ws.pos)
    ws.close()
    return {"seconds": round(t1 - t0, 3), "textBytes": text, "binaryBytes": binary, "wireBytes": wire,
            "eventMessages": events, "binaryFrames": binframes,
            "caughtUpEvents": caught.get("events") if caught else None, "clientCPUSeconds": round(c1 - c0, 2),
            "error": error}


def join_peer(port, board):
    from pycrdt import Doc, Map, create_sync_message, read_message
    t0 = time.monotonic()
    c0 = cpu_seconds()
    ws = RawSocket(port, "/" + board)
    doc = Doc()
    strokes = doc.get("strokes", type=Map)
    ws.send(create_sync_message(doc), 0x2)  # SYNC_STEP1 with an empty state vector
    total = 0
    error = "connection ended before SYNC_STEP2"
    for opcode, buf, a, b in ws.frames():
        total += b - a
        if opcode == 0x2 and buf[a] == 0 and buf[a + 1] == 1:  # SYNC_STEP2: the whole document
            doc.apply_update(read_message(bytes(buf[a + 2:b])))
            error = None
            break
    t1 = time.monotonic()
    c1 = cpu_seconds()
    wire = ws.wire - (len(ws.buf) - ws.pos)
    ws.close()
    points = sum(len(s["points"]) for s in strokes.values())
    return {"seconds": round(t1 - t0, 3), "binaryBytes": total, "wireBytes": wire, "points": points,
            "strokes": len(strokes), "clientCPUSeconds": round(c1 - c0, 2), "error": error}


def prepare_peer_store(data, board, encs):
    """Writes the whole session into the room's SQLite store offline, as ONE update holding the
    whole document (what a store holds after a checkpoint squashed its history). Feeding the
    10,000 strokes through the server, one committed update each, took minutes per run."""
    from pycrdt import Array, Doc, Map
    from pycrdt.store import SQLiteYStore
    doc = Doc()
    strokes = doc.get("strokes", type=Map)
    for k, enc in enumerate(encs):
        with doc.transaction():
            strokes[stroke_uuid(0xfeed, 0, k)] = Map({"color": enc.color, "width": enc.width, "points": Array(enc.ypoints)})
    update = doc.get_update()

    class Store(SQLiteYStore):
        db_path = os.path.join(data, board + ".db")

    async def write():
        store = Store(path=board)
        import anyio
        async with anyio.create_task_group() as tg:
            await tg.start(store.start)
            await store.db_initialized.wait()
            await store.write(update)
            await store.stop()
            tg.cancel_scope.cancel()
    asyncio.run(write())
    return sum(e.npoints for e in encs), len(update)


def run_join(args, kind, session_encs):
    data = fresh_dir(args.scratch, "%s-join" % kind)
    out = {"load1": round(load1(), 2)}
    if kind == "ours":
        out["prepareSeconds"] = round(prepare_ours_board(args, data, "std"), 2)
        out["preparedWith"] = "journal init DATA/std; journal record -C DATA/std replica-I.ndjson (I = 0..3)"
    else:
        t0 = time.monotonic()
        out["storedPoints"], out["storedUpdateBytes"] = prepare_peer_store(data, "std", session_encs)
        out["prepareSeconds"] = round(time.monotonic() - t0, 2)
        out["preparedWith"] = "the session's strokes as one Y update written to the room's SQLiteYStore offline"
    server = Server(kind, args, data)
    try:
        rows = []
        for label in ("cold", "warm"):
            la = load1()
            s0 = proc_cpu(server.pid)
            if kind == "ours":  # the board stays open after the cold join
                r = join_ours(server.port, "std", args.blocks)
            elif label == "cold":  # the room is loaded from its store by this join
                r = join_peer(server.port, "std")
            else:
                r = asyncio.run(join_peer_warm(server.port, "std"))
            r["serverCPUSeconds"] = round(proc_cpu(server.pid) - s0, 2)
            r["load1"] = round(la, 2)
            r["case"] = label
            rows.append(r)
        out["joins"] = rows
        out["rssAfterBytes"] = proc_rss(server.pid)
    finally:
        server.stop()
    return out


async def join_peer_warm(port, board):
    """A second joiner while a first client holds the room open (the room stays loaded)."""
    from websockets.asyncio.client import connect as ws_connect
    holder = await ws_connect("ws://127.0.0.1:%d/%s" % (port, board), compression=None, max_size=None, ping_interval=None)
    await holder.recv()  # step1: the room is loaded
    r = await asyncio.get_running_loop().run_in_executor(None, join_peer, port, board)
    await holder.close()
    return r


# ----------------------------------------------------------------------------- report


def mb(n):
    return "%.1f MB" % (n / 1e6)


def print_table(res):
    kinds = [k for k in ("ours", "peer") if k in res["servers"]]
    names = {"ours": "journal serve", "peer": "pycrdt-websocket"}
    print("\nrelay-load  (%s; %d CPUs; load before run %.2f)" % (res["date"], res["cpus"], res["load1Before"]))
    for k in kinds:
        s = res["servers"][k]
        if "ingest" in s:
            print("\n[%s] durable ingest (%s)" % (names[k], "ack after fsync" if k == "ours" else "store-commit notice"))
            print("  %7s %6s %5s %12s %10s %8s %8s %6s %s" % ("clients", "frames", "c/brd", "points/s", "points", "srvCPU", "cliCPU", "load", "errors"))
            for r in s["ingest"]:
                print("  %7d %6s %5d %12s %10d %8.2f %8.2f %6.2f %s" % (r["clients"], r["frames"], r["clientsPerBoard"],
                      "{:,}".format(r["pointsPerSecond"]), r["points"], r["serverCPU"], r["clientCPU"], r["load1"], r["errorCount"]))
        if "latency" in s:
            r = s["latency"]
            print("\n[%s] ack latency, %d clients x %d Hz, one point per frame, %d per board, %gs" % (
                names[k], r["clients"], r["hz"], r["clientsPerBoard"], r["seconds"]))
            print("  p50 %s ms  p90 %s ms  p99 %s ms  max %s ms  samples %d  acked %d of %d sent  frames/s %d  srvCPU %.2f  cliCPU %.2f  load %.2f  errors %d" % (
                r["p50Ms"], r["p90Ms"], r["p99Ms"], r["maxMs"], r["samples"], r["acked"], r["framesSent"], r["framesPerSecond"],
                r["serverCPU"], r["clientCPU"], r["load1"], r["errorCount"]))
            print("  acks over 50 ms, by quarter second sent: %s" % " ".join(str(x) for x in r.get("slowPerQuarterSecond", [])))
        if "memory" in s:
            r = s["memory"]
            print("\n[%s] memory (VmRSS): start %s; +%d boards (1 conn each) %s; +%d idle conns %s; all closed %s" % (
                names[k], mb(r["rssStartBytes"]), r["boards"], mb(r["rssBoardsBytes"]), r["connections"],
                mb(r["rssConnectionsBytes"]), mb(r["rssAfterCloseBytes"])))
            print("  per board (with its first connection) %s KB, per further idle connection %s KB" % (
                round(r["perBoardBytes"] / 1e3, 1), round(r["perConnectionBytes"] / 1e3, 1)))
        if "join" in s:
            r = s["join"]
            print("\n[%s] late joiner on the standard board (prepared in %ss: %s)" % (names[k], r.get("prepareSeconds"), r.get("preparedWith")))
            for j in r["joins"]:
                print("  %-5s %7.2fs  wire %s  (text %s, binary %s)  srvCPU %.2fs cliCPU %.2fs load %.2f%s" % (
                    j["case"], j["seconds"], mb(j["wireBytes"]), mb(j.get("textBytes", 0)), mb(j.get("binaryBytes", 0)),
                    j["serverCPUSeconds"], j["clientCPUSeconds"], j["load1"],
                    ("  events %s" % j.get("caughtUpEvents")) if k == "ours" else ("  points %s" % j.get("points"))) +
                    (("  ERROR " + j["error"]) if j.get("error") else ""))


def ratio_summary(ratios, draws=4000):
    """The median of per-round ratios and a 90% bootstrap interval of it: a ratio that pairs
    swing ±15% around can still be placed within a few percent once enough rounds are in."""
    import random
    import statistics
    rng = random.Random(1)
    medians = sorted(statistics.median(rng.choices(ratios, k=len(ratios))) for _ in range(draws))
    return statistics.median(ratios), medians[int(0.05 * draws)], medians[int(0.95 * draws) - 1]


def measure_round(args, order, clients, frames, pool, tag, measured):
    """One round of `run_paired`: each build's rows, in `order`, into `measured`."""
    for name, build in order:
        row = {}
        if "ingest" in args.scenarios.split(","):
            r = run_ingest(build, "ours", pool, clients, frames == "point", args.per_board, tag)
            tag += 1
            row["ingest points/s"] = r["pointsPerSecond"]
            row["ingest server CPU per point"] = r["serverCPU"] / max(1, r["pointsPerSecond"])
        if "latency" in args.scenarios.split(","):
            r = run_latency(build, "ours", pool, tag)
            tag += 1
            row["ack p50"], row["ack p99"] = r["p50Ms"], r["p99Ms"]
            row["latency server CPU"] = r["serverCPU"]
        measured[name] = row


def run_paired(args, pool):
    """`--baseline`: the same rows for two builds, alternated round by round (A B, B A, ...) so
    that a machine growing busier or quieter shifts both; prints each round's ratios and their
    median with its interval (candidate ÷ baseline; below 1 is faster for times, slower for rates)."""
    import copy
    candidate, baseline = copy.copy(args), copy.copy(args)
    baseline.journal = args.baseline
    clients = int(args.clients.split(",")[0])
    frames = args.frames.split(",")[0]
    metrics = {}  # name -> [(candidate, baseline)]
    tag = int(time.time())
    for round_ in range(args.rounds):
        order = [("candidate", candidate), ("baseline", baseline)]
        if round_ % 2:
            order.reverse()
        measured = {}
        try:
            measure_round(args, order, clients, frames, pool, tag, measured)
        except Exception as error:  # one refused or failed row loses its round, not the run
            print("round %d/%d: left out: %s" % (round_ + 1, args.rounds, str(error)[:200]), flush=True)
            continue
        finally:
            tag += 4
        line = []
        for key in measured["candidate"]:
            pair = (measured["candidate"][key], measured["baseline"][key])
            metrics.setdefault(key, []).append(pair)
            line.append("%s %.3f" % (key, pair[0] / pair[1] if pair[1] else float("nan")))
        print("round %d/%d (load %.2f): %s" % (round_ + 1, args.rounds, load1(), ", ".join(line)), flush=True)
    kept = len(next(iter(metrics.values()), []))
    print("candidate %s ÷ baseline %s, %d of %d rounds alternated; median ratio [90%% interval]:" % (
        args.journal, args.baseline, kept, args.rounds))
    summary = {}
    for key, pairs in metrics.items():
        ratios = [a / b for a, b in pairs if b]
        if not ratios:  # a figure the builds did not give (a wrapper's CPU: not the server's)
            print("  %-28s no ratio: no round measured it" % key)
            continue
        median, low, high = ratio_summary(ratios)
        summary[key] = {"median": round(median, 4), "low": round(low, 4), "high": round(high, 4), "pairs": pairs}
        print("  %-28s %.3f [%.3f, %.3f]" % (key, median, low, high))
    return summary


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--journal", default=os.path.join(REPO, ".build", "release", "journal"), help="the journal binary (release build)")
    ap.add_argument("--workload", default="/tmp/relay-load/std", help="folder of replica-*.ndjson (generated if missing)")
    ap.add_argument("--scratch", default="/tmp/relay-load/run", help="servers' data folders (wiped per scenario)")
    ap.add_argument("--servers", default="ours,peer")
    ap.add_argument("--scenarios", default="ingest,latency,memory,join")
    ap.add_argument("--clients", default="1,10,100", help="ingest: client counts")
    ap.add_argument("--frames", default="stroke,point", help="ingest: whole-stroke frames, per-point frames")
    ap.add_argument("--per-board", type=int, default=1, help="ingest: clients per board (1: each its own)")
    ap.add_argument("--seconds", type=float, default=5, help="ingest: sending time per row")
    ap.add_argument("--window", type=int, default=1024, help="unacknowledged per-point frames per client at most (the relay allows 4096)")
    ap.add_argument("--drain", type=float, default=30, help="ingest: seconds to wait for the last acks after sending stops")
    ap.add_argument("--stroke-window", type=int, default=64, help="the same for whole-stroke frames (64 x 200 points)")
    ap.add_argument("--workers", type=int, default=2, help="client processes")
    ap.add_argument("--client", choices=["raw", "websockets"], default="raw",
                    help="the clients' WebSocket code: a lean one on asyncio's transport (raw), or the websockets library (every run before 2026-11-25)")
    ap.add_argument("--pool", type=int, default=2000, help="distinct strokes the clients send (ids fresh per send)")
    ap.add_argument("--latency-clients", type=int, default=50)
    ap.add_argument("--latency-hz", type=float, default=240)
    ap.add_argument("--latency-seconds", type=float, default=10)
    ap.add_argument("--latency-per-board", type=int, default=1)
    ap.add_argument("--memory-boards", type=int, default=100)
    ap.add_argument("--memory-connections", type=int, default=1000)
    ap.add_argument("--blocks", action="store_true", help="late joiner asks for binary block catch-up (\"blocks\":true)")
    ap.add_argument("--json", help="write the results here")
    ap.add_argument("--auth", action="store_true",
                    help="our relay needs tokens (clients send an admin token in their hello); default: --open")
    ap.add_argument("--baseline", help="a second journal binary: ingest and latency of --journal against it, alternated (our server only)")
    ap.add_argument("--rounds", type=int, default=10, help="with --baseline: rounds, each one row per build")
    args = ap.parse_args()
    global CLIENT
    CLIENT = args.client
    servers = args.servers.split(",")
    scenarios = args.scenarios.split(",")
    if "ours" in servers and not os.access(args.journal, os.X_OK):
        sys.exit("no journal binary at %s: swift build -c release --product journal" % args.journal)
    if not os.path.isdir(args.workload) or not any(f.startswith("replica-") for f in os.listdir(args.workload)):
        print("generating the standard session into %s" % args.workload, file=sys.stderr)
        subprocess.run([sys.executable, which_generator.find("relay-load"), "--replicas", "4", "--strokes", "2500", "--points", "200",
                        "--seed", "1", "--out", args.workload], check=True)
    os.makedirs(args.scratch, exist_ok=True)
    res = {"tool": "relay-load", "version": 1, "date": time.strftime("%Y-%m-%d %H:%M:%S"), "cpus": os.cpu_count(),
           "load1Before": round(load1(), 2), "command": " ".join(sys.argv), "servers": {k: {} for k in servers}}
    pool = session = None
    if "ingest" in scenarios or "latency" in scenarios:
        pool = [Encoded(s) for s in read_strokes(args.workload, args.pool)]
    if "join" in scenarios and "peer" in servers:
        session = [Encoded(s) for s in read_strokes(args.workload)]
    if args.baseline:
        res["paired"] = run_paired(args, pool)
        if args.json:
            with open(args.json, "w") as f:
                json.dump(res, f, indent=1)
        return
    tag = int(time.time())
    for scenario in scenarios:
        for k in servers:
            print("%s: %s (load %.2f)" % (k, scenario, load1()), file=sys.stderr)
            if scenario == "ingest":
                rows = []
                for frames in args.frames.split(","):
                    for n in [int(x) for x in args.clients.split(",")]:
                        r = run_ingest(args, k, pool, n, frames == "point", args.per_board, tag)
                        tag += 1
                        print("  %s" % json.dumps(r), file=sys.stderr)
                        rows.append(r)
                res["servers"][k]["ingest"] = rows
            elif scenario == "latency":
                res["servers"][k]["latency"] = run_latency(args, k, pool, tag)
                tag += 1
            elif scenario == "memory":
                res["servers"][k]["memory"] = run_memory(args, k)
            elif scenario == "join":
                res["servers"][k]["join"] = run_join(args, k, session)
            else:
                sys.exit("unknown scenario %s" % scenario)
    res["load1After"] = round(load1(), 2)
    print_table(res)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
