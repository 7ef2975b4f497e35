package io.sharedstate.spark.durable

import io.sharedstate.core.{FetchAnswer, Key, State, StateSpec, UpdateBatch}
import java.nio.file.Files
import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
import org.scalatest.funsuite.AnyFunSuite

/** Recovery after a snapshot reads only the changelog files added after it, and rebuilds the same State. */
class StateRecoverySuite extends AnyFunSuite {
  private val spec = StateSpec("kv", "k STRING", "v STRING", 2, "replace")
  private val conf = ForkFreeRawLocalFileSystem.configure(new Configuration()) // as the plugin's own are

  /** A durable State under a temp root, written through its journal as the sink does (stage, commit with the files). */
  private final class Durable(legacySnapshotTable: Boolean = false) {
    val dir = new Path(Files.createTempDirectory("recovery-").toString)
    // legacy: as created before the changelog_version column existed
    private val tables = new OwnedTables(dir, conf, "recovery-suite",
      Option.when(legacySnapshotTable)(SnapshotTable.withoutChangelogVersion))
    val (log, snapshots, rejected) = (tables.log, tables.snapshots, tables.rejected)
    private val target = log.target(spec.partitions)
    private val lease = tables.lease
    val state = new State(spec)
    private val start = StateRecovery.replay(state, log, Some(snapshots), Some(rejected))
    val journal = new DeltaJournal(spec.name, log, target, rejected, start.nextSeq, start.version, lease)
    state.attachJournal(journal)
    state.registerWriter("w")

    /** Commits epoch `e` updating keys k0..k(keys-1) at times e*100+i; returns the data files (State partitions) it wrote. */
    def epoch(e: Long, keys: Int): Int = {
      val b = new UpdateBatch
      (0 until keys).foreach(i => b.add(s"k$i".getBytes, e * 100L + i, s"v$e-$i".getBytes))
      val files = target.writeTask("w", e, 0, b)
      state.stage("w", e, 0, b)
      state.commitEpoch("w", e, e * 100L, payload = files)
      files.count(_.partition >= 0)
    }

    /** Commits epoch `e` with `late` updates below U (times 0, 1, ...: rejected) and `onTime` ones at e*100+i. */
    def epochWithLate(e: Long, late: Int, onTime: Int): Unit = {
      val b = new UpdateBatch
      (0 until late).foreach(i => b.add(s"k$i".getBytes, i.toLong, s"late$e-$i".getBytes))
      (0 until onTime).foreach(i => b.add(s"k$i".getBytes, e * 100L + i, s"v$e-$i".getBytes))
      val files = target.writeTask("w", e, 0, b)
      state.stage("w", e, 0, b)
      state.commitEpoch("w", e, e * 100L, payload = files)
    }

    // retained = 10: the rounds here never reach retention
    def snapshot(): SnapshotRound =
      new Snapshotter(SnapshotSource.local(state, journal), log, snapshots, retained = 10).round()
  }

  private def assertSameAnswers(expected: State, actual: State): Unit = {
    assert(
      actual.metrics.keys == expected.metrics.keys && actual.metrics.updatesStaged == expected.metrics.updatesStaged)
    for (k <- 0 until 20; t <- 0L to 1000L by 23) {
      val key = new Key(s"k$k".getBytes)
      (expected.fetchLatest(key, t), actual.fetchLatest(key, t)) match {
        case (FetchAnswer.Found(t1, v1), FetchAnswer.Found(t2, v2)) =>
          assert(t1 == t2 && v1.sameElements(v2), s"k$k at $t")
        case (x, y) => assert(x == y, s"k$k at $t")
      }
    }
  }

  test("recovery after a snapshot reads only the changelog files added after it, and answers as the live State") {
    val d = new Durable
    val history = (0L until 6L).map(e => d.epoch(e, keys = 20)).sum
    assert(d.snapshot().written == spec.partitions)
    val tail = d.epoch(6L, keys = 5) + d.epoch(7L, keys = 3)
    assert(history > tail && tail > 0)

    val fromSnapshot = new State(spec)
    val recovered = StateRecovery.replay(fromSnapshot, d.log, Some(d.snapshots), None)
    assert(recovered.dataFilesRead == tail, s"read $recovered; the tail wrote $tail files, the history $history")
    assertSameAnswers(d.state, fromSnapshot)

    // The oracle's other half: without snapshots every file is read, and the answers are the same.
    val fromChangelog = new State(spec)
    assert(StateRecovery.replay(fromChangelog, d.log, None, None).dataFilesRead == history + tail)
    assertSameAnswers(d.state, fromChangelog)
    assert(recovered.nextSeq == StateRecovery.replay(new State(spec), d.log, None, None).nextSeq)
  }

  test("rejections a snapshot's partitions hold are counted and logged again after recovery, in their order") {
    val d = new Durable
    (0L until 3L).foreach(e => d.epoch(e, keys = 10))
    d.epochWithLate(3L, late = 3, onTime = 2)
    d.snapshot() // holds epoch 3's updates: the replay does not reject its late ones again
    d.epochWithLate(4L, late = 2, onTime = 1)
    assert(d.state.metrics.updatesRejected == 5)

    val s = new State(spec)
    StateRecovery.replay(s, d.log, Some(d.snapshots), Some(d.rejected))
    def seen(st: State) = st.rejectedUpdates.map(r => (new String(r.key, "UTF-8"), r.time, r.reason, r.epoch))
    assert(s.metrics.updatesRejected == 5)
    assert(seen(s) == seen(d.state))
    assert(d.rejected.readAll().size == 5) // the table holds each once: recovery wrote nothing twice
    assertSameAnswers(d.state, s)
  }

  test("a snapshot with nothing after it reads no changelog file; a second snapshot moves the start of the tail") {
    val d = new Durable
    (0L until 3L).foreach(e => d.epoch(e, keys = 20))
    d.snapshot()
    assert(StateRecovery.replay(new State(spec), d.log, Some(d.snapshots), None).dataFilesRead == 0)
    val between = d.epoch(3L, keys = 10)
    assert(StateRecovery.replay(new State(spec), d.log, Some(d.snapshots), None).dataFilesRead == between)
    d.snapshot()
    val after = d.epoch(4L, keys = 4)
    val s = new State(spec)
    assert(StateRecovery.replay(s, d.log, Some(d.snapshots), None).dataFilesRead == after)
    assertSameAnswers(d.state, s)
  }

  test(
    "a snapshot table from before changelog_version: the version reads as unknown and recovery reads the whole changelog") {
    val d = new Durable(legacySnapshotTable = true)
    val history = (0L until 3L).map(e => d.epoch(e, keys = 20)).sum
    d.snapshot()
    assert((0 until spec.partitions).forall(p => d.snapshots.latest(p).exists(_.changelogVersion.isEmpty)))
    val tail = d.epoch(3L, keys = 6)
    val s = new State(spec)
    assert(StateRecovery.replay(s, d.log, Some(d.snapshots), None).dataFilesRead == history + tail)
    assertSameAnswers(d.state, s)
  }
}
