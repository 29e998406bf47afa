"""Write the API documents that the code defines, into docs/:

- `openapi.json`: the gateway's HTTP API, as FastAPI describes it.
- `asyncapi.yaml`: the NATS wire (AsyncAPI 3.0): subjects from `cortex_contracts.subjects`, payloads from the
  pydantic contracts, headers and dead-letter records as the messaging code actually produces them.

`--check` writes nothing and exits 1 when docs/ differs from what the code generates, so CI catches drift.
Run it with the project's virtualenv: `.venv/bin/python scripts/export_api_docs.py [--check]`.
"""

import argparse
import asyncio
import inspect
import json
import re
import sys
from collections.abc import Awaitable, Callable
from functools import partial
from importlib.metadata import version
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast
from uuid import UUID

from nats.js import JetStreamContext
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator
from pydantic import BaseModel, Field, create_model

from cortex_aggregator.bootstrap import QUEUE_GROUP
from cortex_contracts import subjects
from cortex_contracts.catalog import DELETED, UPSERTED, CatalogEntity, catalog_subject, catalog_type
from cortex_contracts.documents import (
    TYPE_DOCUMENT_DELETED,
    TYPE_DOCUMENT_INDEXED,
    TYPE_DOCUMENT_UPSERTED,
    DocumentDeleted,
    DocumentIndexed,
    DocumentUpserted,
)
from cortex_contracts.envelope import Envelope, new_envelope
from cortex_contracts.memory import (
    TYPE_ENTRY_REMEMBERED,
    AgentMemoriesRequest,
    EntryRemembered,
    RecallRequest,
)
from cortex_contracts.rpc import (
    AgentMemoriesReply,
    FacetPageReply,
    FacetsReply,
    FacetsRequest,
    FacetValuesRequest,
    FeedReply,
    FeedRequest,
    ItemReply,
    ItemRequest,
    RecallReply,
    Reply,
    StatsReply,
    StatsRequest,
)
from cortex_contracts.uploads import TYPE_UPLOAD_CREATED, UploadCreated
from cortex_gateway.app import create_app
from cortex_gateway.settings import GatewaySettings
from cortex_indexer.bootstrap import CATALOG_CONSUMER, CONSUMER, MEMORY_CONSUMER
from cortex_messaging.dead_letter import DeadLetter, send_dead_letter
from cortex_messaging.publisher import publish_event
from cortex_messaging.streams import DUPLICATE_WINDOW_SECONDS, stream_configs

DOCS = Path(__file__).resolve().parent.parent / "docs"
OPENAPI = DOCS / "openapi.json"
ASYNCAPI = DOCS / "asyncapi.yaml"

Schema = dict[str, Any]
SCHEMAS = "#/components/schemas/"
# Subjects are built by the contracts' own functions with this stand-in id, which becomes the parameter.
ORG = UUID(int=0)
ORG_PARAMETER = {"orgId": {"description": "The organization's id (a UUID); equals the envelope's `orgid`."}}

# Every `rpc.aggregator.*` subject with its request and reply model (the aggregator's bootstrap pairs them
# the same way). A new subject without an entry here stops the export.
RPC: dict[str, tuple[type[BaseModel], type[Reply[Any]]]] = {
    subjects.RPC_AGGREGATOR_FEED: (FeedRequest, FeedReply),
    subjects.RPC_AGGREGATOR_FACETS: (FacetsRequest, FacetsReply),
    subjects.RPC_AGGREGATOR_FACET_VALUES: (FacetValuesRequest, FacetPageReply),
    subjects.RPC_AGGREGATOR_STATS: (StatsRequest, StatsReply),
    subjects.RPC_AGGREGATOR_ITEM: (ItemRequest, ItemReply),
    subjects.RPC_AGGREGATOR_RECALL: (RecallRequest, RecallReply),
    subjects.RPC_AGGREGATOR_AGENT_MEMORIES: (AgentMemoriesRequest, AgentMemoriesReply),
}


def openapi_document() -> str:
    # Building the app connects to nothing: PostgreSQL and NATS are opened by its lifespan, which never runs here.
    app = create_app(GatewaySettings(database_url="postgresql://x@/x", secret="x" * 32, _env_file=None))
    return json.dumps(app.openapi(), indent=2, ensure_ascii=False) + "\n"


# --- what the messaging code puts on the wire, captured by running it against a stand-in JetStream ---


class _CapturingJetStream:
    def __init__(self) -> None:
        self.published: list[tuple[str, bytes, dict[str, str]]] = []
        self._nc = SimpleNamespace(max_payload=1024 * 1024, is_reconnecting=False)  # what publish_event checks

    async def publish(self, subject: str, payload: bytes, *, headers: dict[str, str], **_: object) -> None:
        self.published.append((subject, payload, headers))


def _captured(send: Callable[[JetStreamContext], Awaitable[object]]) -> tuple[str, bytes, dict[str, str]]:
    js = _CapturingJetStream()

    async def run() -> None:
        await send(cast("JetStreamContext", js))

    asyncio.run(run())
    [published] = js.published
    return published


def _header(description: str) -> Schema:
    return {"type": "string", "description": description}


def trace_headers() -> Schema:
    return {name: _header("W3C trace context.") for name in sorted(TraceContextTextMapPropagator().fields)}


def event_headers() -> Schema:
    event = new_envelope(event_type="x", source="x", org_id=ORG, data={})
    _, _, headers = _captured(partial(publish_event, subject="x", event=event))
    if headers.get("Nats-Msg-Id") != event.id or set(headers) - {"Nats-Msg-Id", *trace_headers()}:
        raise SystemExit(f"publish_event's headers changed ({sorted(headers)}): update event_headers() in {__file__}")
    dedup = _header(
        f"The envelope's `id`: JetStream drops a duplicate within {DUPLICATE_WINDOW_SECONDS:.0f} s; "
        "consumers are idempotent beyond that."
    )
    return {"type": "object", "properties": {"Nats-Msg-Id": dedup, **trace_headers()}, "required": ["Nats-Msg-Id"]}


DEAD_LETTER_FIELDS = {
    "subject": "Subject the event was consumed from.",
    "consumer": "Durable consumer that gave up, or that recorded the failure.",
    "reason": "`poison message` (can never be handled), `max_deliver exceeded`, or `extraction failed` (an "
    "upload's file could not be read: the event was handled — its document is stored as failed — and this "
    "is a copy).",
    "error": "The last error (at most 4000 characters).",
    "deliveries": "How many times the event was delivered.",
    "headers": "The original message headers.",
    "payload": "The original message body.",
    "payloadEncoding": "How `payload` is encoded.",
}
TRUNCATED = (
    "Present (true) when the event was too large for its letter: `payload` holds only its start, and"
    " `cortex dlq replay` refuses the letter."
)
_JSON_TYPES = {str: "string", int: "integer", dict: "object"}


def dead_letter_schemas() -> tuple[Schema, Schema]:
    """The DLQ record and headers, from what `send_dead_letter` publishes for a text and a binary payload."""
    records: list[dict[str, Any]] = []
    header_names: set[str] = set()
    for payload in (b"{}", b"\xff"):
        letter = DeadLetter(
            subject="kb.x.document.upserted",
            consumer="c",
            reason="r",
            error="e",
            deliveries=5,
            headers={"Nats-Msg-Id": "x"},
            payload=payload,
        )
        _, body, headers = _captured(partial(send_dead_letter, letter=letter))
        records.append(json.loads(body))
        header_names |= {name for name in headers if name.startswith("Cortex-Dlq-")}
    properties: Schema = {}
    for key, value in records[0].items():
        properties[key] = {"type": _JSON_TYPES[type(value)]} | (
            {"description": DEAD_LETTER_FIELDS[key]} if key in DEAD_LETTER_FIELDS else {}
        )
    properties["headers"]["additionalProperties"] = {"type": "string"}
    properties["payloadEncoding"]["enum"] = sorted({record["payloadEncoding"] for record in records})
    required = list(properties)
    # Only in a letter whose event was too large for it (over NATS's max_payload): `payload` is its start.
    properties["payloadTruncated"] = {"type": "boolean", "const": True, "description": TRUNCATED}
    properties["originalPayloadBytes"] = {"type": "integer", "description": "The whole event's size, in bytes."}
    record = {
        "type": "object",
        "description": "What `send_dead_letter` publishes; the record is JSON whatever the original was.",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
    }
    headers_schema = {
        "type": "object",
        "description": "The original headers (less `Nats-Msg-Id`, so a replayed failure is kept too) plus these.",
        "properties": {name: {"type": "string"} for name in sorted(header_names)} | trace_headers(),
        "required": sorted(header_names),
        "additionalProperties": {"type": "string"},
    }
    return record, headers_schema


# --- the AsyncAPI document ---


def _ref(path: str) -> Schema:
    return {"$ref": path}


def _address(subject: str) -> str:
    return subject.replace(str(ORG), "{orgId}")


def _summary(model: type[BaseModel]) -> Schema:
    doc = inspect.cleandoc(model.__doc__) if model.__doc__ else ""
    return {"summary": doc.splitlines()[0]} if doc else {}


class AsyncApi:
    def __init__(self) -> None:
        self.schemas: dict[str, Schema] = {}
        self.messages: dict[str, Schema] = {}
        self.channels: dict[str, Schema] = {}
        self.operations: dict[str, Schema] = {}

    def schema(self, name: str, schema: Schema) -> Schema:
        """Add `schema` under `name`, hoisting pydantic's `$defs` into components; return a reference to it."""
        for def_name, definition in schema.pop("$defs", {}).items():
            self.schema(def_name, definition)
        if self.schemas.setdefault(name, schema) != schema:
            raise ValueError(f"two different schemas are both named {name}")
        return _ref(SCHEMAS + name)

    def model(self, model: type[BaseModel], name: str | None = None) -> Schema:
        schema = model.model_json_schema(by_alias=True, ref_template=SCHEMAS + "{model}")
        return self.schema(name or model.__name__, schema)

    def event(self, payload: type[BaseModel], event_type: str) -> str:
        """An envelope whose `data` is `payload` and whose `type` is `event_type`; returns the message key."""
        envelope = create_model(
            f"{payload.__name__}Event",
            __base__=Envelope,
            data=(payload, Field(description=f"The `{event_type}` payload.")),
        )
        schema = envelope.model_json_schema(by_alias=True, ref_template=SCHEMAS + "{model}")
        schema["properties"]["type"]["const"] = event_type
        self.messages[payload.__name__] = {
            "name": event_type,
            "title": payload.__name__,
            **_summary(payload),
            "contentType": "application/json",
            "headers": _ref(SCHEMAS + "EventHeaders"),
            "payload": self.schema(envelope.__name__, schema),
        }
        return payload.__name__

    def rpc_message(self, model: type[BaseModel], key: str, *, traced: bool) -> str:
        """`traced`: requests carry the trace context; replies (`msg.respond`) carry no headers."""
        headers = {"headers": _ref(SCHEMAS + "RpcHeaders")} if traced else {}
        self.messages[key] = {
            "name": key,
            **_summary(model),
            "contentType": "application/json",
            **headers,
            "payload": self.model(model, key),
        }
        return key

    def channel(self, key: str, address: str | None, description: str, messages: list[str]) -> None:
        channel: Schema = {"address": address, "description": description}
        if address and "{orgId}" in address:
            channel["parameters"] = ORG_PARAMETER
        channel["messages"] = {message: _ref(f"#/components/messages/{message}") for message in messages}
        self.channels[key] = channel

    def operation(self, key: str, action: str, channel: str, summary: str, **extra: Any) -> None:
        messages = [_ref(f"#/channels/{channel}/messages/{m}") for m in self.channels[channel]["messages"]]
        self.operations[key] = {
            "action": action,
            "channel": _ref(f"#/channels/{channel}"),
            "summary": summary,
            "messages": messages,
            **extra,
        }


def _camel(*words: str) -> str:
    parts = [part for word in words for part in re.split(r"[._]", word) if part]
    return parts[0] + "".join(part[:1].upper() + part[1:] for part in parts[1:])


def _kb_events(api: AsyncApi) -> None:
    indexer = f"Indexer (durable consumer `{CONSUMER}` on stream `{subjects.STREAM_KB}`)"
    kb = subjects.KB_ALL.removesuffix(">") + str(ORG) + "."
    for subject, payload, event_type, what in (
        (subjects.kb_document_upserted(ORG), DocumentUpserted, TYPE_DOCUMENT_UPSERTED, "indexes the document"),
        (subjects.kb_document_deleted(ORG), DocumentDeleted, TYPE_DOCUMENT_DELETED, "removes the document"),
        (kb + subjects.UPLOAD_CREATED, UploadCreated, TYPE_UPLOAD_CREATED, "records the upload"),
    ):
        key = _camel(event_type)
        api.channel(
            key,
            _address(subject),
            f"`{event_type}` events from upstream KB services.",
            [api.event(payload, event_type)],
        )
        api.operation(f"indexerReceives{key[:1].upper()}{key[1:]}", "receive", key, f"{indexer} {what}.")
    api.operation(
        "gatewaySendsKbDocumentUpserted",
        "send",
        _camel(TYPE_DOCUMENT_UPSERTED),
        "The gateway publishes an org note (`POST /api/memory/documents`) as a KB document.",
    )


def _catalog_events(api: AsyncApi) -> None:
    consumer = f"Indexer (durable consumer `{CATALOG_CONSUMER}` on stream `{subjects.STREAM_KB}`)"
    for entity in CatalogEntity:
        for action, models in (("upserted", UPSERTED), ("deleted", DELETED)):
            event_type = catalog_type(entity, action)
            key = _camel(event_type)
            description = f"`{event_type}`: the catalog's read copy; the highest version wins, a deletion included."
            api.channel(
                key,
                _address(catalog_subject(ORG, entity, action)),
                description,
                [api.event(models[entity], event_type)],
            )
            api.operation(f"indexerReceives{key[:1].upper()}{key[1:]}", "receive", key, f"{consumer} applies it.")


def _memory_events(api: AsyncApi) -> None:
    key = _camel(TYPE_ENTRY_REMEMBERED)
    api.channel(
        key,
        _address(subjects.memory_entry_remembered(ORG)),
        "An agent (or person) remembered something.",
        [api.event(EntryRemembered, TYPE_ENTRY_REMEMBERED)],
    )
    api.operation("gatewaySendsMemoryEntryRemembered", "send", key, "The gateway publishes what a caller remembers.")
    api.operation(
        "indexerReceivesMemoryEntryRemembered",
        "receive",
        key,
        f"Indexer (durable consumer `{MEMORY_CONSUMER}` on stream `{subjects.STREAM_MEMORY}`) stores the entry.",
    )


def _cortex_events(api: AsyncApi) -> None:
    key = _camel(TYPE_DOCUMENT_INDEXED)
    api.channel(
        key,
        _address(subjects.cortex_document_indexed(ORG)),
        "A document is searchable (or removed), after the indexer's transaction committed.",
        [api.event(DocumentIndexed, TYPE_DOCUMENT_INDEXED)],
    )
    api.operation("indexerSendsCortexDocumentIndexed", "send", key, "Indexer, after each document it indexed.")
    api.operation(
        "gatewayReceivesCortexDocumentIndexed",
        "receive",
        key,
        "The gateway waits for it (core NATS subscription) when a note is created with `?wait=true`.",
    )


def _dead_letters(api: AsyncApi) -> None:
    record, headers = dead_letter_schemas()
    api.messages["DeadLetter"] = {
        "name": "dead-letter",
        "summary": "An event that could not be handled, with the reason and the original.",
        "contentType": "application/json",
        "headers": api.schema("DeadLetterHeaders", headers),
        "payload": api.schema("DeadLetter", record),
    }
    channel = api.channels["deadLetters"] = {
        "address": _address(subjects.dead_letter("{subject}")),
        "description": f"Stream `{subjects.STREAM_DLQ}`: what failed `max_deliver` times or can never be handled, "
        "and copies of uploads whose file could not be read.",
        "parameters": {"subject": {"description": "The full subject the event was consumed from (it has dots)."}},
        "messages": {"DeadLetter": _ref("#/components/messages/DeadLetter")},
    }
    assert channel["address"].startswith(subjects.DLQ_PREFIX + ".")
    api.operation("indexerSendsDeadLetter", "send", "deadLetters", "Any durable consumer that gives up on an event.")


def _rpc(api: AsyncApi) -> None:
    declared = {value for name, value in vars(subjects).items() if name.startswith("RPC_")}
    if declared != set(RPC):
        raise SystemExit(f"RPC subjects without request/reply models in {__file__}: {sorted(declared ^ set(RPC))}")
    for subject, (request, reply) in RPC.items():
        key = _camel(subject)
        name = subject.rsplit(".", 1)[-1].capitalize()
        api.channel(
            key,
            subject,
            "Core NATS request/reply (not a stream).",
            [api.rpc_message(request, request.__name__, traced=True)],
        )
        api.channel(
            f"{key}Reply",
            None,
            "The requester's inbox (NATS reply subject). Exactly one of `result` and `error` is set.",
            [api.rpc_message(reply, f"{name}Reply", traced=False)],
        )
        reply_to = {
            "channel": _ref(f"#/channels/{key}Reply"),
            "messages": [_ref(f"#/channels/{key}Reply/messages/{name}Reply")],
        }
        api.operation(
            _camel("aggregator", "answers", name),
            "receive",
            key,
            f"The aggregator answers, one copy per request (queue group `{QUEUE_GROUP}`).",
            reply=reply_to,
            bindings={"nats": {"queue": QUEUE_GROUP, "bindingVersion": "0.1.0"}},
        )
        api.operation(
            _camel("gateway", "asks", name),
            "send",
            key,
            "The gateway asks on behalf of an HTTP request.",
            reply=reply_to,
        )


def _streams_description() -> str:
    lines = [
        "Cortex's NATS wire. Events are CloudEvents 1.0 envelopes (plus `orgid`/`tenantid`) whose `data` is the "
        "payload; RPC messages are plain camelCase JSON. The services create these JetStream streams at start-up:",
        "",
    ]
    for config in stream_configs():
        age = f"kept {config.max_age / 86_400:.0f} days" if config.max_age else "kept until deleted"
        lines.append(f"- `{config.name}`: {', '.join(f'`{s}`' for s in config.subjects or [])} ({age})")
    return "\n".join(lines)


def asyncapi_document() -> dict[str, Any]:
    api = AsyncApi()
    api.schema("EventHeaders", event_headers())
    api.schema("RpcHeaders", {"type": "object", "properties": trace_headers()})
    _kb_events(api)
    _catalog_events(api)
    _memory_events(api)
    _cortex_events(api)
    _dead_letters(api)
    _rpc(api)
    return {
        "asyncapi": "3.0.0",
        "info": {
            "title": "Cortex events",
            "version": version("cortex-contracts"),
            "description": _streams_description(),
        },
        "defaultContentType": "application/json",
        "servers": {
            "nats": {"host": "localhost:4222", "protocol": "nats", "description": "NATS with JetStream."},
        },
        "channels": api.channels,
        "operations": api.operations,
        "components": {"messages": api.messages, "schemas": dict(sorted(api.schemas.items()))},
    }


# --- a small YAML writer for JSON data (block style; strings quoted JSON-style unless plainly safe) ---

_PLAIN = re.compile(r"[A-Za-z_$/][\w$./{}-]*")
_YAML_WORDS = {"true", "false", "null", "yes", "no", "on", "off", "y", "n"}


def _scalar(value: object) -> str:
    if value is None or isinstance(value, bool | int | float):
        return json.dumps(value)
    if isinstance(value, str):
        plain = _PLAIN.fullmatch(value) is not None and value.lower() not in _YAML_WORDS
        return value if plain else json.dumps(value, ensure_ascii=False)
    if value in ({}, []):
        return json.dumps(value)
    raise TypeError(f"not JSON data: {value!r}")


def _yaml_lines(value: object, depth: int) -> list[str]:
    pad = "  " * depth
    lines: list[str] = []
    items = value.items() if isinstance(value, dict) else ((None, item) for item in cast("list[object]", value))
    for key, item in items:
        lead = f"{pad}- " if key is None else f"{pad}{_scalar(key)}:"
        if isinstance(item, dict | list) and item:
            nested = _yaml_lines(item, depth + 1)
            if key is None:  # a collection in a list starts on the dash's line
                lines.append(lead + nested[0].lstrip())
                lines.extend(nested[1:])
            else:
                lines.append(lead)
                lines.extend(nested)
        else:
            lines.append(f"{lead} {_scalar(item)}" if key is not None else lead + _scalar(item))
    return lines


def to_yaml(document: dict[str, Any]) -> str:
    return "\n".join(_yaml_lines(document, 0)) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--check", action="store_true", help="exit 1 if docs/ differs from the code; write nothing")
    args = parser.parse_args(argv)
    generated = {OPENAPI: openapi_document(), ASYNCAPI: to_yaml(asyncapi_document())}
    if args.check:
        stale = [path for path, text in generated.items() if not path.is_file() or path.read_text() != text]
        for path in stale:
            print(f"{path.relative_to(DOCS.parent)} is out of date: run scripts/export_api_docs.py", file=sys.stderr)
        return 1 if stale else 0
    DOCS.mkdir(exist_ok=True)
    for path, text in generated.items():
        path.write_text(text)
        print(f"wrote {path.relative_to(DOCS.parent)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
