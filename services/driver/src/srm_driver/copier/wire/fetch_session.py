"""One source broker's incremental fetch session (KIP-227), as the client keeps it.

Without a session every Fetch names every partition the unit reads from that broker and
every answer lists them all, data or not: at a few thousand idle partitions a unit
spends its time writing and parsing those lists, and the broker reading them. With one,
the first Fetch (session 0, epoch 0) names them all and the broker answers with a session
id; each later Fetch (that id, the next epoch) names only the partitions whose fetch
offset changed or that are new to the session, and forgets those no longer read; the
broker answers only for partitions with records, an error, or a high watermark, last
stable or log start offset other than it last said.

What the unit needs from an answer is kept equal to the stateless Fetch's for the
partitions it asked about: a partition named in this request (new, moved, planned again)
that the broker leaves out of its answer is given an empty answer with the offsets it
last said (the broker leaves a partition out only when they did not change). A session
the broker no longer knows (``FETCH_SESSION_ID_NOT_FOUND``, ``INVALID_FETCH_SESSION_EPOCH``)
or a Fetch without an answer starts over with a full Fetch. Pure: no I/O here.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from srm_driver.copier.wire.fetch import EMPTY, FetchedPartition

Key = tuple[str, int]
# FETCH_SESSION_ID_NOT_FOUND, INVALID_FETCH_SESSION_EPOCH: fetch in full again.
STARTS_OVER = frozenset({70, 71})
_LAST_EPOCH = (1 << 31) - 1


class FetchSession:
    """See the module docstring. ``request`` then ``answered`` (or ``reset``), in turn."""

    def __init__(self) -> None:
        self.id = 0
        self.epoch = 0
        self._offsets: dict[Key, int] = {}  # what the broker's session holds
        self._said: dict[Key, tuple[int, int, int]] = {}  # its last high, stable, start
        self._named: list[Key] = []  # the partitions the request in flight names

    def request(
        self, wanted: Mapping[Key, int]
    ) -> tuple[int, int, list[tuple[str, int, int]], dict[str, list[int]]]:
        """(session id, epoch, the partitions to name with their offsets, the partitions
        to forget by topic) for a Fetch of ``wanted`` (partition: offset)."""
        if self.id == 0:
            self.epoch = 0
            self._offsets = dict(wanted)
            self._said = {}
            self._named = list(wanted)
            return 0, 0, [(t, p, offset) for (t, p), offset in wanted.items()], {}
        offsets, said = self._offsets, self._said
        forgotten: dict[str, list[int]] = {}
        for key in [key for key in offsets if key not in wanted]:
            del offsets[key]
            said.pop(key, None)
            forgotten.setdefault(key[0], []).append(key[1])
        named = [key for key, offset in wanted.items() if offsets.get(key) != offset]
        for key in named:
            offsets[key] = wanted[key]
        self._named = named
        self.epoch = 1 if self.epoch >= _LAST_EPOCH else self.epoch + 1
        return self.id, self.epoch, [(t, p, wanted[(t, p)]) for t, p in named], forgotten

    def answered(
        self, session_id: int, answers: Sequence[FetchedPartition]
    ) -> list[FetchedPartition]:
        """An answer without an error of its own: the partitions' answers as a stateless
        Fetch would have given them for the partitions named (an answer's own error:
        :meth:`reset`, and fetch in full next)."""
        if self.epoch == 0:
            self.id = session_id  # 0: the broker keeps none; the next Fetch is full again
        said = self._said
        answered: set[Key] = set()
        for answer in answers:
            key = (answer.topic, answer.partition)
            answered.add(key)
            said[key] = (answer.high_watermark, answer.last_stable_offset, answer.log_start_offset)
        return list(answers) + list(self._unchanged(k for k in self._named if k not in answered))

    def _unchanged(self, keys: Iterable[Key]) -> Iterable[FetchedPartition]:
        for key in keys:
            if (offsets := self._said.get(key)) is not None:
                yield FetchedPartition(key[0], key[1], 0, *offsets, (), EMPTY)

    def reset(self) -> None:
        self.id, self.epoch, self._offsets, self._said, self._named = 0, 0, {}, {}, []
