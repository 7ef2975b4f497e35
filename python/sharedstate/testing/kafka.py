"""A local Kafka broker for tests and demos: Apache Kafka's own jars from Maven Central, run as one
java process in KRaft mode (a combined broker and controller), listening on 127.0.0.1 only.

    from sharedstate.testing.kafka import KafkaBroker

    with KafkaBroker() as kafka:
        kafka.create_topic("views", partitions=2)
        kafka.produce("views", [b'{"ad_id": "ad001"}'])
        spark.readStream.format("kafka").option("kafka.bootstrap.servers", kafka.bootstrap)...

`kafka_libs()` resolves the broker's jars once into `$SHAREDSTATE_CACHE/kafka/<version>/libs` with
Maven (`mvn` on the PATH); the container image of the broker copies that directory. The helpers
that create topics and produce or read records use the pure-Python client `kafka-python`
(`pip install 'sharedstate[dev]'`); the broker itself needs only Java 17 and the jars.
"""

from __future__ import annotations

import base64
import os
import shutil
import socket
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterable
from pathlib import Path

# The kafka-clients that Spark's connector (spark-sql-kafka-0-10_2.13:4.2.0) is built and tested
# against; a broker of the same release speaks exactly its protocol versions.
KAFKA_VERSION = "3.9.2"
SCALA_BINARY = "2.13"
# kafka_2.13 leaves the logging backend to the application; the broker's own scripts use reload4j.
_LOGGING = ("org.slf4j", "slf4j-reload4j", "1.7.36")

_POM = """<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>io.sharedstate.testing</groupId>
  <artifactId>kafka-broker-libs</artifactId>
  <version>{version}</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency>
      <groupId>org.apache.kafka</groupId><artifactId>kafka_{scala}</artifactId><version>{version}</version>
    </dependency>
    <dependency>
      <groupId>{log_group}</groupId><artifactId>{log_artifact}</artifactId><version>{log_version}</version>
    </dependency>
  </dependencies>
</project>
"""

_LOG4J = """log4j.rootLogger=INFO, file
log4j.appender.file=org.apache.log4j.FileAppender
log4j.appender.file.File={log}
log4j.appender.file.layout=org.apache.log4j.PatternLayout
log4j.appender.file.layout.ConversionPattern=[%d] %p %m (%c)%n
log4j.logger.org.apache.kafka.raft=WARN
log4j.logger.kafka.log.LogCleaner=WARN
"""


def cache_dir() -> Path:
    """$SHAREDSTATE_CACHE (the checkout's .cache under `make`), else ~/.cache/sharedstate."""
    explicit = os.environ.get("SHAREDSTATE_CACHE")
    return Path(explicit) if explicit else Path.home() / ".cache" / "sharedstate"


def kafka_libs(version: str = KAFKA_VERSION) -> Path:
    """The directory of the broker's jars (`kafka_2.13:<version>` and its runtime dependencies),
    resolved from Maven Central on the first call and reused after that."""
    libs = cache_dir() / "kafka" / version / "libs"
    if libs.is_dir() and any(libs.glob(f"kafka_{SCALA_BINARY}-{version}.jar")):
        return libs
    mvn = shutil.which("mvn")
    if mvn is None:
        raise RuntimeError("resolving Kafka's jars needs Maven: install the Debian package `maven`")
    libs.parent.mkdir(parents=True, exist_ok=True)
    # Resolve into a private directory and rename it into place: a concurrent or interrupted run
    # never leaves a half-filled libs/ that a later call would take as complete.
    work = Path(tempfile.mkdtemp(prefix="resolve-", dir=libs.parent))
    try:
        group, artifact, log_version = _LOGGING
        (work / "pom.xml").write_text(
            _POM.format(
                version=version, scala=SCALA_BINARY, log_group=group, log_artifact=artifact, log_version=log_version
            )
        )
        command = [
            mvn,
            "-q",
            "-B",
            f"-Dmaven.repo.local={cache_dir() / 'm2'}",
            "dependency:copy-dependencies",
            "-DincludeScope=runtime",
            f"-DoutputDirectory={work / 'libs'}",
        ]
        print(f"Resolving Kafka {version}'s jars from Maven Central into {libs} (once)", flush=True)
        done = subprocess.run(command, cwd=work, capture_output=True, text=True)
        if done.returncode != 0:
            raise RuntimeError(f"mvn could not resolve org.apache.kafka:kafka_{SCALA_BINARY}:{version}:\n{done.stdout}")
        try:
            os.rename(work / "libs", libs)
        except OSError:
            if not libs.is_dir():  # another process won the race: its copy is as good
                raise
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return libs


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class KafkaBroker:
    """One Kafka process in KRaft mode (broker and controller in one), on free ports of 127.0.0.1,
    with its data under a temporary directory removed on exit. A context manager:
    `with KafkaBroker() as kafka: ... kafka.bootstrap ...`."""

    def __init__(
        self,
        workdir: Path | None = None,
        version: str = KAFKA_VERSION,
        heap: str = "384m",
        start_timeout: float = 120,
    ):
        self.version = version
        self.heap = heap
        self.start_timeout = start_timeout
        self._own_workdir = workdir is None
        self.workdir = Path(workdir) if workdir is not None else Path(tempfile.mkdtemp(prefix="sharedstate-kafka-"))
        self.port = free_port()
        self.controller_port = free_port()
        self.process: subprocess.Popen | None = None

    @property
    def bootstrap(self) -> str:
        """`kafka.bootstrap.servers` for clients and Spark's connector."""
        return f"127.0.0.1:{self.port}"

    @property
    def log_file(self) -> Path:
        """The broker's own log (its console output goes to console.log beside it)."""
        return self.workdir / "server.log"

    # --- lifecycle -------------------------------------------------------------------------------

    def _properties(self) -> Path:
        props = {
            "process.roles": "broker,controller",
            "node.id": "1",
            "controller.quorum.voters": f"1@127.0.0.1:{self.controller_port}",
            "listeners": f"PLAINTEXT://127.0.0.1:{self.port},CONTROLLER://127.0.0.1:{self.controller_port}",
            "advertised.listeners": f"PLAINTEXT://127.0.0.1:{self.port}",
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "PLAINTEXT",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            "log.dirs": str(self.workdir / "data"),
            "num.partitions": "1",
            # one broker: every internal topic has one replica, and transactions work
            "offsets.topic.replication.factor": "1",
            "transaction.state.log.replication.factor": "1",
            "transaction.state.log.min.isr": "1",
            "group.initial.rebalance.delay.ms": "0",
            "auto.create.topics.enable": "true",
            # small segments and few threads: a test broker on a 2-core machine
            "num.network.threads": "2",
            "num.io.threads": "2",
            "log.segment.bytes": str(64 * 1024 * 1024),
        }
        path = self.workdir / "server.properties"
        path.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
        (self.workdir / "log4j.properties").write_text(_LOG4J.format(log=self.log_file))
        return path

    def _java(self, main: str, *args: str) -> list[str]:
        return [
            "java",
            f"-Xmx{self.heap}",
            "-XX:+UseSerialGC",
            "-XX:TieredStopAtLevel=1",  # a short-lived test broker: fast start beats peak throughput
            f"-Dlog4j.configuration=file:{self.workdir / 'log4j.properties'}",
            f"-Dkafka.logs.dir={self.workdir}",
            "-Djava.net.preferIPv4Stack=true",
            "-cp",
            str(kafka_libs(self.version) / "*"),
            main,
            *args,
        ]

    def start(self) -> KafkaBroker:
        if self.process is not None:
            raise RuntimeError("this broker is already started")
        self.workdir.mkdir(parents=True, exist_ok=True)
        props = self._properties()
        # a KRaft cluster id: 16 random bytes in URL-safe base64 without padding
        cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        formatted = subprocess.run(
            self._java("kafka.tools.StorageTool", "format", f"--cluster-id={cluster_id}", "-c", str(props)),
            capture_output=True,
            text=True,
        )
        if formatted.returncode != 0:
            raise RuntimeError(f"kafka-storage format failed:\n{formatted.stdout}\n{formatted.stderr}")
        console = open(self.workdir / "console.log", "wb")
        self.process = subprocess.Popen(
            self._java("kafka.Kafka", str(props)), stdout=console, stderr=subprocess.STDOUT, start_new_session=True
        )
        console.close()
        self._wait_ready()
        return self

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + self.start_timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"the Kafka broker exited with {self.process.returncode}:\n{self._tail()}")
            if self._answers():
                return
            time.sleep(0.5)
        self.stop()
        raise RuntimeError(f"the Kafka broker did not come up within {self.start_timeout}s:\n{self._tail()}")

    def _answers(self) -> bool:
        """The broker accepts connections and has joined its own KRaft quorum (metadata answers)."""
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                pass
        except OSError:
            return False
        from kafka import KafkaAdminClient  # outside the try: a missing client is an error, not "not ready"

        try:
            admin = KafkaAdminClient(bootstrap_servers=self.bootstrap, request_timeout_ms=5000)
            try:
                admin.list_topics()
                return True
            finally:
                admin.close()
        except Exception:  # not ready yet: the next poll tries again
            return False

    def _tail(self, lines: int = 40) -> str:
        out = []
        for path in (self.workdir / "console.log", self.log_file):
            if path.is_file():
                out.extend(path.read_text(errors="replace").splitlines()[-lines:])
        return "\n".join(out)

    def stop(self) -> None:
        """Stops the broker (SIGTERM, then SIGKILL after 20 s); its data stays until close()."""
        if self.process is None:
            return
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)
        self.process = None

    def close(self) -> None:
        self.stop()
        if self._own_workdir:
            shutil.rmtree(self.workdir, ignore_errors=True)

    def __enter__(self) -> KafkaBroker:
        try:
            return self.start()
        except BaseException:
            self.close()
            raise

    def __exit__(self, *exc) -> None:
        self.close()

    # --- clients ---------------------------------------------------------------------------------

    def create_topic(self, name: str, partitions: int = 1, configs: dict[str, str] | None = None) -> None:
        """Creates a topic (one replica, with the topic `configs` given) and waits until the broker leads
        all its partitions."""
        from kafka import KafkaAdminClient
        from kafka.admin import NewTopic

        admin = KafkaAdminClient(bootstrap_servers=self.bootstrap)
        try:
            admin.create_topics(
                [NewTopic(name, num_partitions=partitions, replication_factor=1, topic_configs=configs or {})]
            )
        finally:
            admin.close()
        deadline = time.monotonic() + 30
        while len(self.end_offsets(name)) < partitions:
            if time.monotonic() > deadline:
                raise RuntimeError(f"topic {name} has no leader for all {partitions} partitions after 30 s")
            time.sleep(0.2)

    def produce(
        self,
        topic: str,
        values: Iterable[bytes | str],
        keys: Iterable[bytes | str | None] | None = None,
        partition: int | None = None,
    ) -> int:
        """Writes the records in order (acks=all, idempotent: each exactly once) and flushes; returns
        how many. With `keys`, a record's partition is the key's hash, as in any Kafka producer."""
        from kafka import KafkaProducer

        def raw(x):
            return x.encode() if isinstance(x, str) else x

        producer = KafkaProducer(bootstrap_servers=self.bootstrap, acks="all", linger_ms=5, enable_idempotence=True)
        n = 0
        try:
            key_iter = iter(keys) if keys is not None else None
            for value in values:
                key = next(key_iter) if key_iter is not None else None
                producer.send(topic, value=raw(value), key=raw(key), partition=partition)
                n += 1
            producer.flush(60)
        finally:
            producer.close(10)
        return n

    def end_offsets(self, topic: str) -> dict[int, int]:
        """Partition -> the offset after its last record (the partitions with a leader)."""
        from kafka import KafkaConsumer, TopicPartition

        consumer = KafkaConsumer(bootstrap_servers=self.bootstrap)
        try:
            parts = consumer.partitions_for_topic(topic) or set()
            tps = [TopicPartition(topic, p) for p in sorted(parts)]
            return {tp.partition: off for tp, off in consumer.end_offsets(tps).items()} if tps else {}
        finally:
            consumer.close()

    def consume(self, topic: str, timeout: float = 60) -> list:
        """Every record of the topic now (from the first offset to the end offsets read at the call),
        read without a consumer group; kafka-python ConsumerRecords (.key, .value, .partition, .offset).
        Reads committed records only, so an aborted transaction's writes are not among them."""
        from kafka import KafkaConsumer, TopicPartition

        ends = self.end_offsets(topic)
        consumer = KafkaConsumer(
            bootstrap_servers=self.bootstrap, enable_auto_commit=False, isolation_level="read_committed"
        )
        records = []
        try:
            tps = [TopicPartition(topic, p) for p in ends]
            consumer.assign(tps)
            consumer.seek_to_beginning(*tps)
            deadline = time.monotonic() + timeout
            while any(consumer.position(tp) < ends[tp.partition] for tp in tps):
                if time.monotonic() > deadline:
                    raise RuntimeError(f"reading {topic} to its end offsets {ends} took over {timeout}s")
                for batch in consumer.poll(timeout_ms=500).values():
                    records.extend(r for r in batch if r.offset < ends[r.partition])
        finally:
            consumer.close()
        return records
