"""Dead letters: what can never be handled goes to the DLQ stream with the reason and the original.

A letter must always be sendable, or the message it reports is never settled. One that would be over the
server's max_payload keeps only the start of the payload, and says so (`payloadTruncated`, and the whole
payload's size, `originalPayloadBytes`): the reason, error, subject and headers stay on record, but such a
letter can no longer be replayed.
"""

import base64
import contextlib
import json
import uuid
from dataclasses import dataclass

from nats.js import JetStreamContext

from cortex_contracts.subjects import dead_letter, split_org_subject
from cortex_messaging.publisher import MessageTooLarge, message_bytes


@dataclass(frozen=True)
class DeadLetter:
    subject: str
    consumer: str
    reason: str
    error: str
    deliveries: int
    headers: dict[str, str]
    payload: bytes
    # The failed message's place, `<stream>/<sequence>`: the letter's dedup id, so the same message lettered
    # twice (its ack lost when NATS restarted, so delivered and lettered again) is one letter. None: no dedup.
    origin: str | None = None

    def record(self, *, keep: int | None = None) -> bytes:
        """The letter as JSON; `keep`: with only the payload's first `keep` bytes (as whole characters)."""
        try:
            whole = self.payload.decode()
        except UnicodeDecodeError:
            payload, encoding = base64.b64encode(self.payload[:keep]).decode(), "base64"
        else:
            payload = whole if keep is None else self.payload[:keep].decode(errors="ignore")
            encoding = "utf-8"
        cut = {} if keep is None else {"payloadTruncated": True, "originalPayloadBytes": len(self.payload)}
        record = {
            "subject": self.subject,
            "consumer": self.consumer,
            "reason": self.reason,
            "error": self.error[:4000],
            "deliveries": self.deliveries,
            "headers": self.headers,
            "payload": payload,
            "payloadEncoding": encoding,
        }
        # Not ensure_ascii: "é" would take 6 bytes instead of 2. A lone surrogate (in an error message) cannot
        # be UTF-8: it is written as JSON writes it, `\udXXX`.
        return json.dumps(record | cut, ensure_ascii=False).encode(errors="backslashreplace")


def _header_safe(value: str) -> str:
    """One line, and UTF-8 (a lone surrogate as `\\udXXX`): nats-py could not send the header otherwise."""
    return " ".join(value.split())[:500].encode(errors="backslashreplace").decode()


def _dead_letter_subject(subject: str) -> str:
    """`dlq.<subject>`, with the organization token lower case when it is a UUID: `cortex dlq` looks for an
    organization's letters under its id as the contracts write it, and NATS subjects are case-sensitive."""
    with contextlib.suppress(ValueError):  # not `domain.<orgId>.…`, or not a UUID: left as it is
        domain, org_id, rest = split_org_subject(subject)
        subject = f"{domain}.{uuid.UUID(org_id)}.{rest}"
    return dead_letter(subject)


async def send_dead_letter(js: JetStreamContext, letter: DeadLetter) -> None:
    # The original headers go along too, minus the event's dedup id: the DLQ must accept a second dead letter
    # for the same event after it was replayed (a new message) and failed again. The letter's own is its origin.
    headers = {k: v for k, v in letter.headers.items() if k != "Nats-Msg-Id"}
    if letter.origin is not None:
        headers["Nats-Msg-Id"] = f"cortex-dlq-{letter.origin}"
    headers |= {
        "Cortex-Dlq-Reason": _header_safe(letter.reason),
        "Cortex-Dlq-Error": _header_safe(letter.error),
        "Cortex-Dlq-Consumer": letter.consumer,
        "Cortex-Dlq-Subject": letter.subject,
        "Cortex-Dlq-Deliveries": str(letter.deliveries),
    }
    # Over the limit, nats-py refuses the letter, or, if only its headers tip it over, the server closes the
    # connection. Cut, the payload gets the room the rest leaves.
    limit, record, keep = js._nc.max_payload, letter.record(), len(letter.payload)
    if message_bytes(record, headers) > limit:
        room = limit - message_bytes(letter.record(keep=0), headers)
        if room < 0:
            raise MessageTooLarge(f"a dead letter of {letter.subject} without its payload is over {limit:,} bytes")
        while (over := message_bytes(record, headers) - limit) > 0:
            # The bytes kept take `room + over` in the record (escaped, or base64): keep what takes `room` at that
            # rate; the start of the payload may escape more than its average, hence the loop (a step or two).
            keep = keep * room // (room + over)
            record = letter.record(keep=keep)
    await js.publish(_dead_letter_subject(letter.subject), record, headers=headers)
