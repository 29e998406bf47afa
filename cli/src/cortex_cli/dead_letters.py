"""`cortex dlq list | replay | drop`: an organization's dead letters, sending them again once the cause is fixed
(the organization created, the object uploaded, the embedder back), or dropping those that can never succeed
(a poison event; a subject naming no organization): the DLQ keeps them 30 days otherwise.

A replay publishes the original event, headers included, to its original subject, and then deletes the
letter: if the event fails again it comes back as a new letter. The event's own JetStream dedup id is
replaced by one naming the letter, or a replay within two minutes of the original would be dropped as its
duplicate, while two replays run at once publish a letter once (the indexer also handles each event id
once). A letter that holds only the start of its event (cut to fit the DLQ) is not replayed.
"""

import base64
import binascii
import json
import re
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from datetime import datetime

from nats.js.api import RawStreamMsg
from nats.js.errors import APIError, NotFoundError
from nats.js.manager import JetStreamManager

from cortex_cli.unreachable import connect_nats
from cortex_contracts.subjects import DLQ_PREFIX, STREAM_DLQ
from cortex_messaging.connection import disconnect

DEDUP_HEADER = "Nats-Msg-Id"
# JetStream's error codes for deleting a message already gone: "no message found", "sequence N not found"
ALREADY_GONE = {10057, 10043}


@dataclass(frozen=True)
class Letter:
    sequence: int  # in the DLQ stream
    time: datetime | None
    subject: str  # the event's own subject (the letter's, without `dlq.`)
    reason: str
    error: str
    headers: dict[str, str]
    payload: bytes
    cut_from: int | None = None  # the event's size, when `payload` is only its start (the whole was too large)


def letter_from(raw: RawStreamMsg) -> Letter:
    record = json.loads(raw.data or b"{}")
    payload = str(record.get("payload", ""))
    try:
        data = base64.b64decode(payload, validate=True) if record.get("payloadEncoding") == "base64" else None
    except binascii.Error:
        data = None
    return Letter(
        sequence=raw.seq or 0,
        time=raw.time,
        subject=(raw.subject or "").removeprefix(f"{DLQ_PREFIX}."),
        reason=str(record.get("reason", "")),
        error=str(record.get("error", "")),
        headers={str(key): str(value) for key, value in (record.get("headers") or {}).items()},
        payload=data if data is not None else payload.encode(),
        cut_from=int(record.get("originalPayloadBytes") or 0) if record.get("payloadTruncated") else None,
    )


def _replay_id(letter: Letter) -> str:
    """One per letter: its DLQ sequence, and its time should the DLQ stream be made anew."""
    stored = letter.time.timestamp() if letter.time else 0
    return f"cortex-dlq-replay-{letter.sequence}-{stored}"


async def _letters(
    manager: JetStreamManager, organization_id: uuid.UUID, last: int | None = None
) -> AsyncIterator[Letter]:
    """Oldest first, up to DLQ sequence `last` if given: every event subject names its organization second
    (`kb.<orgId>.…`, `memory.<orgId>.…`)."""
    subject, sequence = f"{DLQ_PREFIX}.*.{organization_id}.>", 1
    while True:
        try:
            raw = await manager.get_msg(STREAM_DLQ, seq=sequence, subject=subject, next=True)
        except NotFoundError:
            return
        if last is not None and (raw.seq or 0) > last:
            return
        yield letter_from(raw)
        sequence = (raw.seq or sequence) + 1


def _named_organization(subject: str) -> uuid.UUID | None:
    """The organization an event subject names (`kb.<orgId>.…`), if it names one as the contracts write it."""
    parts = subject.split(".", 2)
    try:
        org_id = uuid.UUID(parts[1])
    except (IndexError, ValueError):
        return None
    return org_id if str(org_id) == parts[1] else None


async def list_unowned_letters(nats_url: str, organization_ids: set[uuid.UUID]) -> list[Letter]:
    """Letters no `--org` lists: their subject names no organization (no UUID there), or one not among these."""
    nc = await connect_nats(nats_url)
    unowned: list[Letter] = []
    sequence = 1
    try:
        manager = nc.jsm()
        while True:
            try:
                raw = await manager.get_msg(STREAM_DLQ, seq=sequence, subject=f"{DLQ_PREFIX}.>", next=True)
            except NotFoundError:
                return unowned
            letter = letter_from(raw)
            if _named_organization(letter.subject) not in organization_ids:
                unowned.append(letter)
            sequence = letter.sequence + 1
    finally:
        await nc.close()


async def list_letters(nats_url: str, organization_id: uuid.UUID) -> list[Letter]:
    nc = await connect_nats(nats_url)
    try:
        return [letter async for letter in _letters(nc.jsm(), organization_id)]
    finally:
        await nc.close()


async def replay_letters(
    nats_url: str, organization_id: uuid.UUID, sequences: set[int] | None, done: Callable[[Letter], None]
) -> list[Letter]:
    """Sends again the organization's letters (those with these DLQ sequence numbers; None: all of them) that
    are in the DLQ as it starts: events that fail again come back as letters after that, and are left there.
    Calls `done` with each letter as soon as it is replayed, or refused (`cut_from`: it is kept); returns them."""
    nc = await connect_nats(nats_url)
    found: list[Letter] = []
    try:
        js, manager = nc.jetstream(), nc.jsm()
        try:
            last = (await manager.stream_info(STREAM_DLQ)).state.last_seq
        except NotFoundError:
            return found
        async for letter in _letters(manager, organization_id, last):
            if sequences is not None and letter.sequence not in sequences:
                continue
            if letter.cut_from is None:
                headers = {key: value for key, value in letter.headers.items() if key != DEDUP_HEADER}
                headers[DEDUP_HEADER] = _replay_id(letter)
                await js.publish(letter.subject, letter.payload, headers=headers)
                try:
                    await manager.delete_msg(STREAM_DLQ, letter.sequence)
                except APIError as err:
                    if err.err_code not in ALREADY_GONE:
                        raise
                    continue  # another replay running at once took it
            found.append(letter)
            done(letter)
    finally:
        await disconnect(nc)
    return found


def owned_by(organization_id: uuid.UUID) -> Callable[[Letter], bool]:
    return lambda letter: _named_organization(letter.subject) == organization_id


def unowned(organization_ids: set[uuid.UUID]) -> Callable[[Letter], bool]:
    return lambda letter: _named_organization(letter.subject) not in organization_ids


async def drop_letters(nats_url: str, sequences: set[int], whose: Callable[[Letter], bool]) -> list[Letter]:
    """Deletes the letters with these DLQ sequence numbers that `whose` accepts (an organization's, or the
    unowned); returns them. Before (QA 47) a letter that could never succeed stayed its 30 days, and
    `replay --all` sent it round again each time."""
    nc = await connect_nats(nats_url)
    dropped: list[Letter] = []
    try:
        manager = nc.jsm()
        for sequence in sorted(sequences):
            try:
                letter = letter_from(await manager.get_msg(STREAM_DLQ, seq=sequence))
            except NotFoundError:
                continue
            if not whose(letter):
                continue
            try:
                await manager.delete_msg(STREAM_DLQ, sequence)
            except APIError as err:
                if err.err_code not in ALREADY_GONE:
                    raise
                continue  # another command took it meanwhile
            dropped.append(letter)
    finally:
        await disconnect(nc)
    return dropped


ABOUT_CHARS = 120
ASCII_SPACES = re.compile(r"[ \t\r\n\f\v]+")


def _quoted(name: str) -> str:
    """A name as JSON quotes it, cut at ABOUT_CHARS with an ellipsis outside the quotes when longer."""
    return json.dumps(name[:ABOUT_CHARS], ensure_ascii=False) + ("…" if len(name) > ABOUT_CHARS else "")


def named(letter: Letter) -> tuple[str, str] | None:
    """What the event is about, as an operator looks for it: the file of an upload, else the document or
    entry it names, else the CloudEvent's `subject` — as (kind, name); None when the payload says none of it
    (or is cut, or not an event at all)."""
    try:
        event = json.loads(letter.payload)
    except ValueError:
        return None
    if not isinstance(event, dict):
        return None
    data = event.get("data")
    if not isinstance(data, dict):
        data = {}
    for key, kind in (("filename", "file"), ("documentId", "document"), ("entryId", "entry")):
        if isinstance(data.get(key), str) and data[key]:
            return kind, data[key]
    subject = event.get("subject")
    return ("subject", subject) if isinstance(subject, str) and subject else None


def about(letter: Letter) -> str:
    """`named` on one line: `file "Q3 plan.pdf"`, or `-`."""
    what = named(letter)
    return f"{what[0]} {_quoted(what[1])}" if what else "-"


def printable(text: str) -> str:
    """Untrusted text (an event's file name, an error quoting it) as a terminal shows it: every character
    but a printable one or a plain space escaped (control characters, an escape sequence, NEL, a no-break
    or other Unicode space), so that two names that print alike are alike."""
    return "".join(c if c == " " or c.isprintable() else c.encode("unicode_escape").decode() for c in text)


def render(letters: list[Letter]) -> str:
    if not letters:
        return "no dead letters"
    lines = []
    for letter in letters:
        when = letter.time.isoformat(timespec="seconds") if letter.time else "-"
        error = ASCII_SPACES.sub(" ", letter.error).strip()[:160]  # on one line; other spaces are escaped
        fields = (letter.subject, about(letter), f"{letter.reason}: {error}")
        lines.append("  ".join((f"{letter.sequence:>8}", when, *map(printable, fields))))
    return "\n".join(lines)


def render_json(letters: list[Letter]) -> str:
    """JSON Lines, one object a letter, for scripts: every field whole (the error not cut, nothing escaped
    but as JSON escapes it), the payload as UTF-8 text or, when it is not, base64 — as the DLQ stores it."""
    return "\n".join(json.dumps(_as_json(letter), ensure_ascii=False) for letter in letters)


def _as_json(letter: Letter) -> dict[str, object]:
    what = named(letter)
    try:
        payload, encoding = letter.payload.decode(), "utf-8"
    except UnicodeDecodeError:
        payload, encoding = base64.b64encode(letter.payload).decode(), "base64"
    return {
        "sequence": letter.sequence,
        "time": letter.time.isoformat() if letter.time else None,
        "subject": letter.subject,
        "about": {"kind": what[0], "name": what[1]} if what else None,
        "reason": letter.reason,
        "error": letter.error,
        "headers": letter.headers,
        "payload": payload,
        "payloadEncoding": encoding,
        "payloadTruncated": letter.cut_from is not None,  # as the DLQ record names them
        "originalPayloadBytes": letter.cut_from,
    }
