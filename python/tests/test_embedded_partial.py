"""Partial States in the embedded engine (docs/partial-state.md): each embedded writer updates its
own instance (as a writer query does on Spark, instances="query"), and fetches read every instance
merged, read-committed: answered once every writer has passed the time. Checked against sums and
maxima computed here from the updates alone."""

from __future__ import annotations

import itertools
import random

import pytest

pytest.importorskip("jpype", reason="jpype1 is not installed (pip install jpype1)")

from sharedstate import embedded  # noqa: E402

try:
    embedded.find_jars()
except FileNotFoundError as e:  # pragma: no cover - depends on the build
    pytest.skip(f"embedded engine jar not built: {e}", allow_module_level=True)

_names = itertools.count()


@pytest.fixture(scope="module")
def engine():
    return embedded.start()


def test_each_writer_updates_its_instance_and_a_fetch_reads_the_merge_once_every_writer_passed(engine):
    name = f"emb_partial{next(_names)}"
    a = engine.create_state(name, key="m STRING", value="w ARRAY<BIGINT>", rule="sum", partial="sum", writer="a")
    b = engine.state(name, writer="b")
    assert a.instance is not None and b.instance is not None and a.instance != b.instance
    rng = random.Random(5)
    updates = {"a": [], "b": []}
    for writer, handle in (("a", a), ("b", b)):
        for _ in range(60):
            t, v = rng.randrange(1, 1000), [rng.randrange(-5, 6) for _ in range(rng.choice([2, 3]))]
            handle.update("m0", t, v)
            updates[writer].append((t, v))
    a.commit(progress=1001)
    assert a.fetch("m0", 500) is embedded.NOT_YET, "writer b has not passed 500: not read-committed yet"
    assert b.commit(progress=1001)["update"] == 1001

    def expected(t: int, writers=("a", "b")) -> list[int] | None:
        out: list[int] = []
        seen = False
        for w in writers:
            for u, v in updates[w]:
                if u <= t:
                    seen = True
                    out = [x + y for x, y in itertools.zip_longest(out, v, fillvalue=0)]
        return out if seen else None

    for t in [0, 1, 137, 500, 999, 1000]:
        got = a.fetch("m0", t)
        want = expected(t)
        assert (got.value["w"] if got else None) == want, t
        assert (b.fetch("m0", t).value["w"] if want is not None else b.fetch("m0", t)) == want


def test_max_merge_over_writers_and_misfits(engine):
    name = f"emb_partial{next(_names)}"
    w1 = engine.create_state(name, key="k BIGINT", value="v BIGINT", rule="replace", partial="max", writer="w1")
    w2 = engine.state(name, writer="w2")
    w1.update(1, 10, 7)
    w2.update(1, 20, 3)
    w1.update(1, 30, 1)  # w1's own value drops to 1; w2's stays 3
    w1.commit(progress=40)
    w2.commit(progress=40)
    assert [w1.fetch(1, t).value["v"] if w1.fetch(1, t) else None for t in (5, 10, 25, 35)] == [None, 7, 7, 3]
    plain = engine.create_state(f"emb_plain{next(_names)}", key="k BIGINT", value="v BIGINT")
    assert plain.instance is None
    with pytest.raises(embedded.SharedStateError, match="partial merge 'sum' does not fit"):
        engine.create_state(f"emb_partial{next(_names)}", key="k BIGINT", value="s STRING", partial="sum")
    with pytest.raises(embedded.SharedStateError, match="nope"):
        engine.create_state(f"emb_partial{next(_names)}", key="k BIGINT", value="v BIGINT", partial="nope")
