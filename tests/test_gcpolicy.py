"""The plugin's garbage-collector policy: frozen objects are skipped, and nothing a build left stays frozen."""

from __future__ import annotations

import gc
import weakref

from memwiki.site.speed import gc_policy


class Node:
    def __init__(self) -> None:
        self.other: Node | None = None


def _cycle() -> weakref.ref[Node]:
    a, b = Node(), Node()
    a.other, b.other = b, a  # only the cyclic collector can free these
    return weakref.ref(a)


def test_a_new_build_collects_what_the_last_one_left_frozen() -> None:
    try:
        left = _cycle()
        gc_policy.freeze()  # as during a build
        assert gc.get_freeze_count() > 0
        gc.collect()
        assert left() is not None  # frozen: not collected
        gc_policy.start()  # the next build in this process (mkdocs serve)
        assert left() is None  # collected before freezing again
        assert gc.get_freeze_count() > 0
    finally:
        gc_policy.thaw()
    assert gc.get_freeze_count() == 0
    later = _cycle()
    gc.collect()
    assert later() is None  # thawed: the collector works as before


def test_paused_collects_nothing_inside_and_freezes_what_it_made() -> None:
    try:
        with gc_policy.paused():
            assert not gc.isenabled()
            gc.collect(0)  # (an explicit call still works; the automatic ones do not run)
            inside = _cycle()
            made = gc.get_count()[0]
            for _ in range(5 * gc.get_threshold()[0]):
                _cycle()
            assert gc.get_count()[0] > max(made, gc.get_threshold()[0])  # no automatic collection reset it
        assert gc.isenabled() and gc.get_freeze_count() > 0
        gc.collect()
        assert inside() is not None  # frozen with the rest of what the phase made
    finally:
        gc_policy.thaw()
    gc.collect()
    assert inside() is None


def test_a_build_collects_its_young_objects_less_often_and_puts_the_thresholds_back() -> None:
    usual = gc.get_threshold()
    try:
        gc_policy.start()
        assert gc.get_threshold() == gc_policy.BUILD_THRESHOLDS
        gc_policy.start()  # a second build in this process keeps them, and remembers the usual ones once
        assert gc.get_threshold() == gc_policy.BUILD_THRESHOLDS
    finally:
        gc_policy.thaw()
    assert gc.get_threshold() == usual
