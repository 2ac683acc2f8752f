"""Line matching for the unified diff, in time close to linear in the file size.

The common prefix and suffix are trimmed; lines that occur once on each side
(patience diff) anchor what is left, recursively; a gap with no such line is
diffed with Myers' O(ND) algorithm. All of it draws on one work budget that grows
with the file's size, so no input can make a diff slow: a gap the budget cannot
cover is reported as replaced whole. That is still a correct diff, only a longer
one, and ``LineMatch.complete`` says so.
"""

from __future__ import annotations

import bisect
import math
from collections import Counter
from collections.abc import Hashable, Iterator, Sequence
from dataclasses import dataclass

Block = tuple[int, int, int]  # (start in old, start in new, length) of equal lines
Opcode = tuple[str, int, int, int, int]  # as difflib's: (tag, i1, i2, j1, j2)

# Work is counted in line comparisons and search steps: a few thousand a millisecond.
WORK_BASE = 20_000
WORK_PER_LINE = 8
# Gaps this small go straight to Myers: counting their lines would cost more.
SMALL_GAP = 8


@dataclass(frozen=True, slots=True)
class LineMatch:
    blocks: list[Block]  # sorted, maximal, ending with the (len(old), len(new), 0) sentinel
    complete: bool


def match_lines(old: Sequence[Hashable], new: Sequence[Hashable]) -> LineMatch:
    ids: dict[Hashable, int] = {}
    a = [ids.setdefault(line, len(ids)) for line in old]
    b = [ids.setdefault(line, len(ids)) for line in new]
    matcher = _Matcher(a, b, WORK_BASE + WORK_PER_LINE * (len(a) + len(b)))
    return LineMatch(matcher.run(), matcher.complete)


def opcodes(blocks: list[Block]) -> list[Opcode]:
    """The edit script between the matching blocks, as ``difflib`` spells it."""
    codes: list[Opcode] = []
    i = j = 0
    for ai, bj, size in blocks:
        if i < ai or j < bj:
            tag = "replace" if i < ai and j < bj else "delete" if i < ai else "insert"
            codes.append((tag, i, ai, j, bj))
        i, j = ai + size, bj + size
        if size:
            codes.append(("equal", ai, i, bj, j))
    return codes


def grouped(codes: list[Opcode], context: int) -> Iterator[list[Opcode]]:
    """The changes with ``context`` equal lines around them, one group per hunk
    (``difflib.SequenceMatcher.get_grouped_opcodes``, over our opcodes)."""
    if not any(tag != "equal" for tag, *_ in codes):
        return
    codes = list(codes)
    tag, i1, i2, j1, j2 = codes[0]
    if tag == "equal":
        codes[0] = tag, max(i1, i2 - context), i2, max(j1, j2 - context), j2
    tag, i1, i2, j1, j2 = codes[-1]
    if tag == "equal":
        codes[-1] = tag, i1, min(i2, i1 + context), j1, min(j2, j1 + context)
    group: list[Opcode] = []
    for tag, i1, i2, j1, j2 in codes:
        if tag == "equal" and i2 - i1 > 2 * context:
            group.append((tag, i1, min(i2, i1 + context), j1, min(j2, j1 + context)))
            yield group
            group = []
            i1, j1 = max(i1, i2 - context), max(j1, j2 - context)
        group.append((tag, i1, i2, j1, j2))
    if group and not (len(group) == 1 and group[0][0] == "equal"):
        yield group


class _Matcher:
    def __init__(self, a: list[int], b: list[int], budget: int) -> None:
        self.a, self.b = a, b
        self.budget = budget
        self.complete = True
        self.blocks: list[Block] = []

    def run(self) -> list[Block]:
        gaps = [(0, len(self.a), 0, len(self.b))]
        while gaps:
            gaps.extend(self._split(*gaps.pop()))
        return _merged(sorted(self.blocks), len(self.a), len(self.b))

    def _split(self, alo: int, ahi: int, blo: int, bhi: int) -> list[tuple[int, int, int, int]]:
        """Match what is certain in the gap; return the smaller gaps still to do."""
        a, b = self.a, self.b
        start = alo
        while alo < ahi and blo < bhi and a[alo] == b[blo]:
            alo, blo = alo + 1, blo + 1
        if alo > start:
            self.blocks.append((start, blo - (alo - start), alo - start))
        end = ahi
        while alo < ahi and blo < bhi and a[ahi - 1] == b[bhi - 1]:
            ahi, bhi = ahi - 1, bhi - 1
        if ahi < end:
            self.blocks.append((ahi, bhi, end - ahi))
        if alo == ahi or blo == bhi:
            return []
        size = (ahi - alo) + (bhi - blo)
        if size <= SMALL_GAP:
            self._myers(list(range(alo, ahi)), list(range(blo, bhi)))
            return []
        if not self._spend(size):
            return []
        in_a, in_b = Counter(a[alo:ahi]), Counter(b[blo:bhi])
        anchors = _unique_anchors(a, b, alo, ahi, blo, bhi, in_a, in_b)
        if not anchors:
            # A line the other side lacks is in no match: leaving those out keeps
            # Myers' answer and makes a file that was rewritten cheap to diff.
            self._myers([i for i in range(alo, ahi) if a[i] in in_b], [j for j in range(blo, bhi) if b[j] in in_a])
            return []
        gaps = []
        for i, j in anchors:
            gaps.append((alo, i, blo, j))
            self.blocks.append((i, j, 1))
            alo, blo = i + 1, j + 1
        gaps.append((alo, ahi, blo, bhi))
        return gaps

    def _spend(self, work: int) -> bool:
        self.budget -= work
        if self.budget < 0:
            self.complete = False
        return self.budget >= 0

    def _myers(self, old: list[int], new: list[int]) -> None:
        """The longest common subsequence of the lines at positions ``old`` and
        ``new`` (Myers 1986, greedy forward), given up when it costs more than the
        budget left."""
        a, b = [self.a[i] for i in old], [self.b[j] for j in new]
        n, m = len(a), len(b)
        if not n or not m:
            return
        # Round d costs at least d steps, so the budget bounds how far d can go.
        max_d = min(n + m, math.isqrt(2 * max(self.budget, 0)) + 1)
        offset = max_d + 1
        v = [0] * (2 * offset + 1)
        trace: list[list[int]] = []
        work = 0
        for d in range(max_d + 1):
            for k in range(-d, d + 1, 2):
                if k == -d or (k != d and v[offset + k - 1] < v[offset + k + 1]):
                    x = v[offset + k + 1]
                else:
                    x = v[offset + k - 1] + 1
                y = x - k
                snake = x
                while x < n and y < m and a[x] == b[y]:
                    x, y = x + 1, y + 1
                v[offset + k] = x
                work += 1 + x - snake
                if x >= n and y >= m:
                    self.budget -= work
                    for i, j, size in _backtrack(trace, n, m):
                        self.blocks.extend((old[i + t], new[j + t], 1) for t in range(size))
                    return
            trace.append(v[offset - d:offset + d + 1])
            work += d
            if work > self.budget:
                break
        self.budget -= work
        self.complete = False  # the gap stays unmatched: replaced whole


def _backtrack(trace: list[list[int]], x: int, y: int) -> Iterator[Block]:
    """The diagonals (equal runs) of the path Myers found, from its end back."""
    for d in range(len(trace), 0, -1):
        previous = trace[d - 1]  # index k + (d - 1) holds diagonal k after round d - 1
        k = x - y
        down = k == -d or (k != d and previous[k - 1 + d - 1] < previous[k + 1 + d - 1])
        prev_k = k + 1 if down else k - 1
        prev_x = previous[prev_k + d - 1]
        mid_x = prev_x if down else prev_x + 1
        if x > mid_x:
            yield mid_x, mid_x - k, x - mid_x
        x, y = prev_x, prev_x - prev_k
    if x > 0:
        yield 0, 0, x


def _unique_anchors(
    a: list[int], b: list[int], alo: int, ahi: int, blo: int, bhi: int, in_a: Counter[int], in_b: Counter[int]
) -> list[tuple[int, int]]:
    """Lines that occur once in each side of the gap (``in_a`` and ``in_b`` count
    them), in the longest order both sides agree on (patience diff)."""
    where_b = {line: j for j, line in enumerate(b[blo:bhi], blo) if in_b[line] == 1 and in_a[line] == 1}
    pairs = [(i, where_b[line]) for i, line in enumerate(a[alo:ahi], alo) if line in where_b]
    # Longest increasing subsequence of the new positions, by patience sorting.
    tops: list[int] = []
    top_index: list[int] = []
    before: list[int] = []
    for index, (_, j) in enumerate(pairs):
        pile = bisect.bisect_left(tops, j)
        before.append(top_index[pile - 1] if pile else -1)
        if pile == len(tops):
            tops.append(j)
            top_index.append(index)
        else:
            tops[pile], top_index[pile] = j, index
    chain: list[tuple[int, int]] = []
    index = top_index[-1] if top_index else -1
    while index >= 0:
        chain.append(pairs[index])
        index = before[index]
    return chain[::-1]


def _merged(blocks: list[Block], n: int, m: int) -> list[Block]:
    out: list[Block] = []
    for i, j, size in blocks:
        if out and out[-1][0] + out[-1][2] == i and out[-1][1] + out[-1][2] == j:
            out[-1] = (out[-1][0], out[-1][1], out[-1][2] + size)
        elif size:
            out.append((i, j, size))
    out.append((n, m, 0))
    return out
