"""The origin rule of loop-free active/active under the identity policy (DESIGN.md, beyond
MM2 3), as the Python copy slot applies it to every record it copies into a shared
(identity policy) target. ``golden/origin_rule.json`` holds the cases it is tested against.

* no origin header: the record was produced on the source; the copy gets one naming the
  source (``STAMP``);
* the first origin header names the target: the record was produced there, copying it
  back would loop (``DROP``);
* it names another cluster: copied as it is (``KEEP``; never rewritten on later hops);
* empty, null or not UTF-8: :class:`MalformedOrigin`, a poison record.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

STAMP: Final = "stamp"
KEEP: Final = "keep"
DROP: Final = "drop"

Header = tuple[str, bytes | None]


class MalformedOrigin(ValueError):
    """A record whose origin header cannot name a cluster (the message says why)."""


def decide(headers: Iterable[Header] | None, header: str, target: str) -> str:
    """``STAMP``, ``KEEP`` or ``DROP`` for a record with ``headers`` (in order) copied by
    a flow into ``target``; :class:`MalformedOrigin` when its first ``header`` is bad."""
    for key, value in headers or ():
        if key != header:
            continue
        if not value:
            raise MalformedOrigin(
                f"header '{header}' is empty; it must hold the alias of the cluster the record"
                " was produced on"
            )
        try:
            origin = value.decode("utf-8")
        except UnicodeDecodeError:
            raise MalformedOrigin(
                f"header '{header}' is not UTF-8; it must hold a cluster alias"
            ) from None
        return DROP if origin == target else KEEP
    return STAMP
