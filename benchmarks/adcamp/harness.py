"""One benchmark point (a method at an update rate and an event rate), and the search over event rates."""

from __future__ import annotations

import itertools
import math
import os
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from pyspark.sql import SparkSession

from feeder import Feeder
from measure import PointResult, SinkCounter, evaluate, expected
from methods.base import Method, Point
from workload import Shape, stage


@dataclass
class Settings:
    cache: Path  # staged inputs and oracles, reused across methods and runs
    scratch: Path  # per-point checkpoints and tables, deleted after each point
    trigger: str
    lag_cap_s: float  # abort a point once views older than this are still not in the sink
    startup_cap_s: float  # abort a point that writes nothing for this long
    redis_port: int | None
    log: Callable[[str], None] = print


_points = itertools.count()  # point ids: State, query and directory names


def run_point(spark: SparkSession, method_cls: type[Method], shape: Shape, settings: Settings) -> PointResult:
    staged = stage(shape, settings.cache)
    exp = expected(staged)
    uid = f"{os.getpid()}_{next(_points)}"
    work = settings.scratch / f"point-{uid}"
    shutil.rmtree(work, ignore_errors=True)
    point = Point(spark, shape, work, work / "sink", settings.trigger, uid, settings.redis_port)
    method = method_cls(point)
    point.create_sink()
    load = os.getloadavg()[0]
    began = time.time()
    feeder = Feeder(staged, point.live_updates, point.live_events)
    method.start()
    feeder.start()
    aborted, failure = False, None
    total = staged.measured_events
    rows_written = SinkCounter(point.sink, total)
    starts = staged.event_slot_starts
    first_output = None  # the first batch of a fresh query is slow (planning, codegen, Delta table creation)
    try:
        while True:
            time.sleep(0.5)
            failure = method.failure()
            if failure:
                aborted = True
                break
            now = time.time()
            written = rows_written()
            if written >= total:  # every measured view is out: the rest of the tail is not needed
                break
            if written and first_output is None:
                first_output = now
            if first_output is None:
                if now - began > settings.startup_cap_s:
                    aborted = True
                    break
                continue
            # views whose files appeared more than lag_cap ago must be in the sink by now
            due_slots = sum(1 for t in feeder.visible if t < now - settings.lag_cap_s)
            due = int(starts[min(due_slots, len(starts) - 1)])
            behind = written < due and now > first_output + settings.lag_cap_s
            if behind or (not feeder.is_alive() and now > max(feeder.feed_end, first_output) + settings.lag_cap_s):
                aborted = True
                break
    finally:
        feeder.stop()
        feeder.join()
        method.stop()
        progress = method.progress()
        method.cleanup()
    result = evaluate(
        method.name, staged, exp, point.sink, feeder.visible, feeder.start_time, aborted, settings.lag_cap_s
    )
    if failure:
        # a foreachBatch's Python error comes last in a long py4j traceback: keep its head and its tail
        brief = failure if len(failure) <= 1500 else f"{failure[:300]} ... {failure[-1200:]}"
        result.verdict = f"{brief}; {result.verdict}"
        result.sustained = False
    result.feeder_behind_ms = feeder.behind_s * 1000
    result.load_avg_1m = load
    result.wall_s = time.time() - began
    result.progress = progress
    shutil.rmtree(work, ignore_errors=True)
    settings.log(
        f"  {method.name:<20} u={shape.update_rate:>6}/s e={shape.event_rate:>8}/s "
        f"{'SUSTAINED' if result.sustained else 'not sustained':<13} "
        f"p50={_ms(result.p50_ms)} p99={_ms(result.p99_ms)} growth={_ms(result.latency_growth_ms)} "
        f"rate={_rate(result.processed_rate)} correct={result.correct} load={load:.1f} "
        f"({result.wall_s:.0f}s) {result.verdict}"
    )
    return result


def _ms(v: float | None) -> str:
    return "-" if v is None else f"{v:,.0f}ms"


def _rate(v: float | None) -> str:
    return "-" if v is None else f"{v:,.0f}/s"


def _nice(rate: float) -> int:
    """Two significant digits, a multiple of 4 (whole views per 0.25 s slot)."""
    digits = max(0, int(math.floor(math.log10(rate))) - 1)
    r = round(rate / 10**digits) * 10**digits
    return max(4, int(round(r / 4)) * 4)


def search(
    run,
    start: int,
    low: int,
    high: int,
    bisect_steps: int,
    checked: bool = True,
    retries: int = 0,
    first: int | None = None,
) -> tuple[int | None, list[PointResult]]:
    """Highest sustained event rate: from `start`, double while sustained (or halve until sustained),
    then bisect (geometrically) between the best sustained and the lowest failed rate. `first` (the
    common rate) runs before everything: when it is not sustained the search halves down from it;
    when it is and `start` is not, the search bisects between the two. With `checked` false (the harness
    ceiling) a point need not match the oracle. A point that came out right but not sustained runs
    again up to `retries` times (one sample can catch a one-off stall, e.g. a GC, in any method);
    the attempts it replaces are returned too, marked `discarded`."""
    tried: dict[int, PointResult] = {}
    discarded: list[PointResult] = []

    def ok(rate: int) -> bool:
        if rate not in tried:
            result = run(rate)
            for attempt in range(2, retries + 2):
                if result.sustained or (checked and not result.correct):
                    break
                result.discarded = True
                discarded.append(result)
                result = run(rate)
                result.attempt = attempt
            tried[rate] = result
        return tried[rate].sustained and (tried[rate].correct or not checked)

    if first is not None and not ok(first):
        start = first
    good, bad = (start, None) if ok(start) else (None, start)
    below = [r for r in tried if r < start and ok(r)]  # the first point, when sustained
    if good is not None:
        while good * 2 <= high and ok(good * 2):
            good *= 2
        bad = good * 2 if good * 2 <= high else None
    elif below:
        good = max(below)
    else:
        while bad // 2 >= low and not ok(bad // 2):
            bad //= 2
        good = bad // 2 if bad // 2 >= low else None
    steps = bisect_steps  # once good and bad are within a factor of 2 (wider brackets halve first)
    while good is not None and bad is not None:
        if bad <= 2 * good:
            if steps == 0:
                break
            steps -= 1
        mid = _nice(math.sqrt(good * bad))
        if mid in (good, bad) or mid in tried:
            break
        if ok(mid):
            good = mid
        else:
            bad = mid
    return good, [tried[r] for r in sorted(tried)] + discarded
