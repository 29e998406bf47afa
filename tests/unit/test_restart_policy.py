"""`cortex run` restarts a service that stopped on its own, after growing pauses, and gives up on one that
keeps stopping."""

from cortex_cli.restarts import RestartPolicy


def test_pauses_double_up_to_the_limit_then_it_gives_up() -> None:
    policy = RestartPolicy(max_restarts=5, window_seconds=600, first_delay_seconds=1, max_delay_seconds=4)

    delays = [policy.delay("indexer", now) for now in (0, 10, 20, 30, 40, 50)]

    assert delays == [1, 2, 4, 4, 4, None]


def test_restarts_older_than_the_window_no_longer_count() -> None:
    policy = RestartPolicy(max_restarts=2, window_seconds=60)

    assert policy.delay("gateway", 0) == 1
    assert policy.delay("gateway", 30) == 2
    assert policy.delay("gateway", 59) is None
    assert policy.delay("gateway", 80) == 2  # the one at 30 still counts; the one at 0 no longer


def test_each_service_has_its_own_count() -> None:
    policy = RestartPolicy(max_restarts=1)

    assert policy.delay("aggregator.1", 0) == 1
    assert policy.delay("aggregator.2", 0) == 1
    assert policy.delay("aggregator.1", 1) is None
