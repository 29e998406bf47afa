"""The known document classes (the Type facet), with display labels."""

DOC_CLASSES: dict[str, str] = {
    "spec": "Specification",
    "design": "Design doc",
    "runbook": "Runbook",
    "meeting-notes": "Meeting notes",
    "decision": "Decision record",
    "report": "Report",
    "policy": "Policy",
    "guide": "Guide",
    "faq": "FAQ",
    "note": "Note",
    "reference": "Reference",
    "plan": "Plan",
}
