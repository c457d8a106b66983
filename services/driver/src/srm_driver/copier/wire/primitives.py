"""Kafka's wire primitives, non-flexible encoding: big-endian integers, strings and
arrays with fixed-width lengths (the request versions this layer speaks are all older
than their first flexible version, so no varints and no tagged fields).

A response is read by a :class:`Reader`, a cursor over one memoryview of the response's
buffer: a ``bytes`` field (a partition's record batches) comes back as a slice of that
buffer, never a copy. Requests are built by :class:`Writer` (a bytearray) for the small
parts; the large ones (record batches) are never written into it but sent beside it.

    Reader(memoryview(b"\\x00\\x02hi\\xff\\xff")).string()          -> "hi"
    then .nullable_string()                                          -> None
    Writer().int16(1).string("t").array(0).buffer == b"\\x00\\x01\\x00\\x01t\\x00\\x00\\x00\\x00"
"""

from __future__ import annotations

import struct

from srm_driver.copier.wire.errors import WireError

_I8 = struct.Struct(">b")
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")


class Reader:
    """A cursor over one response body; a read past its end is a :class:`WireError`
    (a response shorter than its version says is a broker or framing fault)."""

    __slots__ = ("view", "position")

    def __init__(self, view: memoryview, position: int = 0) -> None:
        self.view = view
        self.position = position

    def _take(self, fmt: struct.Struct) -> int:
        at = self.position
        if at + fmt.size > len(self.view):
            raise WireError(f"a response ends at byte {len(self.view)}, inside a field at {at}")
        self.position = at + fmt.size
        value: int = fmt.unpack_from(self.view, at)[0]
        return value

    def int8(self) -> int:
        return self._take(_I8)

    def boolean(self) -> bool:
        return self._take(_I8) != 0

    def int16(self) -> int:
        return self._take(_I16)

    def int32(self) -> int:
        return self._take(_I32)

    def int64(self) -> int:
        return self._take(_I64)

    def _slice(self, length: int) -> memoryview:
        at = self.position
        if length < 0 or at + length > len(self.view):
            raise WireError(f"a field of {length} bytes at byte {at} overruns the response")
        self.position = at + length
        return self.view[at : at + length]

    def nullable_string(self) -> str | None:
        length = self.int16()
        return None if length < 0 else str(self._slice(length), "utf-8")

    def string(self) -> str:
        value = self.nullable_string()
        if value is None:
            raise WireError(f"a null string where the protocol has none, byte {self.position}")
        return value

    def nullable_bytes(self) -> memoryview | None:
        """An int32-length ``bytes`` field as a slice of the response (no copy)."""
        length = self.int32()
        return None if length < 0 else self._slice(length)

    def array(self) -> int:
        """An array's element count (-1: a null array, read as empty)."""
        return max(self.int32(), 0)

    def int32_array(self) -> list[int]:
        return [self.int32() for _ in range(self.array())]

    def done(self) -> bool:
        return self.position == len(self.view)


class Writer:
    """The small parts of a request, appended in order (each method returns self)."""

    __slots__ = ("buffer",)

    def __init__(self) -> None:
        self.buffer = bytearray()

    def int8(self, value: int) -> Writer:
        self.buffer += _I8.pack(value)
        return self

    def boolean(self, value: bool) -> Writer:
        return self.int8(1 if value else 0)

    def int16(self, value: int) -> Writer:
        self.buffer += _I16.pack(value)
        return self

    def int32(self, value: int) -> Writer:
        self.buffer += _I32.pack(value)
        return self

    def int64(self, value: int) -> Writer:
        self.buffer += _I64.pack(value)
        return self

    def nullable_string(self, value: str | None) -> Writer:
        if value is None:
            return self.int16(-1)
        encoded = value.encode("utf-8")
        self.int16(len(encoded))
        self.buffer += encoded
        return self

    def string(self, value: str) -> Writer:
        return self.nullable_string(value)

    def array(self, count: int) -> Writer:
        return self.int32(count)

    def int32_array(self, values: list[int]) -> Writer:
        self.array(len(values))
        for value in values:
            self.int32(value)
        return self
