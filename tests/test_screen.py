"""RE2 screens (memwiki.text.screen) are a necessary condition: every text a screened pattern matches, its screen finds.

A screen too narrow would silently skip a detector: the texts are every canary of the tests and of the blind rounds
(seeded), the detectors' own cases, and the same texts with Unicode spaces and digits, lower- and upper-cased.
"""

from __future__ import annotations

import importlib
import random

import pytest
import re2

from memwiki.text.screen import Screened, re2_safe
from tests import canaries
from tests.blind.harness import load_set
from tests.test_detect_classes import CONTEXT, HOSTS, ORDINARY, PERSONAL, PROVIDERS, SHAPES

MODULES = [f"memwiki.site.gate.detect.{m}" for m in ("context", "hosts", "personal", "providers", "shapes", "spans")]
MODULES += ["memwiki.site.gate.detect.detectors", "memwiki.text.markers", "memwiki.site.gate.offline"]


def _screened() -> dict[str, Screened]:
    found = {}
    for name in MODULES:
        for attr, value in vars(importlib.import_module(name)).items():
            if isinstance(value, Screened):
                found[f"{name}.{attr}"] = value
    return found


def _texts() -> list[str]:
    texts = [t for t, _ in CONTEXT + SHAPES + PERSONAL + HOSTS + PROVIDERS] + list(ORDINARY)
    rng = random.Random(7)
    texts += [make(rng)[1] for make in canaries.KINDS.values()]
    for n in range(1, 8):
        blind = load_set(f"round{n}")
        texts += [make(rng)[1] for make in blind.KINDS.values()] + list(blind.ORDINARY)
    variants = []
    for t in texts:  # Python's `\s`, `\d` and `\b` read Unicode; RE2's read ASCII
        variants += [t.lower(), t.upper(), t.replace(" ", "\u3000"), t.replace(" ", "\xa0"), t.translate(_WIDE)]
    return texts + variants


_WIDE = str.maketrans("0123456789", "٠١٢٣٤٥٦٧٨٩")  # Arabic-Indic digits: `\d` in Python


SCREENED = _screened()
TEXTS = _texts()


def test_the_detectors_screen_their_costly_patterns() -> None:
    assert len(SCREENED) >= 15


def missed(screened: Screened) -> list[str]:
    """The texts `screened`'s pattern matches and its screen does not find (as `Screened` reads them)."""
    screen = re2.compile(screened.screen)
    return [t for t in TEXTS if screened.pattern.search(t) and not screen.search(re2_safe(t))]


@pytest.mark.parametrize("name", sorted(SCREENED))
def test_a_screen_finds_every_text_its_pattern_matches(name: str) -> None:
    assert not missed(SCREENED[name]), f"{name}: the screen misses {missed(SCREENED[name])[:3]}"


def test_a_screen_that_misses_is_caught() -> None:
    """The check above can fail: a screen that forgot its pattern's `(?i)` misses the canaries in capitals."""
    assert missed(Screened(r"(?i)password", r"password"))


def test_screens_of_two_groups_are_read_apart_and_each_set_takes_a_new_screen() -> None:
    """Each group's screens are one RE2 set of their own (the markers read case-folded copies no detector reads);
    a screen made after a group was read is read too, and the others keep their answers."""
    zebra = Screened(r"zebra\d", group="test-a")
    okapi = Screened(r"okapi\d", group="test-b")
    assert zebra.occurs("a zebra7 here") and not okapi.occurs("a zebra7 here")
    assert okapi.occurs("an okapi3") and not zebra.occurs("an okapi3")
    later = Screened(r"gnu\d", group="test-a")
    assert later.occurs("zebra7 and gnu1") and zebra.occurs("zebra7 and gnu1") and not later.occurs("a zebra7 here")
