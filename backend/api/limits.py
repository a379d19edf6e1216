"""Refuse request bodies over the size limit before anything reads them."""

import contextlib
import json

from starlette.types import ASGIApp, Message, Receive, Scope, Send


class BodyTooLarge(Exception):
    pass


class BodySizeLimit:
    def __init__(self, app: ASGIApp, max_bytes: int):
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        declared = dict(scope["headers"]).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.max_bytes:
            return await self._refuse(send)
        received = 0
        started = refused = False

        async def counted_receive() -> Message:
            nonlocal received, started, refused
            message = await receive()
            received += len(message.get("body", b""))
            if received > self.max_bytes:
                # Answered here: the app turns any error while reading the body into its own
                # 400, and whatever it sends after this is dropped.
                if not started:
                    started = refused = True
                    await self._refuse(send)
                raise BodyTooLarge
            return message

        async def tracked_send(message: Message) -> None:
            nonlocal started
            if refused:
                return
            started = started or message["type"] == "http.response.start"
            await send(message)

        with contextlib.suppress(BodyTooLarge):
            await self.app(scope, counted_receive, tracked_send)

    async def _refuse(self, send: Send) -> None:
        body = json.dumps(
            {"error": "payload_too_large", "detail": f"the request body is over {self.max_bytes} bytes"}
        ).encode()
        await send(
            {
                "type": "http.response.start",
                "status": 413,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode()),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})
