"""The cyclic garbage collector paused around a block: off inside, on again after (also after an
error), and a caller's own choice to keep it off left alone."""

import gc
from collections.abc import Iterator

import pytest

from stream_dedup import collector

pytestmark = pytest.mark.unit


@pytest.fixture(autouse=True)
def collecting() -> Iterator[None]:
    gc.enable()
    yield
    gc.enable()


def test_paused_inside_and_nested_and_on_again_after() -> None:
    with collector.paused():
        assert not gc.isenabled()
        with collector.paused():
            assert not gc.isenabled()
        assert not gc.isenabled()  # an inner block does not turn it on early
    assert gc.isenabled()


def test_on_again_after_an_error() -> None:
    with pytest.raises(RuntimeError), collector.paused():
        raise RuntimeError("boom")
    assert gc.isenabled()


def test_a_collector_turned_off_by_the_caller_stays_off() -> None:
    gc.disable()
    with collector.paused():
        pass
    assert not gc.isenabled()
