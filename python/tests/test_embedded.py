"""The embedded engine through JPype: no Spark, same engine and row codec as the plugin."""

from __future__ import annotations

import datetime as dt
import itertools
import random

import pytest

pytest.importorskip("jpype", reason="jpype1 is not installed (pip install jpype1)")

from sharedstate import embedded  # noqa: E402

try:
    JARS = embedded.find_jars()
except FileNotFoundError as e:  # pragma: no cover - depends on the build
    pytest.skip(f"embedded engine jar not built: {e}", allow_module_level=True)

_names = itertools.count()


@pytest.fixture(scope="module")
def engine():
    return embedded.start()


def new_state(engine, **kw):
    return engine.create_state(f"emb{next(_names)}", **kw)


def test_latest_waits_for_u_then_answers_as_of_t(engine):
    s = new_state(engine, key="ad_id STRING", value="campaign STRING")
    s.update("ad1", 10, "c1")
    s.update("ad1", 30, "c3")
    s.update("ad1", 20, "c2")
    assert s.fetch("ad1", 15) is embedded.NOT_YET
    assert s.commit(progress=25) == {"accepted": 3, "rejected": 0, "update": 25}
    assert s.fetch("ad1", 24) == embedded.Found(20, {"campaign": "c2"})
    assert s.fetch("ad1", 9) is None
    assert s.fetch("ad1", 25) is embedded.NOT_YET
    assert s.progress() == {"update": 25, "fetch": None}


def test_late_updates_are_rejected_and_counted(engine):
    s = new_state(engine, key="k BIGINT", value="v BIGINT")
    s.update(1, 100, 5)
    s.commit(progress=100)
    s.update(1, 50, 6)
    assert s.commit(progress=120)["rejected"] == 1
    assert s.metrics()["updates_rejected"] == 1


def test_sum_of_gradients_range_and_aggregates(engine):
    s = new_state(engine, key="param STRING", value="w ARRAY<DOUBLE>", rule="sum")
    s.update("layer1", 1, [0.5, 1.0])
    s.update("layer1", 2, [0.25, -1.0, 2.0])
    s.commit(progress=10)
    assert s.fetch("layer1", 5).value == {"w": [0.75, 0.0, 2.0]}
    assert [t for t, _ in s.fetch_range("layer1", 0, 9)] == [1, 2]
    n = new_state(engine, key="k STRING", value="clicks BIGINT", rule="sum")
    for t, v in [(1, 3), (2, 4), (3, 5)]:
        n.update("a", t, v)
    n.commit(progress=10)
    assert n.fetch("a", 9).value == {"clicks": 12}
    assert n.fetch_aggregate("a", "count", 0, 9) == {"count": 3}
    assert n.fetch_aggregate("a", "max", 2, 9) == {"clicks": 12}
    assert n.fetch_aggregate("a", "avg", 0, 9) == {"clicks": pytest.approx((3 + 7 + 12) / 3)}
    assert n.fetch_aggregate("a", "sum", 5, 9) is None


def test_append_with_set_semantics_for_a_dynamic_graph(engine):
    g = new_state(engine, key="vertex STRING", value="neighbours ARRAY<STRING>", rule="append")
    g.update("a", 1, ["+b", "+c"])
    g.update("a", 2, ["-b", "+d"])
    g.commit(progress=5)
    assert g.fetch("a", 1).value == {"neighbours": ["b", "c"]}
    assert g.fetch("a", 4).value == {"neighbours": ["c", "d"]}


def test_read_uncommitted_and_pending_fetches(engine):
    s = new_state(engine, key="k STRING", value="v BIGINT")
    s.update("x", 10, 1)
    s.commit(progress=50)
    assert s.fetch("x", 70) is embedded.NOT_YET
    assert s.fetch("x", 70, mode="uncommitted", staleness=30) == embedded.Found(10, {"v": 1})
    assert s.fetch("x", 70, wait_ms=50) is embedded.NOT_YET
    s.update("x", 60, 2)
    s.commit(progress=80)
    assert s.fetch("x", 70, wait_ms=1000) == embedded.Found(60, {"v": 2})


def test_datetimes_tuples_and_dicts(engine):
    s = new_state(engine, key="user STRING, item BIGINT", value="score DOUBLE, label STRING")
    t0 = dt.datetime(2026, 11, 20, 10, 0, tzinfo=dt.UTC)
    s.update(("u1", 7), t0, {"score": 0.5, "label": "x"})
    s.commit(progress=t0 + dt.timedelta(seconds=1))
    got = s.fetch({"user": "u1", "item": 7}, t0 + dt.timedelta(milliseconds=1))
    assert got.time == int(t0.timestamp()) * 1_000_000
    assert got.value == {"score": 0.5, "label": "x"}


def test_bad_input_raises_sharedstate_error_naming_the_problem(engine):
    with pytest.raises(embedded.SharedStateError, match="Unknown update rule 'median'"):
        new_state(engine, key="k STRING", value="v STRING", rule="median")
    with pytest.raises(embedded.SharedStateError, match="'campaign'"):
        new_state(engine, key="k STRING", value="campaign STRING", rule="sum")
    s = new_state(engine, key="k STRING", value="v BIGINT")
    with pytest.raises(embedded.SharedStateError, match="'v' is BIGINT"):
        s.update("a", 1, "not a number")
    with pytest.raises(embedded.SharedStateError, match="Unknown value column"):
        s.update("a", 1, {"nope": 1})


def test_matches_an_as_of_join_computed_offline(engine):
    """Random out-of-order updates over several commits: every committed fetch equals a backward
    as-of lookup over the full history (what pandas.merge_asof or the Spark fetch join gives),
    ties at one (key, time) going to the later update."""
    rnd = random.Random(11)
    s = new_state(engine, key="k STRING", value="v BIGINT", partitions=3)
    history = []  # (key, time, value, arrival)
    for epoch in range(6):
        rows = [(f"k{rnd.randrange(5)}", epoch * 100 + rnd.randrange(150), rnd.randrange(1000)) for _ in range(40)]
        for k, t, v in rows:  # times reach past this epoch's progress: those wait for a later U
            s.update(k, t, v)
            history.append((k, t, v, len(history)))
        assert s.commit(progress=(epoch + 1) * 100)["rejected"] == 0
    u = s.progress()["update"]
    assert u == 600
    for _ in range(200):
        k, t = f"k{rnd.randrange(5)}", rnd.randrange(-10, u)
        before = [h for h in history if h[0] == k and h[1] <= t]
        want = None
        if before:
            best = max(before, key=lambda h: (h[1], h[3]))
            want = embedded.Found(best[1], {"v": best[2]})
        assert s.fetch(k, t) == want, (k, t)
