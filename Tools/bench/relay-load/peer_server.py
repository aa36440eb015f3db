#!/usr/bin/env python3
"""The peer for relay_load.py: pycrdt-websocket's WebsocketServer with a pycrdt-store
SQLiteYStore per room, served by the `websockets` library on 127.0.0.1.

    python3 peer_server.py --port P --data DIR

`ws://127.0.0.1:P/<room>`: a room is a Y document (what our relay calls a board). Each room
persists into its own SQLite file, DIR/<room>.db (our relay keeps a journal per board), with
SQLiteYStore's defaults (a transaction per update, committed in SQLite's default rollback
journal mode with synchronous=FULL; a checkpoint every 100 updates). A room is loaded from its
store when its first client arrives and dropped when its last one leaves (the library's
`auto_clean_rooms`).

pycrdt-websocket has no acknowledgement. So that the load tool can time durability the way it
times our relay's acks, this server adds ONE thing to the library, outside it: when the store
has committed an update (`SQLiteYStore.write` returned), it sends the client the update came
from a binary frame `b"\\xfe"` + the number of that client's updates committed so far, as
decimal ASCII. A Y client ignores the unknown message type (0xfe is none of Y's). The update
is matched to its client through the room's Doc observer: `YRoom.serve` applies a client's
update synchronously after reading it, and the observer sees it inside that call, so the
channel being read at that moment is the origin. Nothing else is changed: the broadcast to the
room's other clients still goes out before (and regardless of) the store's commit, as the
library does it.
"""
import argparse
import asyncio
import logging
import os
import sys

from pycrdt import Doc
from pycrdt.store import SQLiteYStore, YDocNotFound
from pycrdt.websocket import WebsocketServer, YRoom
from pycrdt.websocket.websocket_server import exception_logger
import websockets
from websockets.asyncio.server import serve

COMMIT_NOTICE = 0xFE


class Channel:
    """A websockets connection as a pycrdt Channel, noting which channel is being read."""

    def __init__(self, websocket, path, room_state):
        self._ws = websocket
        self._path = path
        self._room_state = room_state
        self.committed = 0
        self.closed = False

    @property
    def path(self):
        return self._path

    def __aiter__(self):
        return self

    async def __anext__(self):
        try:
            message = await self._ws.recv()
        except websockets.ConnectionClosed:
            self.closed = True
            raise StopAsyncIteration()
        if isinstance(message, str):
            message = message.encode()
        # The update in this message (if any) is applied synchronously right after we return:
        # the Doc observer attributes it to this channel.
        self._room_state.current = self
        return message

    async def send(self, message):
        if self.closed:
            return
        try:
            await self._ws.send(message)
        except websockets.ConnectionClosed:
            self.closed = True

    async def recv(self):
        return await self.__anext__()


class RoomState:
    def __init__(self):
        self.current = None  # the channel whose message is being handled
        self.origin = {}  # update bytes -> channel, until the store committed it


def make_store_class(data_dir, room):
    class RoomStore(SQLiteYStore):
        db_path = os.path.join(data_dir, room + ".db")
    return RoomStore


class PeerServer(WebsocketServer):
    def __init__(self, data_dir, **kwargs):
        super().__init__(**kwargs)
        self.data_dir = data_dir
        self.states = {}

    async def get_room(self, name):
        if name not in self.rooms:
            state = RoomState()
            store_class = make_store_class(self.data_dir, name)

            class NoticingStore(store_class):
                async def write(self, data):
                    await super().write(data)
                    channel = state.origin.pop(data, None)
                    if channel is not None:
                        channel.committed += 1
                        await channel.send(bytes([COMMIT_NOTICE]) + str(channel.committed).encode())

            store = NoticingStore(path=name, log=self.log)
            ydoc = Doc()
            room = YRoom(ready=False, ystore=store, ydoc=ydoc,
                         exception_handler=exception_logger, log=self.log)

            def note_origin(event, state=state):
                if state.current is not None:
                    state.origin[event.update] = state.current

            room._noting = ydoc.observe(note_origin)
            self.rooms[name] = room
            self.states[name] = state
            await self.start_room(room)
            # The store starts in the room's broadcast task; load what it holds, then let the
            # room sync (ready=True subscribes the broadcast observer after the load, so the
            # loaded updates are not written back).
            async with store.start_lock:
                if not store.started.is_set():
                    await room._task_group.start(store.start)
            try:
                await store.apply_updates(ydoc)
            except YDocNotFound:
                pass
            room.ready = True
            await room.ydoc_observed.wait()
        return self.rooms[name]

    async def delete_room(self, *, name=None, room=None):
        if name is None:
            name = self.get_room_name(room)
        self.states.pop(name, None)
        r = self.rooms[name]
        await super().delete_room(name=name)
        if r.ystore is not None:
            await r.ystore.stop()


async def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--data", required=True)
    parser.add_argument("--bind", default="127.0.0.1")
    args = parser.parse_args()
    os.makedirs(args.data, exist_ok=True)
    logging.basicConfig(level=logging.WARNING)
    server = PeerServer(args.data, exception_handler=exception_logger,
                        log=logging.getLogger("peer"))

    async def handler(websocket):
        name = websocket.request.path.strip("/") or "default"
        await server.get_room(name)
        channel = Channel(websocket, name, server.states[name])
        await server.serve(channel)

    async with server:
        async with serve(handler, args.bind, args.port, compression=None, max_size=None,
                         max_queue=None, ping_interval=None):
            print(f"peer listening on {args.bind}:{args.port}", flush=True)
            await asyncio.Future()


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        sys.exit(0)
