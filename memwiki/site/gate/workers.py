"""The privacy gate's judging of a layer's strings, shared with worker processes.

A cold build of a large store gates tens of thousands of distinct strings (the wiki's bodies, the graph's names
and predicates), each once, and the detectors are pure functions of a string. So, before the gate walks a large
layer's records, it has all their strings judged at once, on every core (`memwiki.common.workers.share_out`), when
the workers take off more than their start costs (`Judges.wanted`). A
verdict is a string's spans and whether the string marks its record private; the gate labels the spans itself
(its key, its counts and its list of redacted secrets stay in the build's process).
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Sequence
from concurrent.futures import BrokenExecutor, ProcessPoolExecutor
from typing import Protocol

from memwiki.common.workers import share_out, spawned_pool
from memwiki.site.gate.detect import Detectors
from memwiki.site.gate.detect.spans import Span

log = logging.getLogger("mkdocs.plugins.memwiki")
PER_STRING = 300  # what judging a string costs beyond its characters, in characters (a name costs what 300 do)
PARALLEL_MIN = 5_000_000  # work the workers must take off this process to pay for starting (~1.5 s of judging)
CHUNK = 100_000  # work per task: small enough to share out evenly, large enough to be worth sending

Verdict = tuple[list[Span], bool]  # the shown string's spans; whether the source's string marks its record private
Pair = tuple[str, str]  # the source's string, and the string shown (its local paths shortened)


class Rules(Protocol):
    """What a worker needs of memwiki.site.gate.filter.PrivacyRules (sent to it pickled, once)."""

    detectors: Detectors

    def private_text(self, text: str) -> bool: ...


_RULES: Rules | None = None  # a worker's rules (sent once, when it starts)


def judge(rules: Rules, pairs: Sequence[Pair]) -> list[Verdict]:
    """Each pair's verdict."""
    return [(rules.detectors.find(shown), rules.private_text(raw)) for raw, shown in pairs]


def _start(rules: Rules) -> None:
    global _RULES
    _RULES = rules


def _judge_there(pairs: Sequence[Pair]) -> list[Verdict]:
    assert _RULES is not None
    return judge(_RULES, pairs)


class Judges:
    """A build's judging: in this process, or with `workers` spawned processes beside it (started for the first
    layer large enough, kept until `stop`)."""

    def __init__(self, rules: Rules, workers: int) -> None:
        self.rules = rules
        self.workers = workers
        self._pool: ProcessPoolExecutor | None = None

    def wanted(self, texts: Collection[str]) -> bool:
        """Whether these strings are worth judging at once: workers there are, and they would take more work off
        this process than starting them costs (their share is `workers / (workers + 1)` of it: on two cores a
        10k store's wiki is judged faster here than with one worker)."""
        work = sum(map(len, texts)) + PER_STRING * len(texts)
        return self.workers > 0 and work * self.workers >= PARALLEL_MIN * (self.workers + 1)

    def judge(self, pairs: Sequence[Pair]) -> list[Verdict]:
        if self._pool is None:
            self._pool = spawned_pool(self.workers, _start, self.rules)
        chunks, chunk, size = [], [], 0
        for pair in pairs:
            chunk.append(pair)
            size += len(pair[1]) + PER_STRING
            if size >= CHUNK:
                chunks.append(chunk)
                chunk, size = [], 0
        if chunk:
            chunks.append(chunk)
        try:
            done = share_out(chunks, lambda c: judge(self.rules, c), self._pool, _judge_there, 2 * self.workers)
        except BrokenExecutor as exc:  # (a worker that could not start or died: the build goes on without them)
            log.warning("memwiki privacy: the gate's worker processes stopped (%s); judging in this one", exc)
            self.stop()
            return judge(self.rules, pairs)
        return [verdict for part in done for verdict in part]

    def stop(self) -> None:
        """No more workers: end the pool's (later layers are judged in this process)."""
        self.workers = 0
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
            self._pool = None
