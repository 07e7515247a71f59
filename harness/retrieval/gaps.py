"""The ids a store lacks, as the gaps between those it holds (docs/retrieval.md#the-index).

A point's id is its chunk's position, and Qdrant scrolls a collection in ascending id order when
no other order is asked for: a server's API says so, qdrant-client's local mode sorts its ids
before each page, and the engine in-process merges its segments' ids sorted. The ids missing
below a total are then the gaps between consecutive ids scrolled, and a resume holds those gaps,
three integers each, never a set of the ids present nor a list of every missing one (at 21M chunks
half built, about a gigabyte of set and 10M ints, where a few gaps take a few bytes).
"""

from __future__ import annotations

from array import array
from bisect import bisect_right
from typing import Iterable, Iterator, Sequence, overload

from freshrag.retrieval.config import RetrievalError


class Missing(Sequence[int]):
    """Ascending ids as the stretches they fall in: iterated, counted, indexed and searched as a
    sequence of ids, held as each stretch's bounds and offset (24 bytes a stretch, whatever its
    length)."""

    def __init__(self, stretches: Iterable[range] = ()):
        self._starts = array("q")
        self._stops = array("q")
        self._before = array("q")  # ids in the stretches before each: for indexing
        self._count = 0
        for stretch in stretches:
            if stretch.step != 1:
                raise ValueError(f"a stretch of missing ids has step 1, not {stretch.step}")
            self.add(stretch.start, stretch.stop)

    def add(self, start: int, stop: int) -> None:
        """The ids start..stop-1 appended: after every id held so far."""
        if stop <= start:
            return
        if self._stops and start < self._stops[-1]:
            raise ValueError(f"missing ids are ascending: {start} came after "
                             f"{self._stops[-1] - 1}")
        if self._stops and start == self._stops[-1]:
            self._stops[-1] = stop  # adjoining: one stretch
        else:
            self._starts.append(start)
            self._stops.append(stop)
            self._before.append(self._count)
        self._count += stop - start

    @property
    def gaps(self) -> int:
        """How many stretches hold the ids: what the representation's size grows with."""
        return len(self._starts)

    def stretches(self) -> Iterator[range]:
        return (range(start, stop) for start, stop in zip(self._starts, self._stops))

    def __len__(self) -> int:
        return self._count

    def __iter__(self) -> Iterator[int]:
        for stretch in self.stretches():
            yield from stretch

    def __contains__(self, value: object) -> bool:
        if not isinstance(value, int):
            return False
        k = bisect_right(self._starts, value) - 1
        return k >= 0 and value < self._stops[k]

    @overload
    def __getitem__(self, index: int) -> int: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[int]: ...

    def __getitem__(self, index: int | slice) -> int | Sequence[int]:
        if isinstance(index, slice):
            return [self[i] for i in range(self._count)[index]]
        if index < 0:
            index += self._count
        if not 0 <= index < self._count:
            raise IndexError("missing id index out of range")
        k = bisect_right(self._before, index) - 1
        return self._starts[k] + index - self._before[k]

    def __repr__(self) -> str:
        shown = ", ".join(f"{r.start}..{r.stop - 1}" for _, r in zip(range(5), self.stretches()))
        more = f", ... ({self.gaps} stretches)" if self.gaps > 5 else ""
        return f"Missing({self._count} ids: {shown}{more})"


def missing(held: Iterable[int], total: int, where: str) -> Missing:
    """The ids below `total` that `held` lacks, `held` a store's ids in the ascending order
    Qdrant scrolls them; the walk stops at the first id past the total. An id out of order
    (which a scroll by id never gives) is refused naming `where`, rather than a gap missed."""
    found = Missing()
    expected = 0  # the id the store holds next if it lacks none
    for i in held:
        if i < expected:
            raise RetrievalError(f"{where} gave point id {i} after {expected - 1}: its ids did "
                                 f"not come in ascending order, which finding the missing ones "
                                 f"relies on")
        if i >= total:
            break
        found.add(expected, i)
        expected = i + 1
    found.add(expected, total)
    return found
