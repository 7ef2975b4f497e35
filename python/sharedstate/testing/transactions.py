"""The four TStream applications (Grep and Sum, Streaming Ledger, Online Bidding, Toll Processing)
as declarative transactions over States, with their input generators (the paper's parameters by
default: 10k records, Zipf skew 0.6, multi-partition transactions of length 4 at a ratio of 25%; TP
100 segments at skew 0.2) and a sequential oracle: the transactions applied one by one in time
order, in plain Python, from the input alone (never from the plugin).

Every event has its own time, and plain updates (the concurrent writer) never share one with an
event, so "time order" is one order and no tie rule is needed to compute the answer. Events arrive
out of order, within `disorder_s` of their time; the query's `lateness` must cover it (then no
transaction is late). The last event and the last plain update are sentinels far past every other
time: they make update progress pass every real event, and have no outcome of their own.

    work = streaming_ledger(seed=7, records=200, events=2000)
    out = ss.transact(events_df, time="ts", **work.transaction)
    expected = work.oracle()        # outcomes by event_id, and the final value of every key
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

try:
    import numpy as np
    import pandas as pd
except ImportError as e:  # the core package does not need pandas; this module does
    raise ImportError("sharedstate.testing needs pandas and pyarrow: pip install 'sharedstate[pandas]'") from e

SECOND = 1_000_000  # microseconds

# A read's value: the tuple of the State's value columns, or None when the key holds nothing.
Value = tuple
Store = dict[str, dict[object, Value]]


@dataclass
class Outcomes:
    """What the sequential oracle computed: per event (by event_id) committed or not and the values
    it read (read name -> value tuple or None), and each State's final values (key -> value tuple)."""

    committed: dict[int, bool]
    reads: dict[int, dict[str, Value | None]]
    final: Store


@dataclass
class TxnWorkload:
    """One application's input and definition.

    ``states``: State name -> (key DDL, value DDL). ``initial``: values loaded before every event
    (at ``INITIAL_TIME``), State -> {key: value}. ``events``: the transaction stream in arrival
    order (``event_schema``; ``ts`` a UTC timestamp; ``event_id`` unique). ``plain``: the concurrent
    plain writer's updates of ``plain_state`` (``key``, ``ts`` and the value columns) in arrival
    order, or None. ``transaction``: the keyword arguments of ``sharedstate.transact`` besides the
    events and ``time``. ``step``: the transaction in Python, (event, reads) -> (committed, writes
    [(state, key, value)]), used by the oracle."""

    name: str
    states: dict[str, tuple[str, str]]
    event_schema: str
    events: pd.DataFrame
    transaction: dict
    step: Callable[[dict, dict[str, Value | None]], tuple[bool, list[tuple[str, object, Value | None]]]]
    read_keys: Callable[[dict], dict[str, tuple[str, object]]]
    initial: Store = field(default_factory=dict)
    plain_state: str | None = None
    plain: pd.DataFrame | None = None
    lateness_s: int = 0

    def transaction_over(self, names: dict[str, str]) -> dict:
        """``transaction`` with the States renamed (``names``: this workload's name -> the State's)."""
        t = dict(self.transaction)
        t["reads"] = {r: (names.get(s, s), k) for r, (s, k) in t.get("reads", {}).items()}
        t["writes"] = [(names.get(s, s), k, v) for s, k, v in t["writes"]]
        return t

    def oracle(self) -> Outcomes:
        """The transactions and plain updates applied one by one in time order (every time is distinct)."""
        store: Store = {s: dict(self.initial.get(s, {})) for s in self.states}
        items = [(int(t), 0, r) for t, r in zip(_micros(self.events["ts"]), self.events.to_dict("records"))]
        if self.plain is not None:
            values = [c for c in self.plain.columns if c not in ("key", "ts")]
            items += [
                (int(t), 1, (r["key"], tuple(r[c] for c in values)))
                for t, r in zip(_micros(self.plain["ts"]), self.plain.to_dict("records"))
            ]
        items.sort(key=lambda i: i[0])
        if len({i[0] for i in items}) != len(items):
            raise ValueError("two inputs share a time: the oracle's order would need the engine's tie rule")
        sentinel = max(i for i in items if i[1] == 0)[2]["event_id"]
        committed: dict[int, bool] = {}
        reads: dict[int, dict[str, Value | None]] = {}
        for _, kind, item in items:
            if kind == 1:
                key, value = item
                store[self.plain_state][key] = value
                continue
            event = item
            read = {
                name: (None if key is None else store[state].get(key))
                for name, (state, key) in self.read_keys(event).items()
            }
            ok, writes = self.step(event, read)
            if event["event_id"] == sentinel:
                continue  # the sentinel never becomes final: no outcome
            committed[int(event["event_id"])] = ok
            reads[int(event["event_id"])] = read
            if ok:
                for state, key, value in writes:
                    if key is not None and value is not None:
                        store[state][key] = value
        return Outcomes(committed, reads, store)


def plain(value) -> object:
    """A Row, dict, tuple, list, array or scalar as plain lists (structs and arrays alike), to compare
    Spark's rows (collected, or read back with pyarrow) with the oracle's tuples."""
    if hasattr(value, "asDict"):
        return [plain(v) for v in value.asDict().values()]
    if isinstance(value, dict):  # a struct read back with pyarrow
        return [plain(v) for v in value.values()]
    if isinstance(value, (list, tuple, np.ndarray)):
        return [plain(v) for v in value]
    return value


def assert_equals_oracle(work: TxnWorkload, expected: Outcomes, outcomes: list, finals: dict[str, list]) -> None:
    """Checks a run against the sequential oracle: `outcomes` the outcome rows (pyspark Rows), one per
    event but the sentinel, each committed or aborted (reason `condition`) with the values it read as
    the oracle's; `finals` per State of the workload (its name in the workload) the rows of its
    `as_of()` table, equal to the oracle's final values (the plain writer's sentinel key `__end__`,
    never final, left out)."""
    ids = [r["event_id"] for r in outcomes]
    assert len(ids) == len(set(ids)), "an outcome was emitted twice"
    assert set(ids) == set(expected.committed), "every event but the sentinel has exactly one outcome"
    for r in outcomes:
        e = r["event_id"]
        assert r["committed"] == expected.committed[e], f"event {e}"
        assert r["reason"] == (None if r["committed"] else "condition"), f"event {e}"
        got = {n: plain(r[n]) for n in expected.reads[e]}
        assert got == {n: plain(v) for n, v in expected.reads[e].items()}, f"event {e} read other values"
    for name, rows in finals.items():
        key, value = work.states[name]
        key_column = key.split(" ")[0]
        values = [c.strip().split(" ")[0] for c in value.split(",")]
        final = {r[key_column]: plain(tuple(r[c] for c in values)) for r in rows}
        want = {k: plain(v) for k, v in expected.final[name].items() if k != "__end__"}
        assert final == want, f"final {name} differs from the sequential oracle"


def _micros(series) -> np.ndarray:
    return pd.to_datetime(series, utc=True).astype("datetime64[us, UTC]").astype("int64").to_numpy()


def _none(v):
    """A missing event value (NaN/NaT/None from pandas) as None."""
    if v is None:
        return None
    try:
        return None if pd.isna(v) else v
    except (TypeError, ValueError):  # arrays
        return v


class Zipf:
    """Record ids in [0, records) with Zipf skew `skew` (0 = uniform) over one random ranking of the
    records (the hot records are not the low ids), fixed for the workload."""

    def __init__(self, rng: np.random.Generator, records: int, skew: float):
        weights = 1.0 / np.power(np.arange(1, records + 1, dtype=float), skew)
        self.cumulative = np.cumsum(weights / weights.sum())
        self.ranking = rng.permutation(records)
        self.records = records
        self.rng = rng

    def draw(self, size: int) -> np.ndarray:
        ranks = np.minimum(np.searchsorted(self.cumulative, self.rng.random(size)), self.records - 1)
        return self.ranking[ranks]

    def pick(self, count: int, partitions: int, multi_ratio: float, multi_length: int) -> list[int]:
        """`count` distinct records for one transaction: with probability `multi_ratio` spread over
        `multi_length` partitions (record mod `partitions`), else all in one partition (TStream's
        multi-partition transactions)."""
        partitions = max(1, min(partitions, self.records))
        spread = min(count, multi_length, partitions) if self.rng.random() < multi_ratio else 1
        parts = self.rng.choice(partitions, size=spread, replace=False)
        chosen: list[int] = []
        tries = 0
        while len(chosen) < count:
            tries += 1
            record = int(self.draw(1)[0])
            if tries < 1000:  # a partition too small for the transaction: any record after that
                record = (record // partitions) * partitions + int(parts[len(chosen) % spread])
            if record < self.records and record not in chosen:
                chosen.append(record)
        return chosen


def _times(rng: np.random.Generator, count: int, horizon_s: int) -> np.ndarray:
    """`count` distinct times (µs) in [1 s, horizon]."""
    return np.sort(rng.choice((horizon_s - 1) * SECOND, size=count, replace=False)) + SECOND


def _arrival_order(rng: np.random.Generator, frame: pd.DataFrame, disorder_s: int) -> pd.DataFrame:
    """Rows in arrival order: each arrives up to `disorder_s` after its time."""
    arrival = _micros(frame["ts"]) + rng.integers(0, max(1, disorder_s * SECOND), size=len(frame))
    return frame.assign(_arrival=arrival).sort_values("_arrival").drop(columns="_arrival").reset_index(drop=True)


def _ts(micros) -> pd.Series:
    return pd.to_datetime(pd.Series(np.asarray(micros, dtype="int64")), unit="us", utc=True)


INITIAL_TIME = pd.Timestamp(0, unit="us", tz="UTC")


def _end_time(horizon_s: int, disorder_s: int) -> int:
    """The sentinel event's time (µs): far past every other time and its disorder, so U passes them all."""
    return (horizon_s + 10 * disorder_s + 60) * SECOND


def _frame(rows, nullable_ints: tuple[str, ...] = ()) -> pd.DataFrame:
    """The events as a frame: `nullable_ints` as nullable INT columns, `ts` (µs) as UTC timestamps."""
    frame = pd.DataFrame(rows)
    for c in nullable_ints:
        frame[c] = frame[c].astype("Int32")
    frame["ts"] = _ts(frame["ts"])
    return frame


def arrival_batches(frame: pd.DataFrame, count: int) -> list[pd.DataFrame]:
    """The rows in `count` consecutive batches (files of a file stream), arrival order kept."""
    return [part.reset_index(drop=True) for part in np.array_split(frame, count) if len(part)]


# ---- Streaming Ledger -------------------------------------------------------------------------

SL_EVENTS = (
    "event_id BIGINT, kind STRING, src_account STRING, dst_account STRING, src_asset STRING, dst_asset STRING, "
    "account_amount BIGINT, asset_amount BIGINT, ts TIMESTAMP"
)


def streaming_ledger(
    seed: int,
    records: int = 10_000,
    events: int = 10_000,
    skew: float = 0.6,
    transfer_ratio: float = 0.5,
    partitions: int = 8,
    multi_ratio: float = 0.25,
    multi_length: int = 4,
    horizon_s: int = 600,
    disorder_s: int = 5,
    plain_updates: int = 0,
) -> TxnWorkload:
    """SL: a deposit tops up an account and an asset; a transfer moves an amount from one
    (account, asset) pair to another and aborts unless both sources hold enough. With
    `plain_updates`, a concurrent plain writer sets account balances (an adjustment) at its own
    times. Balances start at 100 for every account and asset."""
    rng = np.random.default_rng(seed)
    zipf = Zipf(rng, records, skew)
    times = _times(rng, events + plain_updates, horizon_s)
    is_plain = np.zeros(len(times), dtype=bool)
    is_plain[rng.choice(len(times), size=plain_updates, replace=False)] = True
    rows = []
    for i, t in enumerate(times[~is_plain]):
        transfer = rng.random() < transfer_ratio
        a = zipf.pick(2, partitions, multi_ratio, multi_length)
        s = zipf.pick(2, partitions, multi_ratio, multi_length)
        rows.append(
            {
                "event_id": i,
                "kind": "transfer" if transfer else "deposit",
                "src_account": f"a{a[0]}" if transfer else None,
                "dst_account": f"a{a[1]}",
                "src_asset": f"s{s[0]}" if transfer else None,
                "dst_asset": f"s{s[1]}",
                "account_amount": int(rng.integers(1, 60)),
                "asset_amount": int(rng.integers(1, 60)),
                "ts": int(t),
            }
        )
    end = _end_time(horizon_s, disorder_s)
    rows.append(
        {"event_id": events, "kind": "deposit", "src_account": None, "dst_account": None, "src_asset": None,
         "dst_asset": None, "account_amount": 0, "asset_amount": 0, "ts": end}
    )  # fmt: skip
    frame = _frame(rows)
    plain = None
    if plain_updates:
        ptimes = list(times[is_plain]) + [end + SECOND]
        keys = [f"a{k}" for k in zipf.draw(plain_updates)] + ["__end__"]
        plain = pd.DataFrame({"key": keys, "ts": _ts(ptimes), "balance": rng.integers(0, 200, size=len(keys))})
        plain = _arrival_order(rng, plain, disorder_s)

    def read_keys(e):
        return {
            "sa": ("accounts", _none(e["src_account"])),
            "da": ("accounts", _none(e["dst_account"])),
            "ss": ("assets", _none(e["src_asset"])),
            "ds": ("assets", _none(e["dst_asset"])),
        }

    def step(e, r):
        aa, sa = int(e["account_amount"]), int(e["asset_amount"])
        if e["kind"] == "transfer":
            if r["sa"] is None or r["ss"] is None or r["sa"][0] < aa or r["ss"][0] < sa:
                return False, []
            return True, [
                ("accounts", e["src_account"], (r["sa"][0] - aa,)),
                ("accounts", e["dst_account"], ((r["da"] or (0,))[0] + aa,)),
                ("assets", e["src_asset"], (r["ss"][0] - sa,)),
                ("assets", e["dst_asset"], ((r["ds"] or (0,))[0] + sa,)),
            ]
        return True, [
            ("accounts", _none(e["dst_account"]), ((r["da"] or (0,))[0] + aa,)),
            ("assets", _none(e["dst_asset"]), ((r["ds"] or (0,))[0] + sa,)),
        ]

    transaction = {
        "reads": {
            "sa": ("accounts", "src_account"),
            "da": ("accounts", "dst_account"),
            "ss": ("assets", "src_asset"),
            "ds": ("assets", "dst_asset"),
        },
        "condition": "kind = 'deposit' OR (sa.balance >= account_amount AND ss.balance >= asset_amount)",
        "writes": [
            ("accounts", "src_account", "sa.balance - account_amount"),
            ("accounts", "dst_account", "coalesce(da.balance, 0) + account_amount"),
            ("assets", "src_asset", "ss.balance - asset_amount"),
            ("assets", "dst_asset", "coalesce(ds.balance, 0) + asset_amount"),
        ],
    }
    initial = {
        "accounts": {f"a{k}": (100,) for k in range(records)},
        "assets": {f"s{k}": (100,) for k in range(records)},
    }
    return TxnWorkload(
        "SL",
        {"accounts": ("id STRING", "balance BIGINT"), "assets": ("id STRING", "balance BIGINT")},
        SL_EVENTS,
        _arrival_order(rng, frame, disorder_s),
        transaction,
        step,
        read_keys,
        initial,
        "accounts" if plain_updates else None,
        plain,
        lateness_s=disorder_s,
    )


# ---- Grep and Sum -----------------------------------------------------------------------------


def grep_and_sum(
    seed: int,
    records: int = 10_000,
    events: int = 10_000,
    length: int = 10,
    read_ratio: float = 0.5,
    skew: float = 0.6,
    partitions: int = 8,
    multi_ratio: float = 0.25,
    multi_length: int = 4,
    horizon_s: int = 600,
    disorder_s: int = 5,
) -> TxnWorkload:
    """GS: each event reads a list of `length` records (the outcome's reads are summed downstream) or
    writes its value to all of them."""
    rng = np.random.default_rng(seed)
    zipf = Zipf(rng, records, skew)
    rows = []
    for i, t in enumerate(_times(rng, events, horizon_s)):
        keys = zipf.pick(length, partitions, multi_ratio, multi_length)
        kind = "read" if rng.random() < read_ratio else "write"
        row = {"event_id": i, "kind": kind, "value": int(rng.integers(0, 1000))}
        row.update({f"k{j}": int(k) for j, k in enumerate(keys)})
        row["ts"] = int(t)
        rows.append(row)
    end = {"event_id": events, "kind": "read", "value": 0, "ts": _end_time(horizon_s, disorder_s)}
    end.update({f"k{j}": None for j in range(length)})
    frame = _frame(rows + [end], tuple(f"k{j}" for j in range(length)))
    names = [f"r{j}" for j in range(length)]

    def read_keys(e):
        return {n: ("records", _none(e[f"k{j}"])) for j, n in enumerate(names)}

    def step(e, r):
        if e["kind"] == "read":
            return True, []
        return True, [("records", _none(e[f"k{j}"]), (int(e["value"]),)) for j in range(length)]

    transaction = {
        "reads": {n: ("records", f"k{j}") for j, n in enumerate(names)},
        "writes": [("records", f"CASE WHEN kind = 'write' THEN k{j} END", "value") for j in range(length)],
    }
    schema = "event_id BIGINT, kind STRING, value BIGINT, " + ", ".join(f"k{j} INT" for j in range(length))
    return TxnWorkload(
        "GS",
        {"records": ("id INT", "v BIGINT")},
        schema + ", ts TIMESTAMP",
        _arrival_order(rng, frame, disorder_s),
        transaction,
        step,
        read_keys,
        {"records": {k: (0,) for k in range(records)}},
        lateness_s=disorder_s,
    )


# ---- Online Bidding ---------------------------------------------------------------------------


def online_bidding(
    seed: int,
    records: int = 10_000,
    events: int = 10_000,
    length: int = 20,
    skew: float = 0.6,
    partitions: int = 8,
    multi_ratio: float = 0.25,
    multi_length: int = 4,
    horizon_s: int = 600,
    disorder_s: int = 5,
) -> TxnWorkload:
    """OB: bid:alter:top = 6:1:1. A bid buys `bid_qty` of one item if its price is at most
    `bid_price` and enough remains (else it aborts); alter sets the prices of `length` items; top
    raises their quantities."""
    rng = np.random.default_rng(seed)
    zipf = Zipf(rng, records, skew)
    rows = []
    for i, t in enumerate(_times(rng, events, horizon_s)):
        kind = rng.choice(["bid"] * 6 + ["alter", "top"])
        n = 1 if kind == "bid" else length
        keys = zipf.pick(n, partitions, multi_ratio, multi_length)
        row = {f"i{j}": (int(keys[j]) if j < n else None) for j in range(length)}
        row.update(
            {
                "event_id": i,
                "kind": str(kind),
                "bid_price": int(rng.integers(1, 100)),
                "bid_qty": int(rng.integers(1, 5)),
                "prices": [int(p) for p in rng.integers(1, 100, size=length)],
                "tops": [int(q) for q in rng.integers(1, 10, size=length)],
                "ts": int(t),
            }
        )
        rows.append(row)
    end = {f"i{j}": None for j in range(length)}
    end.update({"event_id": events, "kind": "top", "bid_price": 0, "bid_qty": 0, "prices": [0] * length,
                "tops": [0] * length, "ts": _end_time(horizon_s, disorder_s)})  # fmt: skip
    frame = _frame(rows + [end], tuple(f"i{j}" for j in range(length)))
    names = [f"r{j}" for j in range(length)]

    def read_keys(e):
        return {n: ("items", _none(e[f"i{j}"])) for j, n in enumerate(names)}

    def step(e, r):
        kind = e["kind"]
        if kind == "bid":
            price, qty = r["r0"] if r["r0"] is not None else (None, None)
            if price is None or qty is None or price > e["bid_price"] or qty < e["bid_qty"]:
                return False, []
            return True, [("items", _none(e["i0"]), (price, qty - int(e["bid_qty"])))]
        writes = []
        for j in range(length):
            old = r[names[j]] or (None, None)
            if kind == "alter":
                new = (int(e["prices"][j]), old[1])
            else:
                new = (old[0], None if old[1] is None else old[1] + int(e["tops"][j]))
            writes.append(("items", _none(e[f"i{j}"]), new))
        return True, writes

    def value(j: int) -> str:
        r = names[j]
        return (
            f"CASE kind WHEN 'bid' THEN named_struct('price', {r}.price, 'qty', {r}.qty - bid_qty) "
            f"WHEN 'alter' THEN named_struct('price', element_at(prices, {j + 1}), 'qty', {r}.qty) "
            f"ELSE named_struct('price', {r}.price, 'qty', {r}.qty + element_at(tops, {j + 1})) END"
        )

    transaction = {
        "reads": {n: ("items", f"i{j}") for j, n in enumerate(names)},
        "condition": "kind <> 'bid' OR (r0.price <= bid_price AND r0.qty >= bid_qty)",
        "writes": [("items", f"i{j}", value(j)) for j in range(length)],
    }
    schema = (
        "event_id BIGINT, kind STRING, bid_price BIGINT, bid_qty BIGINT, prices ARRAY<BIGINT>, tops ARRAY<BIGINT>, "
        + ", ".join(f"i{j} INT" for j in range(length))
        + ", ts TIMESTAMP"
    )
    initial = {"items": {k: (int(p), 100) for k, p in zip(range(records), rng.integers(1, 100, size=records))}}
    return TxnWorkload(
        "OB",
        {"items": ("id INT", "price BIGINT, qty BIGINT")},
        schema,
        _arrival_order(rng, frame, disorder_s),
        transaction,
        step,
        read_keys,
        initial,
        lateness_s=disorder_s,
    )


# ---- Toll Processing --------------------------------------------------------------------------


def toll(speed: Value | None, count: Value | None) -> int:
    """Linear Road's toll from what a position report read: 2 * (vehicles - 50)^2 when the segment's
    average speed is below 40 and more than 50 vehicles were seen, else 0."""
    if speed is None or count is None or not speed[1]:
        return 0
    vehicles = len(count[0] or [])
    return 2 * (vehicles - 50) ** 2 if speed[0] / speed[1] < 40 and vehicles > 50 else 0


def toll_processing(
    seed: int,
    segments: int = 100,
    events: int = 10_000,
    vehicles: int = 1_000,
    skew: float = 0.2,
    horizon_s: int = 600,
    disorder_s: int = 5,
) -> TxnWorkload:
    """TP: each position report updates its segment's speed totals (RS) and set of vehicles (VC) and
    reads both as they were before it (TN: the toll, see `toll`)."""
    rng = np.random.default_rng(seed)
    segs = Zipf(rng, segments, skew).draw(events)
    frame = pd.DataFrame(
        {
            "event_id": np.arange(events, dtype="int64"),
            "vehicle": rng.integers(0, vehicles, size=events).astype("int32"),
            "segment": segs.astype("int32"),
            "speed": rng.integers(0, 100, size=events).astype("int64"),
            "ts": _times(rng, events, horizon_s),
        }
    )
    end = pd.DataFrame(
        {"event_id": [events], "vehicle": [0], "segment": [None], "speed": [0],
         "ts": [_end_time(horizon_s, disorder_s)]}
    )  # fmt: skip
    frame = pd.concat([frame, end], ignore_index=True)
    frame["segment"] = frame["segment"].astype("Int32")
    frame["vehicle"] = frame["vehicle"].astype("int32")
    frame["ts"] = _ts(frame["ts"])

    def read_keys(e):
        seg = _none(e["segment"])
        return {"s": ("speeds", seg), "c": ("counts", seg)}

    def step(e, r):
        seg = _none(e["segment"])
        total, reports = r["s"] or (0, 0)
        seen = list((r["c"] or ([],))[0])
        if int(e["vehicle"]) not in seen:
            seen.append(int(e["vehicle"]))
        return True, [("speeds", seg, (total + int(e["speed"]), reports + 1)), ("counts", seg, (seen,))]

    transaction = {
        "reads": {"s": ("speeds", "segment"), "c": ("counts", "segment")},
        "writes": [
            (
                "speeds",
                "segment",
                "named_struct('total', coalesce(s.total, 0) + speed, 'reports', coalesce(s.reports, 0) + 1)",
            ),
            ("counts", "segment", "array_union(coalesce(c.vehicles, CAST(array() AS ARRAY<INT>)), array(vehicle))"),
        ],
    }  # fmt: skip
    return TxnWorkload(
        "TP",
        {"speeds": ("segment INT", "total BIGINT, reports BIGINT"), "counts": ("segment INT", "vehicles ARRAY<INT>")},
        "event_id BIGINT, vehicle INT, segment INT, speed BIGINT, ts TIMESTAMP",
        _arrival_order(rng, frame, disorder_s),
        transaction,
        step,
        read_keys,
        lateness_s=disorder_s,
    )


APPLICATIONS = {"GS": grep_and_sum, "SL": streaming_ledger, "OB": online_bidding, "TP": toll_processing}
