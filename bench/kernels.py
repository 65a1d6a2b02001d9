"""Kernel throughput: COUNT with WITHIN, against one plain numpy cumsum pass.

For pattern lengths 2, 5, 10 and 10 / 100 / 1,000 / 10,000 events per window,
prints events per second of ``evaluate_group`` and its time relative to the floor
(one ``np.cumsum`` over the same events), all measured in this one run, single
process. Time per event should stay flat as windows grow (no loop over active
start events).

With ``--quantifiers`` it instead times quantified and optional elements against the
plain pattern in the same run: SEQ(A, B, C), SEQ(A, B{2,4}, C), SEQ(A, B?, C) and
STEPS(*) of SEQ(A, B, C), WITHIN 10 minutes, and prints each one's time relative to
SEQ(A, B, C) next to its target (docs/engine.md, "Quantified and optional elements").

With ``--steps`` it times STEPS(*) and MAX_STEP() against COUNT(*) of the same pattern
(no window, WITHIN, WITHIN with a middle negation), exact BIGINT counts under WITHIN.

Usage: .venv/bin/python bench/kernels.py [--events N] [--repeat R] [--quantifiers | --steps]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from timing import median_time  # noqa: E402  (bench/ is on sys.path when run as a script)
from udafs.kernels import evaluate_group  # noqa: E402
from udafs.plan import CountType, Element, Measure, MeasureKind, Plan  # noqa: E402

WINDOW = 600_000_000  # 10 minutes in microseconds


def make_events(n: int, per_window: int, n_symbols: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """``n`` events, unsorted, averaging ``per_window`` events per window, one symbol each."""
    rng = np.random.default_rng(seed)
    span = max(1, int(n / per_window * WINDOW))
    ts = rng.integers(0, span, size=n, dtype=np.int64)
    mask = np.left_shift(np.int64(1), rng.integers(0, n_symbols, size=n, dtype=np.int64))
    return ts, mask


def count_plan(length: int) -> Plan:
    """SEQ(S0, ..., S{length-1}) WITHIN 10 minutes, COUNT(*) as DOUBLE.

    DOUBLE keeps the large-window cases (whose exact counts exceed BIGINT at
    length 10) on the same code path as the rest; exactness is tested elsewhere.
    """
    return Plan(
        symbols=tuple(f"S{i}" for i in range(length)),
        elements=tuple(Element(i) for i in range(length)),
        negations=(0,) * (length + 1),
        within=WINDOW,
        count_type=CountType.DOUBLE,
    )


def abc_plan(middle: Element, measures: tuple[Measure, ...] = (Measure(MeasureKind.COUNT_STAR, name="n"),)) -> Plan:
    """SEQ(A, <middle>, C) WITHIN 10 minutes over symbols A, B, C, counts as DOUBLE (as above)."""
    return Plan(symbols=("A", "B", "C"), elements=(Element(0), middle, Element(2)), negations=(0, 0, 0, 0),
                within=WINDOW, measures=measures, count_type=CountType.DOUBLE)


def quantifier_costs(n: int, repeat: int, per_window: int = 100) -> None:
    """Time of quantified and optional patterns relative to SEQ(A, B, C), same events, same run."""
    ts, mask = make_events(n, per_window, 3, seed=4242)
    cases = [("SEQ(A, B, C)", abc_plan(Element(1)), None),
             ("SEQ(A, B{2,4}, C)", abc_plan(Element(1, True, 2, 4)), 4 - 2 + 2),
             ("SEQ(A, B?, C)", abc_plan(Element(1, False, 0)), 2)]
    if hasattr(MeasureKind, "STEPS"):  # the funnel measure, when this engine has it
        cases.append(("SEQ(A, B, C) STEPS(*)", abc_plan(Element(1), (Measure(MeasureKind("steps"), name="s"),)), 2))
    print(f"events per run: {n:,}; {per_window} events per window; median of {repeat} runs; one process, one core")
    print(f"{'pattern':<24} {'kernel s':>9} {'x SEQ(A, B, C)':>15} {'target':>7}")
    base = None
    for name, plan, target in cases:
        try:
            seconds = median_time(lambda: evaluate_group(plan, ts, mask), repeat)
        except Exception as exc:  # noqa: BLE001 - a feature this engine lacks: say so, time the rest
            print(f"{name:<24} not evaluated: {type(exc).__name__}: {exc}")
            continue
        base = seconds if base is None else base
        print(f"{name:<24} {seconds:>9.3f} {seconds / base:>15.2f} {'<= ' + str(target) if target else '':>7}")


def steps_costs(n: int, repeat: int, per_window: int = 100) -> None:
    """STEPS(*) (with MAX_STEP()) relative to COUNT(*) of the same pattern, same events, same run
    (target: at most 2x; docs/engine.md, "Funnel steps"). Exact BIGINT counts, as users get them."""
    ts, mask = make_events(n, per_window, 4, seed=3131)
    count = (Measure(MeasureKind.COUNT_STAR, name="n"),)
    funnel = (Measure(MeasureKind.STEPS, name="steps"), Measure(MeasureKind.MAX_STEP, name="max_step"))
    shapes = [("SEQ(A, B, C)", (0, 0, 0, 0), None), ("SEQ(A, B, C) WITHIN", (0, 0, 0, 0), WINDOW),
              ("SEQ(A, B, !D, C) WITHIN", (0, 0, 8, 0), WINDOW)]
    print(f"events per run: {n:,}; {per_window} events per window; median of {repeat} runs; one process, one core")
    print(f"{'pattern':<26} {'COUNT(*) s':>10} {'STEPS(*) s':>10} {'x COUNT':>8} {'target':>7}")
    for name, negations, within in shapes:
        def plan(measures: tuple[Measure, ...], negations: tuple[int, ...] = negations,
                 within: int | None = within) -> Plan:
            return Plan(symbols=("A", "B", "C", "D"), elements=(Element(0), Element(1), Element(2)),
                        negations=negations, within=within, measures=measures, count_type=CountType.DOUBLE
                        if within is None else CountType.BIGINT)  # without a window the counts pass 2**63
        base = median_time(lambda: evaluate_group(plan(count), ts, mask), repeat)
        steps = median_time(lambda: evaluate_group(plan(funnel), ts, mask), repeat)
        print(f"{name:<26} {base:>10.3f} {steps:>10.3f} {steps / base:>8.2f} {'<= 2':>7}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--events", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--quantifiers", action="store_true", help="time X{n,m}, X? and STEPS(*) against SEQ(A, B, C)")
    ap.add_argument("--steps", action="store_true", help="time STEPS(*) against COUNT(*) of the same pattern")
    args = ap.parse_args()
    n = args.events
    if args.steps:
        steps_costs(n, args.repeat)
        return
    if args.quantifiers:
        quantifier_costs(n, args.repeat)
        return
    print(f"events per run: {n:,}; median of {args.repeat} runs; one process, one core")
    print(f"{'length':>6} {'ev/window':>9} {'kernel s':>9} {'M events/s':>10} {'floor s':>8} {'x floor':>8} "
          f"{'ns/event':>8}")
    for length in (2, 5, 10):
        plan = count_plan(length)
        per_event = []
        for per_window in (10, 100, 1_000, 10_000):
            ts, mask = make_events(n, per_window, length, seed=length * 7919 + per_window)
            kernel = median_time(lambda: evaluate_group(plan, ts, mask), args.repeat)
            floor = median_time(lambda: np.cumsum(ts), args.repeat)
            per_event.append(kernel / n * 1e9)
            print(f"{length:>6} {per_window:>9,} {kernel:>9.3f} {n / kernel / 1e6:>10.2f} "
                  f"{floor:>8.4f} {kernel / floor:>8.1f} {kernel / n * 1e9:>8.1f}")
        print(f"{'':>6} flatness (max/min ns per event over window sizes): {max(per_event) / min(per_event):.2f}")


if __name__ == "__main__":
    main()
