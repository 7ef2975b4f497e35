"""The local Kafka broker of sharedstate.testing.kafka: its jars resolve once, it listens on
127.0.0.1 only, and records written with its helpers come back in order per partition."""

from __future__ import annotations

import pytest

from sharedstate.testing.kafka import KAFKA_VERSION, kafka_libs

pytestmark = [
    pytest.mark.slow,
    pytest.mark.filterwarnings("ignore:(read|open)_text is deprecated:DeprecationWarning"),
]


def _listening(port: int) -> list[str]:
    """Local addresses (hex, as /proc/net/tcp* shows them) with a socket listening on `port`."""
    found = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as f:
            for line in f.readlines()[1:]:
                fields = line.split()
                address, hex_port = fields[1].split(":")
                if fields[3] == "0A" and int(hex_port, 16) == port:  # 0A: LISTEN
                    found.append(address)
    return found


def test_libs_resolve_once_into_the_cache():
    libs = kafka_libs()
    assert (libs / f"kafka_2.13-{KAFKA_VERSION}.jar").is_file()
    assert (libs / f"kafka-clients-{KAFKA_VERSION}.jar").is_file()
    before = {p.name: p.stat().st_mtime for p in libs.iterdir()}
    assert kafka_libs() == libs
    assert {p.name: p.stat().st_mtime for p in libs.iterdir()} == before


def test_broker_listens_on_loopback_only(kafka):
    for port in (kafka.port, kafka.controller_port):
        assert _listening(port) == ["0100007F"], f"port {port}"  # 127.0.0.1, and no wildcard or IPv6 socket


def test_records_come_back_in_order_per_partition(kafka):
    kafka.create_topic("broker-roundtrip", partitions=3)
    keys = [f"k{i % 7}" for i in range(500)]
    values = [f"{k}:{i}" for i, k in enumerate(keys)]
    assert kafka.produce("broker-roundtrip", values, keys=keys) == 500
    records = kafka.consume("broker-roundtrip")
    assert sorted(r.value.decode() for r in records) == sorted(values)
    assert sum(kafka.end_offsets("broker-roundtrip").values()) == 500
    # one key, one partition: a key's records keep the order they were produced in
    by_key: dict[str, list[int]] = {}
    for r in sorted(records, key=lambda r: (r.partition, r.offset)):
        by_key.setdefault(r.key.decode(), []).append(int(r.value.decode().split(":")[1]))
    assert all(seq == sorted(seq) for seq in by_key.values())
    assert len({r.partition for r in records}) > 1
