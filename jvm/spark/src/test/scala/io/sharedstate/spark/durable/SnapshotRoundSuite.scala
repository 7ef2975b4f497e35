package io.sharedstate.spark.durable

import io.sharedstate.core.{FetchAnswer, Key, State, StateSpec, UpdateBatch}
import java.nio.file.Files
import java.util.concurrent.{CountDownLatch, Executors, TimeUnit}
import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
import org.apache.parquet.hadoop.ParquetFileReader
import org.apache.parquet.hadoop.util.HadoopInputFile
import org.scalatest.funsuite.AnyFunSuite
import scala.collection.mutable
import scala.concurrent.{Await, ExecutionContext, Future}
import scala.concurrent.duration._
import scala.jdk.CollectionConverters._
import scala.util.Random

/**
 * Snapshot rounds: the tables' Parquet files are zstd-compressed and recover to the oracle's State;
 * tables written uncompressed (before compression) still recover, also with compressed files added
 * after; the partitions of a round are encoded and written in parallel, outside the commit lock, so
 * writers commit while a round is writing.
 */
class SnapshotRoundSuite extends AnyFunSuite {
  private val spec = StateSpec("kv", "k STRING", "v STRING", 4, "replace")
  private val keys = 300

  /** The model: every update applied ("replace": the newest at or before t wins) and those waiting for U. */
  private final class Oracle {
    val applied = mutable.Map.empty[Int, mutable.TreeMap[Long, String]]
    var waiting = Vector.empty[(Int, Long, String)]
    def commit(updates: Seq[(Int, Long, String)], progress: Long): Unit = {
      val (ready, later) = (waiting ++ updates).partition(_._2 < progress)
      ready.foreach { case (k, t, v) => applied.getOrElseUpdate(k, mutable.TreeMap.empty)(t) = v }
      waiting = later
    }
    def latest(k: Int, t: Long): Option[(Long, String)] = applied.get(k).flatMap(_.rangeTo(t).lastOption)
  }

  /**
   * A durable State under `dir` as DurableStates owns one (its tables opened with `conf`); `tracked`:
   * it keeps delta chains (fullEvery 4), else every snapshot is full and no key is tracked between rounds.
   */
  private final class Owner(val dir: Path, conf: Configuration, tracked: Boolean = true, afterUpdates: Long = 0L) {
    private val tables = new OwnedTables(dir, conf, "snapshot-round-suite")
    val (log, snapshots, rejected) = (tables.log, tables.snapshots, tables.rejected)
    private val target = log.target(spec.partitions)
    val state = new State(spec)
    val recovered: Recovered =
      StateRecovery.replay(state, log, Some(snapshots), Some(rejected), trackChanges = tracked)
    val journal = new DeltaJournal(spec.name, log, target, rejected, recovered.nextSeq, recovered.version, tables.lease)
    state.attachJournal(journal)
    state.registerWriter("w")
    val snapshotter = new Snapshotter(SnapshotSource.local(state, journal), log, snapshots, retained = 100,
      fullEvery = if (tracked) 4 else 1, recovered.chains, afterUpdates)

    def commit(epoch: Long, updates: Seq[(Int, Long, String)], progress: Long): Unit = {
      val b = new UpdateBatch
      updates.foreach { case (k, t, v) => b.add(s"k$k".getBytes, t, v.getBytes) }
      val files = target.writeTask("w", epoch, 0, b)
      state.stage("w", epoch, 0, b)
      state.commitEpoch("w", epoch, progress, payload = files)
    }

    def close(): Unit = { tables.lease.release(); state.close() }
  }

  private def key(i: Int): Key = new Key(s"k$i".getBytes)

  /** Epoch `e`: `n` random updates at times in [e*1000, e*1000+999] (waiting until the next epoch's U), U = e*1000. */
  private def epoch(o: Owner, model: Oracle, rnd: Random, e: Long, n: Int): Unit = {
    val updates = Seq.fill(n)((rnd.nextInt(keys), e * 1000L + rnd.nextInt(1000), s"v$e-${rnd.nextInt(1 << 20)}"))
      .distinctBy(u => (u._1, u._2))
    o.commit(e, updates, e * 1000L)
    model.commit(updates, e * 1000L)
  }

  private def recover(dir: Path, conf: Configuration): (State, Recovered) = {
    val log = DeltaChangelog.open(new Path(dir, "changelog").toString, conf)
    val snapshots = SnapshotTable.open(new Path(dir, "snapshots").toString, conf)
    val s = new State(spec)
    (s, StateRecovery.replay(s, log, Some(snapshots), None))
  }

  /** The fetch answers below U are the model's, for every key. */
  private def assertOracleAnswers(model: Oracle, s: State): Unit = {
    assert(s.metrics.keys == model.applied.size)
    for (k <- 0 until keys; t <- 0L until s.updateProgress by 131) {
      (model.latest(k, t), s.fetchLatest(key(k), t)) match {
        case (Some((mt, mv)), FetchAnswer.Found(st, sv)) => assert(mt == st && mv == new String(sv), s"k$k at $t")
        case (None, FetchAnswer.Found(st, _)) => fail(s"k$k at $t: found $st, the model has none")
        case (Some(m), other) => fail(s"k$k at $t: the model has $m, the State answered $other")
        case (None, _) => ()
      }
    }
  }

  /** The codecs of every Parquet file of a table (read from the files' footers). */
  private def codecs(dir: Path, table: String, conf: Configuration): Set[String] = {
    val fs = dir.getFileSystem(conf)
    val files = fs.listFiles(new Path(dir, table), true)
    val out = mutable.Set.empty[String]
    while (files.hasNext) {
      val f = files.next().getPath
      if (f.getName.endsWith(".parquet") && !f.toString.contains("_delta_log")) {
        val reader = ParquetFileReader.open(HadoopInputFile.fromPath(f, conf))
        try reader.getFooter.getBlocks.asScala.foreach(_.getColumns.asScala.foreach(c => out += c.getCodec.name))
        finally reader.close()
      }
    }
    out.toSet
  }

  test("the snapshots and changelog tables are zstd-compressed Parquet; they recover to the oracle's State") {
    val conf = new Configuration()
    val dir = new Path(Files.createTempDirectory("snapshot-round-zstd-").toString)
    val o = new Owner(dir, conf)
    val model = new Oracle
    val rnd = new Random(3)
    (1L to 4L).foreach(e => epoch(o, model, rnd, e, n = 600))
    val full = o.snapshotter.round()
    assert(full.written == spec.partitions && full.deltas == 0 && full.entries == o.state.metrics.keys, full)
    (5L to 6L).foreach(e => epoch(o, model, rnd, e, n = 40))
    val delta = o.snapshotter.round()
    assert(delta.written == spec.partitions && delta.deltas == spec.partitions, delta)
    epoch(o, model, rnd, 7L, n = 40) // a changelog tail after the deltas
    assert(codecs(dir, "snapshots", conf) == Set("ZSTD"))
    assert(codecs(dir, "changelog", conf) == Set("ZSTD"))
    val (fresh, recovered) = recover(dir, conf)
    assert(recovered.chains.values.forall(_.links == 2) && recovered.dataFilesRead > 0)
    assertOracleAnswers(model, fresh)
    assert(fresh.metrics.pairs == o.state.metrics.pairs && fresh.metrics.updatesStaged == o.state.metrics.updatesStaged)
    fresh.close()
    o.close()
  }

  test("tables written uncompressed still recover, also with compressed snapshots and changelog files added after") {
    val old = new Configuration()
    old.set(KernelTables.CompressionKey, "UNCOMPRESSED") // as every table was written before compression
    val dir = new Path(Files.createTempDirectory("snapshot-round-legacy-").toString)
    val model = new Oracle
    val rnd = new Random(5)
    val first = new Owner(dir, old)
    (1L to 3L).foreach(e => epoch(first, model, rnd, e, n = 500))
    assert(first.snapshotter.round().written == spec.partitions)
    epoch(first, model, rnd, 4L, n = 50)
    first.close()
    assert(codecs(dir, "snapshots", old) == Set("UNCOMPRESSED") && codecs(dir, "changelog", old) == Set("UNCOMPRESSED"))

    val conf = new Configuration()
    val (fresh, _) = recover(dir, conf)
    assertOracleAnswers(model, fresh)
    fresh.close()
    // A new owner with today's writer continues the old tables: compressed files beside the old ones.
    val next = new Owner(dir, conf)
    (5L to 6L).foreach(e => epoch(next, model, rnd, e, n = 50))
    assert(next.snapshotter.round().deltas == spec.partitions)
    epoch(next, model, rnd, 7L, n = 50)
    assert(codecs(dir, "snapshots", conf) == Set("UNCOMPRESSED", "ZSTD"))
    assert(codecs(dir, "changelog", conf) == Set("UNCOMPRESSED", "ZSTD"))
    val (again, _) = recover(dir, conf)
    assertOracleAnswers(model, again)
    again.close()
    next.close()
  }

  test("a round writing its snapshots does not block writers: they commit while it writes, outside the lock") {
    val conf = new Configuration()
    val dir = new Path(Files.createTempDirectory("snapshot-round-writers-").toString)
    val o = new Owner(dir, conf)
    val model = new Oracle
    val rnd = new Random(9)
    (1L to 3L).foreach(e => epoch(o, model, rnd, e, n = 500))
    // Every partition's snapshot stops after its encoding, before its write, until the writer committed.
    val encoded = new CountDownLatch(2) // at least two partitions at once: the round runs them in parallel
    val committed = new CountDownLatch(1)
    o.snapshotter.beforeWrite = _ => { encoded.countDown(); committed.await(60, TimeUnit.SECONDS); () }
    val pool = Executors.newSingleThreadExecutor()
    implicit val ec: ExecutionContext = ExecutionContext.fromExecutor(pool)
    val round = Future(o.snapshotter.round())
    assert(encoded.await(60, TimeUnit.SECONDS), "two partitions encoded at once, waiting to write")
    // The writer commits two epochs while the round holds its encoded partitions.
    (4L to 5L).foreach(e => epoch(o, model, rnd, e, n = 100))
    assert(!round.isCompleted)
    committed.countDown()
    val r = Await.result(round, 2.minutes)
    pool.shutdown()
    assert(r.written == spec.partitions && r.captureMs <= r.snapshotMs, r)
    o.snapshotter.beforeWrite = _ => ()
    // The snapshots hold the state before those epochs; recovery replays them from the changelog.
    val (fresh, recovered) = recover(dir, conf)
    assert(recovered.dataFilesRead > 0)
    assertOracleAnswers(model, fresh)
    fresh.close()
    o.close()
  }

  test("without delta chains, a round's parallel passes stay full while another partition's pass tracks its keys") {
    val conf = new Configuration()
    val dir = new Path(Files.createTempDirectory("snapshot-round-untracked-").toString)
    val o = new Owner(dir, conf, tracked = false)
    val model = new Oracle
    val rnd = new Random(23)
    (1 to 3).foreach(e => epoch(o, model, rnd, e, 200))
    // A pass on a partition that does not track changes tracks for its own length: another partition's
    // pass running meanwhile must not take that for chain tracking (it would ask that partition for
    // changed keys it does not keep). Partition 0 tracking here stands for such a pass in flight.
    o.state.partition(0).trackChanges()
    val round =
      try o.snapshotter.round()
      finally o.state.cancelPreCopy(Seq(0))
    assert(round.written == 4 && round.deltas == 0, round)
    epoch(o, model, rnd, 4, 100)
    assert(o.snapshotter.round().deltas == 0)
    assert((0 until 4).forall(p => !o.state.partition(p).tracksChanges), "no pass left a partition tracking")
    val (fresh, _) = recover(dir, conf)
    assertOracleAnswers(model, fresh)
    o.close()
  }

  test("a round is due once a partition applied afterUpdates updates since its last snapshot, not before") {
    val conf = new Configuration()
    val dir = new Path(Files.createTempDirectory("snapshot-round-on-change-").toString)
    var o = new Owner(dir, conf, afterUpdates = 150)
    val model = new Oracle
    val rnd = new Random(29)
    // 4 partitions: 200 updates spread over them stay below 150 in each
    epoch(o, model, rnd, 1, 200)
    assert(!o.snapshotter.due && o.snapshotter.roundIfDue(SnapshotRound.Updates).isEmpty)
    // epoch 2's U applies epoch 1's updates and a partition passes 150 (it counts applied updates)
    (2 to 4).foreach(e => epoch(o, model, rnd, e, 300))
    assert(o.snapshotter.due)
    val round = o.snapshotter.roundIfDue(SnapshotRound.Updates)
    assert(round.exists(r => r.written == 4 && r.trigger == SnapshotRound.Updates), round)
    assert(!o.snapshotter.due, "the round took what was applied")
    o.snapshotter.round()
    assert(o.snapshotter.recentRounds.map(_.trigger) == Seq(SnapshotRound.Updates, SnapshotRound.Requested))
    // A check made while a commit holds the lock is judged at that commit's end: its round starts after it.
    (5 to 6).foreach(e => epoch(o, model, rnd, e, 800))
    val held = new java.util.concurrent.CountDownLatch(1)
    val release = new java.util.concurrent.CountDownLatch(1)
    val committing = new Thread(() => o.state.betweenCommits { held.countDown(); release.await() })
    committing.start()
    held.await()
    val checked =
      java.util.concurrent.CompletableFuture.supplyAsync(() => o.snapshotter.roundIfDue(SnapshotRound.Updates))
    Thread.sleep(300)
    assert(!checked.isDone, "the check waits for the commit")
    val released = System.currentTimeMillis()
    release.countDown()
    val afterCommit = checked.get(60, java.util.concurrent.TimeUnit.SECONDS)
    committing.join()
    assert(afterCommit.exists(r => r.written == 4 && r.startedMillis >= released), afterCommit)
    // While a bulk load commits, the background look leaves the round the load makes due to the load.
    (7 to 8).foreach(e => epoch(o, model, rnd, e, 800))
    assert(o.snapshotter.due)
    val loads = o.snapshotter.loading {
      assert(o.snapshotter.roundIfDue(SnapshotRound.Updates).isEmpty, "left to the load")
      o.snapshotter.roundIfDue(SnapshotRound.BulkLoad)
    }
    assert(loads.exists(r => r.written == 4 && r.trigger == SnapshotRound.BulkLoad), loads)
    // A recovered owner does not count what its recovery replayed as new (here more than 150 per partition).
    (9 to 10).foreach(e => epoch(o, model, rnd, e, 800))
    o.close()
    o = new Owner(dir, conf, afterUpdates = 150)
    assert((0 until 4).forall(p => o.state.partition(p).updatesApplied >= 150) && !o.snapshotter.due)
    val (fresh, _) = recover(dir, conf)
    assertOracleAnswers(model, fresh)
    o.close()
  }
}
