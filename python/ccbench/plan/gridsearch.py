"""Adaptive classification of a grid: where a true/false property changes, sampled finely.

The search knows nothing about simulation: it asks a ``classify`` callback
for the labels of batches of grid cells (index tuples) and returns every
cell's class, sampled or inferred. :mod:`ccbench.explore` runs the batches
as simulations; tests give it a formula.

Design (recursive box bisection, then boundary tracing):

1. **Coarse design.** Every ``coarse``-th index per axis, plus the last one,
   is sampled. Neighbouring coarse points span *boxes*.
2. **Refinement.** A box whose corners all carry the same label is taken to
   be uniform and every cell in it inherits that label. A box whose corners
   disagree (or whose run failed) holds part of the boundary: it is split at
   its midpoint along every axis longer than one cell. Of the new lattice
   points a point is sampled only if it is the centre of a face (an edge, a
   square, the box itself) whose corners disagree; the centre of a face whose
   corners agree inherits their label. That halves the samples of a plain
   quadtree in 2-D, because a boundary crossing a box usually leaves half its
   edges alone. Children are refined the same way until boxes are one cell
   wide: the stated resolution.
3. **Tracing.** Box bisection misses a boundary that enters and leaves a
   box through the same face (a bump narrower than the box). Each round
   therefore also samples an inferred cell next to a sampled cell of the
   other label, unless the inferred cell is itself next to a sampled cell of
   its own label (then the boundary is known to pass between them). Found
   bumps grow from there, cell by cell, until the sampled cells enclose them.

Each round's batch depends only on the labels so far and is sorted, so the
search is deterministic; a budget cuts the last batch in that order. Cells
whose label is None (a failed run, a property with no data) count as
disagreeing with everything, so their surroundings get sampled and they stay
"unknown".

Cost: the coarse design is ~N/coarse^d runs; refinement costs a few samples
per boundary cell at each of log2(coarse) levels, so the fraction of a full
grid falls as the grid grows (a boundary has ~n^(d-1) cells of n^d).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field

Cell = tuple[int, ...]
Label = bool | None
Classify = Callable[[list[Cell]], Mapping[Cell, Label]]

__all__ = ["Cell", "SearchResult", "search", "full_grid"]


@dataclass
class SearchResult:
    """What a search sampled (``sampled``: cell -> label, ``rounds``: cell -> round) and every cell's class."""

    shape: tuple[int, ...]
    sampled: dict[Cell, Label]
    inferred: dict[Cell, Label]
    rounds: dict[Cell, int] = field(default_factory=dict)
    exhausted: bool = False  # the budget stopped the search before the resolution was reached

    def label(self, cell: Cell) -> Label:
        return self.sampled[cell] if cell in self.sampled else self.inferred.get(cell)

    @property
    def size(self) -> int:
        n = 1
        for s in self.shape:
            n *= s
        return n

    @property
    def fraction(self) -> float:
        """Sampled cells over grid cells."""
        return len(self.sampled) / self.size


def full_grid(shape: Sequence[int]) -> list[Cell]:
    return list(itertools.product(*(range(n) for n in shape)))


def _coarse(n: int, stride: int) -> list[int]:
    return sorted(set(range(0, n, stride)) | {n - 1})


def search(shape: Sequence[int], classify: Classify, *, coarse: int = 4, budget: int | None = None,
           trace: bool = True) -> SearchResult:
    """Classify every cell of a grid of ``shape``, sampling through ``classify`` (see the module docs).

    ``budget`` caps the number of cells sampled; ``coarse`` is the stride of the first design.
    """
    shape = tuple(int(n) for n in shape)
    if not shape or any(n < 1 for n in shape):
        raise ValueError(f"grid shape {shape} must have at least one axis, each at least 1 long")
    if coarse < 1:
        raise ValueError("coarse stride must be at least 1")
    res = SearchResult(shape, {}, {})
    left = [budget]  # None: no limit

    def run(cells: Iterable[Cell], round_no: int) -> bool:
        """Sample the cells not sampled yet; False once the budget is spent."""
        todo = sorted(set(c for c in cells if c not in res.sampled))
        if left[0] is not None:
            if len(todo) > left[0]:
                todo, res.exhausted = todo[:left[0]], True
            left[0] -= len(todo)
        if todo:
            labels = classify(todo)
            for c in todo:
                res.sampled[c] = labels.get(c)
                res.rounds[c] = round_no
        return not res.exhausted

    def label(c: Cell) -> Label:
        return res.label(c)

    axes = [_coarse(n, coarse) for n in shape]
    round_no = 0
    if not run(itertools.product(*axes), round_no):
        return _finish(res)
    boxes = [tuple(zip(lo, hi)) for lo, hi in
             (zip(*pairs) for pairs in itertools.product(*[list(zip(a, a[1:])) or [(a[0], a[0])] for a in axes]))]
    while boxes:
        round_no += 1
        mixed, uniform = [], []
        for box in boxes:
            corners = {label(c) for c in _corners(box)}
            if len(corners) == 1 and None not in corners:
                uniform.append((box, next(iter(corners))))
            else:
                mixed.append(box)
        for box, lab in uniform:
            _fill(res, box, lab)
        children, wanted = [], set()
        pending: list[tuple[Cell, Label]] = []
        for box in mixed:
            if all(hi - lo <= 1 for lo, hi in box):
                continue  # at the resolution: every cell is a corner
            for cell, face in _face_centres(box):
                labs = {label(c) for c in _corners(face)}
                if len(labs) == 1 and None not in labs:
                    pending.append((cell, next(iter(labs))))
                else:
                    wanted.add(cell)
            children += _children(box)
        for cell, lab in pending:
            if cell not in wanted and cell not in res.sampled:
                res.inferred[cell] = lab
        if not run(wanted, round_no):
            return _finish(res)
        boxes = children
    if trace:
        while True:
            round_no += 1
            suspects = _suspects(res)
            if not suspects or not run(suspects, round_no):
                break
    return _finish(res)


def _finish(res: SearchResult) -> SearchResult:
    """Give every cell not sampled nor inferred (a budget stopped the search) its nearest sample's label."""
    missing = [c for c in full_grid(res.shape) if c not in res.sampled and c not in res.inferred]
    if missing and res.sampled:
        points = sorted(res.sampled)
        for c in missing:
            best = min(points, key=lambda p: (sum((a - b) ** 2 for a, b in zip(p, c)), p))
            res.inferred[c] = res.sampled[best]
    return res


def _corners(box: Sequence[tuple[int, int]]) -> list[Cell]:
    return list(itertools.product(*({lo, hi} for lo, hi in box)))


def _fill(res: SearchResult, box: Sequence[tuple[int, int]], lab: Label) -> None:
    for c in itertools.product(*(range(lo, hi + 1) for lo, hi in box)):
        if c not in res.sampled:
            res.inferred[c] = lab


def _face_centres(box: Sequence[tuple[int, int]]) -> Iterator[tuple[Cell, list[tuple[int, int]]]]:
    """Each new lattice point of a split box with the face it is the centre of."""
    options = []
    for lo, hi in box:
        mid = (lo + hi) // 2
        options.append([(lo, (lo, lo)), (hi, (hi, hi))] + ([(mid, (lo, hi))] if hi - lo > 1 else []))
    for combo in itertools.product(*options):
        cell = tuple(v for v, _ in combo)
        face = [span for _, span in combo]
        if any(lo != hi for lo, hi in face):
            yield cell, face


def _children(box: Sequence[tuple[int, int]]) -> list[tuple[tuple[int, int], ...]]:
    halves = []
    for lo, hi in box:
        mid = (lo + hi) // 2
        halves.append([(lo, mid), (mid, hi)] if hi - lo > 1 else [(lo, hi)])
    return [tuple(h) for h in itertools.product(*halves)]


def _neighbours(c: Cell, shape: Sequence[int]) -> Iterator[Cell]:
    for i, n in enumerate(shape):
        for d in (-1, 1):
            v = c[i] + d
            if 0 <= v < n:
                yield c[:i] + (v,) + c[i + 1:]


def _suspects(res: SearchResult) -> list[Cell]:
    """Inferred cells next to a sampled cell of the other label and to none of their own."""
    out = set()
    for c, lab in res.sampled.items():
        for nb in _neighbours(c, res.shape):
            if nb in res.sampled or nb not in res.inferred:
                continue
            guess = res.inferred[nb]
            if guess == lab and lab is not None:
                continue
            if any(res.sampled.get(x, "none") == guess and guess is not None
                   for x in _neighbours(nb, res.shape)):
                continue
            out.add(nb)
    return sorted(out)
