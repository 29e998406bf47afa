"""Fence untrusted text from a plugin so a prompt can quote it without taking it as instructions."""

import re

# A fence marker inside the content could close the fence early: it is defanged before wrapping.
_MARKER = re.compile(r"<</?untrusted[^>]*>>", re.IGNORECASE)


def fence(source: str, content: str) -> str:
    """`content` between labelled markers naming its `source`; markers inside it are neutralised."""
    inner = _MARKER.sub(lambda found: found.group(0).replace("<<", "‹‹").replace(">>", "››"), content)
    return f'<<untrusted source="{source}">>\n{inner}\n<</untrusted>>'
