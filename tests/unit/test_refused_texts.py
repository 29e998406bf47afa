"""Texts the embedder refused alone: set aside, tried again after a delay that doubles, up to a bound."""

from cortex_indexer.refused_texts import RefusedTexts


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_refused_text_is_set_aside_until_its_delay_has_passed() -> None:
    clock = Clock()
    refused = RefusedTexts[int](first_delay=60, longest_delay=3600, clock=clock)
    refused.refused(7)
    assert refused.set_aside() == [7]
    clock.now += 59
    assert refused.set_aside() == [7]
    clock.now += 1
    assert refused.set_aside() == []


def test_each_refusal_doubles_the_delay_up_to_the_longest() -> None:
    clock = Clock()
    refused = RefusedTexts[str](first_delay=60, longest_delay=300, clock=clock)
    delays = []
    for _ in range(5):
        refused.refused("a")
        start = clock.now
        while refused.set_aside():
            clock.now += 1
        delays.append(clock.now - start)
    assert delays == [60, 120, 240, 300, 300]


def test_an_embedded_text_starts_again_from_the_first_delay() -> None:
    clock = Clock()
    refused = RefusedTexts[int](first_delay=10, longest_delay=1000, clock=clock)
    refused.refused(1)
    refused.refused(1)  # 20 s now
    refused.embedded(1)
    assert len(refused) == 0
    refused.refused(1)
    clock.now += 10
    assert refused.set_aside() == []
