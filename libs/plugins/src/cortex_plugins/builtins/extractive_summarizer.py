"""summarizer `extractive` (the default): offline, no model — the sentences most central to the text.

Each sentence is a TF-IDF vector over its content words; a sentence's centrality is the sum of its cosine
similarities to every other sentence (degree centrality, as in LexRank without the threshold). The most
central sentences are returned in the order the text has them.
"""

import math
import re
from collections import Counter

SENTENCE_END = re.compile(r"(?<=[.!?])[\"')\]]*\s+(?=[\"'(\[]?[A-Z0-9])")
WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")
_STOP_WORDS = (
    "a about above after again all also am an and any are as at be because been before being below between "
    "both but by can could did do does doing down during each few for from further had has have having he her "
    "here hers him his how i if in into is it its itself just me more most my no nor not now of off on once "
    "only or other our ours out over own same she should so some such than that the their theirs them then "
    "there these they this those through to too under until up very was we were what when where which while "
    "who whom why will with would you your yours"
)
STOP_WORDS = frozenset(_STOP_WORDS.split())
DEFAULT_SENTENCES = 3


def split_sentences(text: str) -> list[str]:
    """Sentences of the text's paragraphs; markdown heading lines are not sentences."""
    found: list[str] = []
    for paragraph in re.split(r"\n\s*\n", text):
        lines = [line.strip() for line in paragraph.splitlines() if not line.lstrip().startswith("#")]
        joined = " ".join(line for line in lines if line)
        found += [s.strip() for s in SENTENCE_END.split(joined) if s.strip()]
    return found


def _terms(sentence: str) -> Counter[str]:
    return Counter(w for w in WORD.findall(sentence.lower()) if w not in STOP_WORDS and len(w) > 1)


def centrality(sentences: list[str]) -> list[float]:
    """Per sentence, the sum of its TF-IDF cosine similarities to the others."""
    bags = [_terms(s) for s in sentences]
    frequency = Counter(term for bag in bags for term in bag)
    n = len(sentences)
    idf = {term: math.log((1 + n) / (1 + df)) + 1 for term, df in frequency.items()}
    vectors = [{term: tf * idf[term] for term, tf in bag.items()} for bag in bags]
    norms = [math.sqrt(sum(w * w for w in v.values())) or 1.0 for v in vectors]
    scores = [0.0] * n
    for i in range(n):
        for j in range(i + 1, n):
            small, large = sorted((vectors[i], vectors[j]), key=len)
            dot = sum(w * large.get(term, 0.0) for term, w in small.items())
            similarity = dot / (norms[i] * norms[j])
            scores[i] += similarity
            scores[j] += similarity
    return scores


def summarize(text: str, max_sentences: int = DEFAULT_SENTENCES) -> str:
    """At most `max_sentences` sentences of `text`, the most central ones, in their original order."""
    sentences = split_sentences(text)
    if len(sentences) <= max_sentences:
        return " ".join(sentences)
    scores = centrality(sentences)
    best = sorted(range(len(sentences)), key=lambda i: (-scores[i], i))[:max_sentences]
    return " ".join(sentences[i] for i in sorted(best))


class ExtractiveSummarizer:
    name = "extractive"

    def summarize(self, text: str, max_sentences: int = DEFAULT_SENTENCES) -> str:
        return summarize(text, max_sentences)


def create() -> ExtractiveSummarizer:
    return ExtractiveSummarizer()
