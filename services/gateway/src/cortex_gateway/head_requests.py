"""HEAD wherever GET (RFC 9110 §9.3.2): the answer a GET would get, status and headers, without its body.

A HEAD request goes through the app as the GET it asks about, so every GET route answers it, with the same
credentials, role and query checks, and any route added later too; its answer's body is dropped, its
headers kept, `Content-Length` included (the length the GET's body has). A HEAD on a route without GET is
a 405 naming the methods it takes; a 405's `Allow` names HEAD wherever it names GET. The OpenAPI document
lists the GET operations only: a HEAD beside each would repeat it.
"""

from starlette.types import ASGIApp, Message, Receive, Scope, Send


class HeadAsGet:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if scope["method"] != "HEAD":
            await self.app(scope, receive, _allowing_head(send))
            return

        async def send_without_body(message: Message) -> None:
            if message["type"] == "http.response.body":
                message = {**message, "body": b""}
            await send(message)

        await self.app({**scope, "method": "GET"}, receive, _allowing_head(send_without_body))


def _allowing_head(send: Send) -> Send:
    """A 405's `Allow` names HEAD wherever it names GET."""

    async def send_allowing_head(message: Message) -> None:
        if message["type"] == "http.response.start" and message["status"] == 405:
            headers = [
                (name, value + b", HEAD" if name == b"allow" and b"GET" in value.split(b", ") else value)
                for name, value in message.get("headers", [])
            ]
            message = {**message, "headers": headers}
        await send(message)

    return send_allowing_head
