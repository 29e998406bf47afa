"""`collector_held`: no automatic garbage collection while any bulk build holds it; back on after the last."""

import gc

import pytest

from cortex_telemetry.heap import collector_held


def test_the_collector_is_held_until_the_last_holder_lets_go() -> None:
    assert gc.isenabled()
    with collector_held():
        assert not gc.isenabled()
        with collector_held():  # two loads at once
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()


def test_a_failed_build_lets_the_collector_go() -> None:
    with pytest.raises(RuntimeError), collector_held():
        raise RuntimeError("the load failed")
    assert gc.isenabled()
