"""Helpers for testing code that uses sharedstate: generated input, offline oracles, and waiting for
streaming queries. This package's own tests (python/tests), its cluster tests (it/), the AdCamp demo
and the benchmarks use them; your tests can too (as with `delta.testing`).

- `sharedstate.testing.adcamp`: the AdCamp workload (Nova section 3.5), updates and events with
  realistic disorder and a few late updates; which updates a State must reject and keep; the
  offline as-of join it is checked against; parquet files a file stream reads in a fixed order.
- `sharedstate.testing.oracles`: offline answers for range and range-aggregate fetches, the as-of
  join of any history, read-uncommitted answers within bounded staleness, and the rate source's
  sequence in continuous mode. Each is computed from the input alone, never from the plugin.
- `sharedstate.testing.kafka`: a local Kafka broker (KRaft, Kafka's jars from Maven Central, on
  127.0.0.1) with helpers to create topics, produce and read records (docs/kafka.md).
- `sharedstate.testing.streams`: wait for a condition, for a query to drain or for a file sink to
  hold a number of rows, failing instead of hanging.
- `sharedstate.testing.jvm_options`: the environment for a benchmark run inside a test (without the
  test run's `JAVA_TOOL_OPTIONS`).

    from sharedstate.testing.adcamp import make_workload, accepted_updates, oracle
    from sharedstate.testing.streams import drained, wait_until

`adcamp` and `oracles` need pandas and pyarrow: `pip install 'sharedstate[pandas]'`.
"""
