"""A minimal HTTP/1.1 keep-alive client for load generation (GET only).

The load generator shares this 2-core machine with what it measures; httpx spent ~5 ms of CPU per
request, more than the gateway serving it. This one parses just what a GET needs: the status line,
Content-Length or chunked transfer, and the body.
"""

import asyncio
from types import TracebackType
from urllib.parse import urlencode, urlsplit


class HttpError(Exception):
    """The connection broke or the server answered something this client does not read."""


class KeepAliveClient:
    def __init__(self, base_url: str, headers: dict[str, str]) -> None:
        url = urlsplit(base_url)
        self._host, self._port = url.hostname or "127.0.0.1", url.port or 80
        fixed = {"Host": f"{self._host}:{self._port}", "Connection": "keep-alive", **headers}
        self._headers = "".join(f"{name}: {value}\r\n" for name, value in fixed.items())
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None

    async def __aenter__(self) -> "KeepAliveClient":
        self._reader, self._writer = await asyncio.open_connection(self._host, self._port)
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        if self._writer is not None:
            self._writer.close()

    async def get(self, path: str, params: dict[str, str | int]) -> tuple[int, bytes]:
        """(status, body) of one GET."""
        if self._reader is None or self._writer is None:
            raise HttpError("not connected")
        target = f"{path}?{urlencode(params)}" if params else path
        self._writer.write(f"GET {target} HTTP/1.1\r\n{self._headers}\r\n".encode())
        try:
            status = int((await self._reader.readline()).split(b" ", 2)[1])
            length, chunked = None, False
            while (line := await self._reader.readline()) not in (b"\r\n", b""):
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value)
                elif name.strip().lower() == b"transfer-encoding":
                    chunked = b"chunked" in value.lower()
            if length is not None:
                return status, await self._reader.readexactly(length)
            if not chunked:
                raise HttpError("a response with neither Content-Length nor chunked transfer")
            body = bytearray()
            while size := int((await self._reader.readline()).strip().split(b";")[0], 16):
                body += await self._reader.readexactly(size)
                await self._reader.readline()
            await self._reader.readline()
            return status, bytes(body)
        except (ValueError, IndexError, asyncio.IncompleteReadError, ConnectionError) as exc:
            raise HttpError(f"unreadable response: {exc!r}") from exc
