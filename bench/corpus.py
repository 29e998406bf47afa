"""Deterministic synthetic knowledge-base text: markdown documents, passages and search queries.

Words come from small hand-written vocabularies of what an organization's knowledge base talks about
(engineering, sales, people, finance, support, security, product, operations), picked with a Zipf-like
skew so a few words are common and most are rare, joined by ordinary function words into sentences.
The same seed always gives the same text.
"""

import random
from dataclasses import dataclass

FUNCTION_PREPOSITIONS = ("for", "with", "after", "before", "during", "across", "in", "on", "from", "under", "about")
DETERMINERS = ("the", "the", "the", "a", "each", "every", "our", "this", "that", "any")
CONNECTIVES = ("and", "so that", "because", "while", "unless", "when", "until", "but", "as soon as", "whereas")
ADVERBS = ("usually", "always", "rarely", "quickly", "carefully", "manually", "automatically", "first", "again")
DOC_KINDS = ("runbook", "guide", "policy", "overview", "checklist", "notes", "FAQ", "playbook", "proposal", "review")
SECTIONS = (
    "Background",
    "Scope",
    "How it works",
    "Steps",
    "Open questions",
    "Decisions",
    "Risks",
    "Rollout",
    "Ownership",
    "Examples",
    "Troubleshooting",
    "Metrics",
)


@dataclass(frozen=True)
class Topic:
    name: str
    nouns: tuple[str, ...]
    verbs: tuple[str, ...]  # third person singular
    adjectives: tuple[str, ...]


def _words(text: str) -> tuple[str, ...]:
    return tuple(text.split())


TOPICS: tuple[Topic, ...] = (
    Topic(
        "engineering",
        _words(
            "service deployment pipeline cluster database migration schema index query cache latency "
            "throughput release branch commit review test build container queue consumer producer "
            "replica failover backup endpoint timeout retry dependency library framework benchmark "
            "rollback outage incident alert dashboard log trace shard partition"
        ),
        _words(
            "deploys migrates scales indexes caches retries rolls replicates monitors profiles refactors "
            "builds tests merges reviews benchmarks shards throttles restarts provisions"
        ),
        _words(
            "distributed stale idempotent asynchronous flaky slow fast concurrent durable degraded "
            "primary secondary internal legacy experimental"
        ),
    ),
    Topic(
        "sales",
        _words(
            "customer prospect lead pipeline quota deal contract renewal discount pricing tier seat "
            "proposal demo territory account forecast churn upsell invoice procurement champion "
            "objection competitor trial onboarding partner reseller region quarter target commission"
        ),
        _words(
            "qualifies negotiates forecasts renews closes discounts prices demos escalates signs "
            "expands prospects onboards upsells tracks"
        ),
        _words(
            "enterprise strategic annual quarterly regional inbound outbound committed qualified "
            "weighted discounted premium standard"
        ),
    ),
    Topic(
        "people",
        _words(
            "employee manager hiring interview candidate offer onboarding laptop buddy benefits leave "
            "vacation payroll review feedback promotion career ladder mentor team offsite handbook "
            "policy training compensation equity headcount recruiter referral probation"
        ),
        _words(
            "hires interviews mentors promotes trains approves schedules welcomes supports reviews "
            "coaches relocates evaluates"
        ),
        _words("remote hybrid parental annual mandatory optional confidential senior junior new full-time part-time"),
    ),
    Topic(
        "finance",
        _words(
            "budget expense invoice receipt reimbursement ledger audit tax revenue margin cost "
            "forecast vendor payment approval threshold card subscription accrual reconciliation "
            "statement cashflow runway spend allocation controller"
        ),
        _words(
            "approves reimburses reconciles audits allocates invoices books accrues reports "
            "forecasts pays spends reviews"
        ),
        _words("monthly fiscal capital operational approved pending overdue recurring variable fixed net"),
    ),
    Topic(
        "support",
        _words(
            "ticket customer escalation response resolution queue macro sla priority bug workaround "
            "refund complaint satisfaction survey agent shift handover knowledge article chat email "
            "callback outage status triage severity"
        ),
        _words(
            "triages escalates resolves answers refunds reproduces tags assigns closes reopens "
            "apologizes follows routes"
        ),
        _words("urgent critical minor open pending resolved angry happy first-line second-line public"),
    ),
    Topic(
        "security",
        _words(
            "access permission role token secret credential password key certificate vulnerability "
            "patch audit firewall encryption breach phishing device laptop vpn sso mfa policy "
            "incident review compliance retention logging"
        ),
        _words("rotates revokes grants encrypts audits patches scans blocks detects reports enforces reviews signs"),
        _words("privileged encrypted expired compromised least-privilege mandatory shared personal external"),
    ),
    Topic(
        "product",
        _words(
            "feature roadmap release launch experiment metric user persona feedback research "
            "prototype design spec requirement priority backlog milestone beta cohort funnel "
            "retention activation pricing announcement changelog"
        ),
        _words(
            "launches prioritizes ships measures validates designs specifies interviews iterates "
            "announces deprecates tests"
        ),
        _words("new beta public internal mobile enterprise self-serve onboarding quarterly major minor"),
    ),
    Topic(
        "operations",
        _words(
            "office facility vendor shipment inventory warehouse supplier order delivery schedule "
            "capacity shift maintenance contract renewal travel booking desk badge parking "
            "equipment procurement logistics"
        ),
        _words("orders ships schedules books renews maintains stocks delivers tracks replaces inspects"),
        _words("weekly on-site international domestic preferred approved urgent spare main temporary"),
    ),
)


def _zipf_weights(n: int, exponent: float = 0.9) -> list[float]:
    return [1.0 / (rank + 1) ** exponent for rank in range(n)]


class TextGenerator:
    """Sentences, documents, passages and queries from one seeded random stream."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self._weights = {
            topic.name: (
                _zipf_weights(len(topic.nouns)),
                _zipf_weights(len(topic.verbs)),
                _zipf_weights(len(topic.adjectives)),
            )
            for topic in TOPICS
        }

    def topic(self) -> Topic:
        return self.rng.choice(TOPICS)

    def _pick(self, words: tuple[str, ...], weights: list[float]) -> str:
        return self.rng.choices(words, weights=weights)[0]

    def noun(self, topic: Topic) -> str:
        return self._pick(topic.nouns, self._weights[topic.name][0])

    def verb(self, topic: Topic) -> str:
        return self._pick(topic.verbs, self._weights[topic.name][1])

    def adjective(self, topic: Topic) -> str:
        return self._pick(topic.adjectives, self._weights[topic.name][2])

    def _noun_phrase(self, topic: Topic) -> list[str]:
        phrase = [self.rng.choice(DETERMINERS)]
        if self.rng.random() < 0.45:
            phrase.append(self.adjective(topic))
        phrase.append(self.noun(topic))
        return phrase

    def sentence(self, topic: Topic) -> str:
        words = [*self._noun_phrase(topic)]
        if self.rng.random() < 0.25:
            words.append(self.rng.choice(ADVERBS))
        words += [self.verb(topic), *self._noun_phrase(topic)]
        for _ in range(self.rng.randint(0, 2)):
            words += [self.rng.choice(FUNCTION_PREPOSITIONS), *self._noun_phrase(topic)]
        if self.rng.random() < 0.4:
            words += [self.rng.choice(CONNECTIVES), *self._noun_phrase(topic), self.verb(topic)]
            words += self._noun_phrase(topic)
        text = " ".join(words)
        return text[0].upper() + text[1:] + "."

    def paragraph(self, topic: Topic, sentences: int) -> str:
        return " ".join(self.sentence(topic) for _ in range(sentences))

    def title(self, topic: Topic) -> str:
        words = [self.adjective(topic), self.noun(topic), self.noun(topic), self.rng.choice(DOC_KINDS)]
        text = " ".join(words)
        return text[0].upper() + text[1:]

    def markdown_document(self, target_bytes: int = 1000) -> tuple[str, str]:
        """(title, body): a `#` heading, an intro, one or two `##` sections; about `target_bytes` long."""
        topic = self.topic()
        title = self.title(topic)
        target = int(target_bytes * self.rng.uniform(0.85, 1.15))
        sections = self.rng.sample(SECTIONS, self.rng.randint(1, 2))
        parts = [f"# {title}", self.paragraph(topic, self.rng.randint(2, 3))]
        length = sum(len(p) + 2 for p in parts)
        for index, section in enumerate(sections):
            parts.append(f"## {section}")
            budget = (target - length) // (len(sections) - index)
            written = 0
            while written < budget - 40:
                paragraph = self.paragraph(topic, self.rng.randint(1, 3))
                parts.append(paragraph)
                written += len(paragraph) + 2
            length += written
        return title, "\n\n".join(parts)

    def passage(self, min_words: int = 70, max_words: int = 150) -> tuple[str, str, str]:
        """(topic name, title, one paragraph of min..max words) — one chunk's worth of text."""
        topic = self.topic()
        title = self.title(topic)
        goal = self.rng.randint(min_words, max_words)
        sentences: list[str] = []
        count = 0
        while count < goal:
            sentence = self.sentence(topic)
            sentences.append(sentence)
            count += len(sentence.split())
        words = " ".join(sentences).split()[:max_words]
        return topic.name, title, " ".join(words)

    def query(self) -> str:
        """A search the way people type one: a few keywords, or a short question."""
        topic = self.topic()
        roll = self.rng.random()
        if roll < 0.45:
            words = [self.noun(topic) for _ in range(self.rng.randint(1, 2))]
            if self.rng.random() < 0.5:
                words.insert(0, self.adjective(topic))
            return " ".join(dict.fromkeys(words))
        if roll < 0.8:
            prep = self.rng.choice(FUNCTION_PREPOSITIONS)
            return f"how do we {self.verb(topic).rstrip('s')} {self.noun(topic)} {prep} {self.noun(topic)}"
        return f"what is the {self.adjective(topic)} {self.noun(topic)} {self.rng.choice(DOC_KINDS).lower()}"
