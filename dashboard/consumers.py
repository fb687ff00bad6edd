"""The dashboard's websocket: a snapshot on connect, then deltas of the activity log.

``/ws/activity?after=ID`` resumes: after the snapshot come every event with an id above ID (in pages), then
live ones. Each event is sent once; the client keeps the last id it saw to reconnect with. Live events come in
the order their writers committed them: from several processes (REDIS_URL), an event may follow one with a
higher id, so what was sent is remembered by id (the newest SENT_KEPT), not only as the highest id.
"""
from __future__ import annotations

from collections import OrderedDict
from urllib.parse import parse_qs

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer

from core.errors import InvalidInput
from core.validate import int_query
from dashboard.access import cookie_name, scope_cookie, viewer_allowed
from dashboard.relay import GROUP, relay_ensure
from dashboard.selectors import EVENT_PAGE_MAX, events_after, live_snapshot

SENT_KEPT = 5000


class ActivityConsumer(AsyncJsonWebsocketConsumer):
    async def connect(self) -> None:
        query = parse_qs(self.scope.get("query_string", b"").decode())
        client = self.scope.get("client") or [None]
        if not viewer_allowed(client[0], scope_cookie(self.scope, cookie_name()), query.get("token", [None])[0]):
            await self.close(code=4401)  # before accepting: the handshake is refused
            return
        raw = query.get("after", [""])[0]
        try:
            after = int_query(raw, "after", None, low=0)
        except InvalidInput:
            await self.accept()
            await self.send_json({"type": "error", "message": f"'after' must be an event id (a whole number), "
                                                               f"not {raw[:40]!r}"})
            await self.close(code=4400)
            return
        await self.accept()
        relay_ensure()
        # Join first, then read: an event is either in what is read here or in a later group message.
        await self.channel_layer.group_add(GROUP, self.channel_name)
        snapshot = await database_sync_to_async(live_snapshot)()
        await self.send_json({"type": "snapshot", **snapshot})
        self.last_id = self.floor = snapshot["last_event_id"]  # at or below the floor: in the snapshot
        self.sent: OrderedDict[int, None] = OrderedDict()
        if after is not None:
            self.last_id = self.floor = after
            while True:
                events = await database_sync_to_async(events_after)(self.last_id)
                await self._send(events)
                if len(events) < EVENT_PAGE_MAX:
                    break

    async def disconnect(self, code: int) -> None:
        await self.channel_layer.group_discard(GROUP, self.channel_name)

    async def activity_events(self, message: dict) -> None:
        await self._send(message["events"])

    async def _send(self, events: list[dict]) -> None:
        fresh = [e for e in events if e["id"] > self.floor and e["id"] not in self.sent]
        if fresh:
            for event in fresh:
                self.sent[event["id"]] = None
            while len(self.sent) > SENT_KEPT:
                self.sent.popitem(last=False)
            self.last_id = max(self.last_id, max(e["id"] for e in fresh))
            await self.send_json({"type": "delta", "events": fresh})

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None, **kwargs: object) -> None:
        """Whatever comes (JSON or not, text or bytes), the same answer: nothing is decoded."""
        await self.send_json({"type": "error", "message": "this socket only sends; it takes no messages"})
