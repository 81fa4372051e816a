"""A piece of a big file as a first-pass worker process maps it, read where the page cache holds
it instead of copied into the worker's buffer: on this kind of VM the copy of a 16 MiB piece
cost 9-10 ms of a ~60 ms piece, the map ~1 ms (docs/redaction.md, session 51).

A map starts at a page, a piece anywhere: `MappedPiece` offers the piece alone through the part
of the bytes API the first pass reads (length, slices, `find`, `rfind`, `endswith`, `in`,
`decode`), and `buffer` gives Hyperscan and numpy the piece's memory itself. Only a worker
process maps (`bytescan.warm_up`): a file cut short under the map kills the process that reads
the lost pages, and its piece is then read again by the command, which never maps."""

from __future__ import annotations

import contextlib
import mmap
from typing import Any

from analyzer.parse.bytescan import mapped_range, np

HIGH_BITS = 0x8080808080808080  # a byte outside ASCII has its high bit set


class MappedPiece:
    """file[start:end] mapped (see the module's docstring)."""

    __slots__ = ("_map", "_origin", "_size", "buffer")

    def __init__(self, chunk: mmap.mmap, origin: int):
        self._map = chunk
        self._origin = origin
        self._size = len(chunk) - origin
        self.buffer = memoryview(chunk)[origin:]

    @classmethod
    def of(cls, path: str, start: int, end: int) -> MappedPiece | None:
        """The piece mapped, or None where `bytescan.mapped_range` cannot map it whole."""
        mapped = mapped_range(path, start, end)
        return None if mapped is None else cls(*mapped)

    def __len__(self) -> int:
        return self._size

    def __getitem__(self, key: slice) -> bytes:
        """A slice (of step 1: the first pass takes no other; anything else is refused, never
        answered wrong)."""
        if not isinstance(key, slice) or key.step not in (None, 1):
            raise TypeError("a mapped piece is sliced with a step of 1 only")
        start, stop, _ = key.indices(self._size)
        return self._map[self._origin + start : self._origin + max(start, stop)]

    def __contains__(self, sub: bytes) -> bool:
        return self.find(sub) >= 0

    def find(self, sub: bytes, start: int = 0, end: int | None = None) -> int:
        at = self._map.find(sub, *self._bounds(start, end))
        return at - self._origin if at >= 0 else -1

    def rfind(self, sub: bytes, start: int = 0, end: int | None = None) -> int:
        at = self._map.rfind(sub, *self._bounds(start, end))
        return at - self._origin if at >= 0 else -1

    def endswith(self, suffix: bytes) -> bool:
        return len(suffix) <= self._size and self._map[len(self._map) - len(suffix) :] == suffix

    def decode(self, *args: Any) -> str:
        return str(self.buffer, *args) if args else str(self.buffer, "utf-8")

    def isascii(self) -> bool:
        """Whether every byte is ASCII, read a word at a time (numpy: no copy of the piece)."""
        if np is None:  # pragma: no cover - numpy comes with the wheels Hyperscan needs
            return bytes(self.buffer).isascii()
        head = -self._origin % 8  # bytes before the first word boundary of the map
        words = (self._size - head) // 8 if self._size > head else 0
        tail = head + 8 * words
        edges = bytes(self.buffer[:head]) + bytes(self.buffer[tail:])
        if not edges.isascii():
            return False
        if not words:
            return True
        view = np.frombuffer(self._map, np.uint64, count=words, offset=self._origin + head)
        found = int(np.bitwise_or.reduce(view)) & HIGH_BITS
        del view
        return not found

    def _bounds(self, start: int, end: int | None) -> tuple[int, int]:
        start, end, _ = slice(start, end).indices(self._size)
        return self._origin + start, self._origin + end

    def close(self) -> None:
        """Unmap now, unless a view of it is still held (then when the last one goes)."""
        with contextlib.suppress(BufferError):
            self.buffer.release()
            self._map.close()


def buffer_of(raw: Any) -> Any:
    """What Hyperscan and numpy read for a piece: its bytes, or a mapped piece's memory."""
    return raw.buffer if isinstance(raw, MappedPiece) else raw
