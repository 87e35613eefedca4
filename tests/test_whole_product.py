"""The whole product, run as a state machine in the suite (issue 53).

A bounded, seeded number of examples of :class:`bench.whole_product.WholeProduct`; the
bench (``bench/simulate.py``) runs many more, and the daemon over simulated weeks.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, seed, settings
from hypothesis.stateful import run_state_machine_as_test

from bench.whole_product import WholeProduct


@pytest.fixture
def machine(redis_home: Path) -> Iterator[type[WholeProduct]]:
    WholeProduct.configure(redis_home)
    yield WholeProduct
    WholeProduct.shutdown()


@pytest.mark.soak
def test_the_whole_product_holds_together(machine: type[WholeProduct]) -> None:
    seeded = seed(20261127)(type("Seeded", (machine,), {}))
    run_state_machine_as_test(
        seeded,
        settings=settings(
            max_examples=6,
            stateful_step_count=30,
            deadline=None,
            database=None,
            suppress_health_check=list(HealthCheck),
        ),
    )
    assert machine.counters.steps >= 60
