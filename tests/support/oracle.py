"""Brute-force match enumerator: the reference every kernel is checked against.

It builds every match literally, following docs/semantics.md sections 3-5
clause by clause, and is meant to be obviously correct, not fast (use it on a
dozen events at most). Quantified and optional elements (``X{n,m}``, ``X?``, ``X*``;
SEMANTICS section 10) bind every allowed set of rows, the empty set included when
optional (:func:`_sets`); order, WITHIN and negation gaps are then read over the rows
actually bound (:func:`_span`, :func:`_middle_ok`).

The extensions (predicates, iterator predicates, strategies; docs/predicates-and-strategies.md is the contract): every
match is first built as a skip-till-any-match match (clauses 1-5), then kept only
when it also satisfies, clause by clause,

6. every cross-event predicate (:func:`predicate_holds`),
7. every Kleene iterator predicate between consecutive rows of a set
   (:func:`iterators_hold`),
8. its event selection strategy (:func:`strategy_holds`).
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from fractions import Fraction

from udafs.plan import CmpOp, Element, Measure, MeasureKind, Plan, Strategy, ValueType

Match = tuple[tuple[int, ...], ...]  # per positive element, the row indices bound to it


@dataclass(frozen=True)
class Events:
    """One partition's events. ``values[c][r]`` is column c of row r (None = NULL)."""

    ts: Sequence[int]
    mask: Sequence[int]
    values: Sequence[Sequence[float | int | None]] = ()
    seq: Sequence[int] | None = None  # STRICT_CONTIGUITY: global dense rank of ts in the stream

    def is_instance(self, row: int, symbols: int) -> bool:
        return bool(self.mask[row] & symbols)


def cheap(plan: Plan, ev: Events) -> bool:
    """True when enumerating matches stays small: Kleene elements enumerate subsets."""
    return sum(e.kleene for e in plan.elements) * len(ev.ts) <= 12 or len(ev.ts) <= 6


def _sets(ev: Events, el: Element, cands: list[int]) -> Iterator[tuple[int, ...]]:
    """Every set of rows ``el`` may bind among ``cands``: one row, or for a Kleene element
    min_rows..max_rows rows with pairwise distinct timestamps; the empty set when optional
    (SEMANTICS sections 3 and 10)."""
    if el.optional:
        yield ()
    if not el.kleene:
        yield from ((r,) for r in cands)
        return
    most = len(cands) if el.max_rows is None else min(el.max_rows, len(cands))
    for k in range(max(el.min_rows, 1), most + 1):
        for sub in itertools.combinations(cands, k):
            if len({ev.ts[r] for r in sub}) == len(sub):  # pairwise distinct timestamps
                yield sub


def _bindings(ev: Events, plan: Plan, rows: list[int], i: int, after: float) -> Iterator[Match]:
    """Every binding of elements i..n-1 to rows strictly later than ``after``."""
    if i == plan.length:
        yield ()
        return
    el = plan.elements[i]
    cands = [r for r in rows if ev.is_instance(r, 1 << el.symbol) and ev.ts[r] > after]
    for chosen in _sets(ev, el, cands):
        last = max((ev.ts[r] for r in chosen), default=after)  # an optional element bound to no row: unchanged
        for rest in _bindings(ev, plan, rows, i + 1, last):
            yield (chosen, *rest)


def _no_instance(ev: Events, rows: list[int], symbols: int, lo: float, hi: float) -> bool:
    """True when no row in ``rows`` is an instance of ``symbols`` with lo < ts < hi."""
    return not any(ev.is_instance(r, symbols) and lo < ev.ts[r] < hi for r in rows)


def _middle_ok(ev: Events, plan: Plan, rows: list[int], m: Match) -> bool:
    """Rule 4: a middle negation's gap lies between the nearest elements on each side that
    bind at least one row; with no such element on one side (only unbound optional ones)
    it constrains nothing (SEMANTICS section 10)."""
    bound = [i for i, part in enumerate(m) if part]
    for gap in range(1, plan.length):
        neg = plan.negations[gap]
        before, after = [i for i in bound if i < gap], [i for i in bound if i >= gap]
        if neg and before and after:
            last = max(ev.ts[r] for r in m[before[-1]])
            first = min(ev.ts[r] for r in m[after[0]])
            if not _no_instance(ev, rows, neg, last, first):
                return False
    return True


def _span(ev: Events, m: Match) -> tuple[int, int]:
    """Times of the first and the last bound row of a match (over every element that binds one)."""
    times = [ev.ts[r] for part in m for r in part]
    return min(times), max(times)


def matches(ev: Events, plan: Plan) -> list[Match]:
    """All matches in the partition under WITHIN (no SLIDE): SEMANTICS section 3."""
    rows = list(range(len(ev.ts)))
    out = []
    for m in _bindings(ev, plan, rows, 0, float("-inf")):
        first, last = _span(ev, m)
        w = plan.within
        if w is not None and not last - first < w:
            continue
        if not _middle_ok(ev, plan, rows, m):
            continue
        if plan.negations[0] and not _no_instance(ev, rows, plan.negations[0], last - w, first):
            continue
        if plan.negations[-1] and not _no_instance(ev, rows, plan.negations[-1], last, first + w):
            continue
        if not extensions_hold(ev, plan, rows, m):
            continue
        out.append(m)
    return out


def window_matches(ev: Events, plan: Plan, start: int, end: int) -> list[Match]:
    """Matches of the window [start, end) evaluated on its own rows: SEMANTICS section 4."""
    rows = [r for r in range(len(ev.ts)) if start <= ev.ts[r] < end]
    out = []
    for m in _bindings(ev, plan, rows, 0, float("-inf")):
        first, last = _span(ev, m)
        if not _middle_ok(ev, plan, rows, m):
            continue
        if plan.negations[0] and not _no_instance(ev, rows, plan.negations[0], float("-inf"), first):
            continue
        if plan.negations[-1] and not _no_instance(ev, rows, plan.negations[-1], last, float("inf")):
            continue
        if not extensions_hold(ev, plan, rows, m):
            continue
        out.append(m)
    return out


# -- predicates, iterator predicates, selection strategies ---------------

def compare(op: CmpOp, left: object, right: object, offset: int | float, as_float: bool,
            left_offset: int | float = 0) -> bool:
    """``left + left_offset OP right + offset``; NULL operands give False (not TRUE).

    Exact integers when ``as_float`` is False; otherwise IEEE doubles, each side adding
    its own constant as Spark evaluates ``a.f + 0.3 = b.f``:
    ``(float(left) + float(left_offset)) OP (float(right) + float(offset))``, in Spark's
    order: NaN equals NaN and is greater than every other value, -0.0 equals 0.0.
    """
    if left is None or right is None:
        return False
    if as_float:
        a, b = float(left) + float(left_offset), float(right) + float(offset)
        ka = (1, 0.0) if math.isnan(a) else (0, a)
        kb = (1, 0.0) if math.isnan(b) else (0, b)
    else:
        ka, kb = int(left) + int(left_offset), int(right) + int(offset)
    return {CmpOp.EQ: ka == kb, CmpOp.NE: ka != kb, CmpOp.LT: ka < kb, CmpOp.LE: ka <= kb,
            CmpOp.GT: ka > kb, CmpOp.GE: ka >= kb}[op]


def _float_cmp(plan: Plan, offsets: tuple[int | float, ...], *cols: int) -> bool:
    return any(isinstance(o, float) for o in offsets) or any(plan.columns[c] is ValueType.FLOAT for c in cols)


def predicate_holds(ev: Events, plan: Plan, k: int, left_row: int, right_row: int) -> bool:
    """Clause 6: predicate k with its left element bound to ``left_row``, right to ``right_row``."""
    p = plan.predicates[k]
    return compare(p.op, ev.values[p.left_column][left_row], ev.values[p.right_column][right_row], p.offset,
                   _float_cmp(plan, (p.offset, p.left_offset), p.left_column, p.right_column), p.left_offset)


def iterator_holds(ev: Events, plan: Plan, element: int, prev: int, cur: int, first: int) -> bool:
    """Clause 7 for one row: every iterator predicate of ``element`` on (b[i-1], b[i]) =
    (prev, cur), or on (b[1], b[i]) = (first, cur) for a first-element form."""
    for q in plan.iterator_predicates:
        other = first if q.first else prev
        if q.element == element and not compare(q.op, ev.values[q.column][cur], ev.values[q.column][other],
                                                 q.offset, _float_cmp(plan, (q.offset, q.left_offset), q.column),
                                                 q.left_offset):
            return False
    return True


def in_time_order(ev: Events, rows: Sequence[int]) -> list[int]:
    """The rows of one Kleene set (pairwise distinct timestamps) in time order."""
    return sorted(rows, key=lambda r: ev.ts[r])


def bound_sequence(ev: Events, m: Match) -> list[tuple[int, int]]:
    """(element position, row) of every bound row, in match order (Kleene sets in time order)."""
    return [(i, r) for i, part in enumerate(m) for r in in_time_order(ev, part)]


def predicates_hold(ev: Events, plan: Plan, m: Match) -> bool:
    """Clause 6 for all predicates (their elements are non-Kleene: one row each)."""
    return all(predicate_holds(ev, plan, k, m[p.left][0], m[p.right][0]) for k, p in enumerate(plan.predicates))


def iterators_hold(ev: Events, plan: Plan, m: Match) -> bool:
    """Clause 7: every row of a Kleene set after its first satisfies the set's iterator
    predicates against the row before it (``b[i-1]``) or, for first-element forms,
    against the set's first row (``b[1]``)."""
    for i, part in enumerate(m):
        rows = in_time_order(ev, part)
        if any(not iterator_holds(ev, plan, i, a, b, rows[0]) for a, b in zip(rows, rows[1:])):
            return False
    return True


def ranks(ev: Events, plan: Plan) -> list[int]:
    """Contiguity rank of every row: STRICT = the given global ``seq``; PARTITION = dense
    rank of ts among *all* rows of the partition (mask 0 included)."""
    if plan.strategy is Strategy.STRICT_CONTIGUITY:
        assert ev.seq is not None, "STRICT_CONTIGUITY needs Events.seq"
        return list(ev.seq)
    distinct = sorted(set(ev.ts))
    return [distinct.index(t) for t in ev.ts]


def _candidate(ev: Events, plan: Plan, m: Match, i: int, x: int, z: int) -> bool:
    """Skip-till-next-match: could the partial match (elements < i, element i up to row x)
    take row z next? Either z extends element i's Kleene set (symbol, iterator predicates
    against x) or z is bound to element i+1 (symbol, every predicate between i+1 and an
    element <= i). Negation, WITHIN and later elements are not asked: see the docs."""
    el = plan.elements[i]
    first = in_time_order(ev, m[i])[0]  # the set's first row, bound before x
    if el.kleene and ev.is_instance(z, 1 << el.symbol) and iterator_holds(ev, plan, i, x, z, first):
        return True
    if i + 1 == plan.length or not ev.is_instance(z, 1 << plan.elements[i + 1].symbol):
        return False
    for k, p in enumerate(plan.predicates):
        if p.left == i + 1 and p.right <= i and not predicate_holds(ev, plan, k, z, m[p.right][0]):
            return False
        if p.right == i + 1 and p.left <= i and not predicate_holds(ev, plan, k, m[p.left][0], z):
            return False
    return True


def strategy_holds(ev: Events, plan: Plan, rows: list[int], m: Match) -> bool:
    """Clause 8: the selection strategy, over the steps (x, y) of consecutive bound rows.

    The bound sequence lists E1's rows, then E2's, ... (a Kleene set in time order), so
    ts(x) < ts(y) on every step (clause 2).

    * SKIP_TILL_ANY_MATCH: always.
    * STRICT / PARTITION_CONTIGUITY: rank(y) = rank(x) + 1 for every step (:func:`ranks`:
      dense rank of ts over the stream / over *all* rows of the partition). Ties share a
      rank (one stream position). Kleene sets: every step inside the set too. Middle
      negation is then vacuous; WITHIN, SLIDE (ranks stay global, not window-local) and
      edge negation apply as usual.
    * SKIP_TILL_NEXT_MATCH: no row z among ``rows`` (the partition, or the window with
      SLIDE) with ts(x) < ts(z) < ts(y) that the partial match ending at x could have
      taken instead (:func:`_candidate`): y lies in the earliest tie group of candidates,
      so a tie group with several candidates branches. Kleene: a set must take a row
      that extends it before any later row; when the earliest candidate group holds
      both an extension and a next-element row, both continuations are matches; a
      trailing Kleene element yields one match per extension. Candidates ignore
      negation and WITHIN (an earlier z failing those would make y fail them too).
      Every instance of E1 starts a run (no condition before the first row).
    """
    if plan.strategy is Strategy.SKIP_TILL_ANY_MATCH:
        return True
    steps = bound_sequence(ev, m)
    if plan.strategy.contiguous:
        rk = ranks(ev, plan)
        return all(rk[y] == rk[x] + 1 for (_, x), (_, y) in zip(steps, steps[1:]))
    assert not plan.quantified, "skip-till-next-match candidates are defined for plain elements and X+ only"
    for (i, x), (_, y) in zip(steps, steps[1:]):
        if any(ev.ts[x] < ev.ts[z] < ev.ts[y] and _candidate(ev, plan, m, i, x, z) for z in rows):
            return False
    return True


def extensions_hold(ev: Events, plan: Plan, rows: list[int], m: Match) -> bool:
    """Clauses 6-8 (all True for plans without predicates, iterator predicates or strategies)."""
    return predicates_hold(ev, plan, m) and iterators_hold(ev, plan, m) and strategy_holds(ev, plan, rows, m)


def windows(ev: Events, plan: Plan) -> list[tuple[int, int]]:
    """Windows [k*s, k*s + w) holding at least one instance of any pattern symbol."""
    w, s = plan.within, plan.slide
    assert w is not None and s is not None
    inst = [ev.ts[r] for r in range(len(ev.ts)) if ev.mask[r] & plan.pattern_symbols_mask]
    if not inst:
        return []
    ks = range((min(inst) - w) // s, max(inst) // s + 1)
    return [(k * s, k * s + w) for k in ks if any(k * s <= t < k * s + w for t in inst)]


def prefix_plan(plan: Plan, i: int) -> Plan:
    """The i-th prefix of the pattern (SEMANTICS section 10, funnel steps), 1 <= i <= n:
    E1..Ei, the negations between two of them, the leading negation, the trailing one only
    when i = n; the predicates among E1..Ei; same WITHIN, SLIDE and strategy; COUNT(*)."""
    n = plan.length
    return dataclasses.replace(
        plan, elements=plan.elements[:i], negations=(*plan.negations[:i], plan.negations[n] if i == n else 0),
        measures=(Measure(MeasureKind.COUNT_STAR, name="count"),),
        predicates=tuple(p for p in plan.predicates if p.left < i and p.right < i),
        iterator_predicates=tuple(q for q in plan.iterator_predicates if q.element < i))


def step_counts(ev: Events, plan: Plan, window: tuple[int, int] | None = None) -> list[int]:
    """STEPS(*): the number of matches of every prefix, by enumerating each prefix's matches
    (in the SLIDE window ``window`` when given, a window of the whole pattern)."""
    def count(p: Plan) -> int:
        return len(matches(ev, p) if window is None else window_matches(ev, p, *window))
    return [count(prefix_plan(plan, i)) for i in range(1, plan.length + 1)]


def max_step(steps: Sequence[int]) -> int:
    """MAX_STEP(): the largest i (1-based) whose prefix has a match, 0 when none."""
    return max((i + 1 for i, c in enumerate(steps) if c), default=0)


def measure_values(ev: Events, plan: Plan, ms: list[Match],
                   window: tuple[int, int] | None = None) -> list[object]:
    """Every measure of the plan over the match multiset ``ms``: SEMANTICS section 5
    (``window``: the SLIDE window the matches are of, for the funnel measures)."""
    out: list[object] = []
    for meas in plan.measures:
        if meas.kind is MeasureKind.COUNT_STAR:
            out.append(len(ms))
            continue
        if meas.kind in (MeasureKind.STEPS, MeasureKind.MAX_STEP):
            steps = step_counts(ev, plan, window)
            assert steps[-1] == len(ms), "the last prefix is the whole pattern"
            out.append(steps if meas.kind is MeasureKind.STEPS else max_step(steps))
            continue
        positions = [i for i, el in enumerate(plan.elements) if el.symbol == meas.symbol]
        pair_rows = [r for m in ms for i in positions for r in m[i]]  # (match, row) pairs
        if meas.kind is MeasureKind.COUNT:
            out.append(len(pair_rows))
            continue
        col = ev.values[meas.column]
        vals = [col[r] for r in pair_rows if col[r] is not None]
        as_int = plan.columns[meas.column] is not ValueType.FLOAT
        decimal = plan.columns[meas.column] is ValueType.DECIMAL
        if meas.kind is MeasureKind.SUM:
            out.append((sum(vals) if as_int else float(sum(vals))) if vals else None)
        elif meas.kind is MeasureKind.AVG and decimal:  # Spark's: rounded half up, meas.places more places
            out.append(_half_up(sum(vals) * 10**meas.places, len(vals)) if vals else None)
        elif meas.kind is MeasureKind.AVG:
            out.append(sum(vals) / len(vals) if vals else None)
        elif meas.kind is MeasureKind.MIN:  # Spark's order: NaN above every number
            out.append(min(vals, key=_spark_order) if vals else None)
        else:
            out.append(max(vals, key=_spark_order) if vals else None)
    return out


def _spark_order(x: float | int) -> tuple[int, float | int]:
    """Spark's order of values: numbers as usual, NaN above +inf."""
    return (1, 0) if isinstance(x, float) and math.isnan(x) else (0, x)


def _half_up(numerator: int, denominator: int) -> int:
    """The exact quotient rounded half away from zero (Java's HALF_UP), via Fraction."""
    q = Fraction(numerator, denominator)
    whole = math.floor(abs(q) + Fraction(1, 2))
    return whole if q >= 0 else -whole


def evaluate(ev: Events, plan: Plan) -> list[tuple[int | None, int | None, list[object]]]:
    """The reference result: rows of (window_start, window_end, measure values).

    Without SLIDE: exactly one row with window bounds None.
    """
    if plan.slide is None:
        return [(None, None, measure_values(ev, plan, matches(ev, plan)))]
    return [(a, b, measure_values(ev, plan, window_matches(ev, plan, a, b), (a, b))) for a, b in windows(ev, plan)]
