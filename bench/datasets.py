"""Readers for the public benchmark collections in ../shared/datasets (read in place, never copied)."""

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

DATASETS = Path(__file__).resolve().parents[2] / "shared" / "datasets"


@dataclass(frozen=True)
class CisiDoc:
    id: str
    title: str
    body: str


@dataclass(frozen=True)
class Cisi:
    docs: list[CisiDoc]
    queries: dict[str, str]  # only the judged ones
    relevant: dict[str, set[str]]


def _smart_records(path: Path) -> list[dict[str, str]]:
    """SMART format: `.I id` starts a record, `.X` style markers start fields."""
    records: list[dict[str, str]] = []
    field = None
    for line in path.read_text(encoding="latin-1").splitlines():
        marker = re.match(r"^\.([A-Z])(?:\s+(\d+))?\s*$", line)
        if marker and marker.group(1) == "I":
            records.append({"I": marker.group(2) or ""})
            field = None
        elif marker:
            field = marker.group(1)
            records[-1].setdefault(field, "")
        elif field is not None and records:
            records[-1][field] += line + "\n"
    return records


def load_cisi(root: Path = DATASETS / "cisi") -> Cisi:
    docs = [
        CisiDoc(r["I"], " ".join(r.get("T", "").split()) or f"CISI {r['I']}", " ".join(r.get("W", "").split()))
        for r in _smart_records(root / "CISI.ALL")
    ]
    relevant: dict[str, set[str]] = {}
    for line in (root / "CISI.REL").read_text().splitlines():
        parts = line.split()
        if len(parts) >= 2:
            relevant.setdefault(parts[0], set()).add(parts[1])
    queries = {
        r["I"]: " ".join(r.get("W", "").split()) for r in _smart_records(root / "CISI.QRY") if r["I"] in relevant
    }
    return Cisi(docs=docs, queries=queries, relevant=relevant)


@dataclass(frozen=True)
class Turn:
    conversation: str
    dia_id: str
    speaker: str
    text: str
    session: int
    when: str


@dataclass(frozen=True)
class RecallQuery:
    conversation: str
    question: str
    evidence: set[str]
    category: int


def load_locomo(path: Path = DATASETS / "locomo-dev" / "locomo-dev.json") -> tuple[list[Turn], list[RecallQuery]]:
    samples: list[dict[str, Any]] = json.loads(path.read_text())
    turns: list[Turn] = []
    queries: list[RecallQuery] = []
    for index, sample in enumerate(samples):
        name = str(sample.get("sample_id", f"conv-{index}"))
        conversation = sample["conversation"]
        for key, value in conversation.items():
            found = re.fullmatch(r"session_(\d+)", key)
            if not found or not isinstance(value, list):
                continue
            when = str(conversation.get(f"{key}_date_time", ""))
            turns.extend(
                Turn(name, t["dia_id"], t["speaker"], t["text"], int(found.group(1)), when)
                for t in value
                if t.get("text")
            )
        for qa in sample["qa"]:
            category = int(qa.get("category", 0))
            evidence = {e for e in qa.get("evidence", []) if isinstance(e, str)}
            if 1 <= category <= 4 and evidence:
                queries.append(RecallQuery(name, str(qa["question"]), evidence, category))
    return turns, queries
