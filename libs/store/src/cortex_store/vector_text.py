"""A vector as pgvector's text input, `[x1,x2,…]`: how every statement here binds one.

Bound as text to a parameter typed `vector`, it is parsed once, at bind. Seven significant digits keep a
float32 exactly enough for cosine ranking. (Bound as `real[]` instead, a generic plan casts it once per
row: see the README's performance section.)
"""

from collections.abc import Sequence


def vector_literal(values: Sequence[float]) -> str:
    return "[" + ",".join(f"{x:.7g}" for x in values) + "]"
