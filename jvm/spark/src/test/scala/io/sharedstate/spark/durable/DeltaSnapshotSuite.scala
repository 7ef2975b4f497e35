package io.sharedstate.spark.durable

import io.sharedstate.core.{FetchAnswer, Key, State, StateSpec, UpdateBatch}
import java.nio.file.Files
import java.util.concurrent.{CountDownLatch, Executors, TimeUnit}
import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
import org.apache.spark.sql.SparkSession
import org.scalatest.BeforeAndAfterAll
import org.scalatest.funsuite.AnyFunSuite
import scala.collection.mutable
import scala.concurrent.{Await, ExecutionContext, Future}
import scala.concurrent.duration._
import scala.jdk.CollectionConverters._
import scala.util.Random

/**
 * Delta snapshots: after a full snapshot, a partition's snapshots hold only the keys changed since
 * its previous one (counted against an oracle of the applied updates); recovery from a chain (full,
 * then deltas in order, then the changelog after the newest) rebuilds the live State exactly, also
 * when compaction trimmed keys' histories between snapshots, when a full snapshot cut the chain,
 * after a restart continued a chain, and after retention dropped old chains.
 */
class DeltaSnapshotSuite extends AnyFunSuite with BeforeAndAfterAll {
  private val spec = StateSpec("kv", "k STRING", "v STRING", 2, "replace")
  private val conf = ForkFreeRawLocalFileSystem.configure(new Configuration()) // as the plugin's own are
  private val keys = 200
  private var sparkStarted = false
  // Only the cluster owner's test needs Spark (its session's conf); started on first use.
  private lazy val spark = {
    sparkStarted = true
    SparkSession.builder().master("local[1]").appName("delta-snapshots").config("spark.ui.enabled", "false")
      .config("spark.sql.shuffle.partitions", "1")
      .config("spark.sql.extensions", "io.delta.sql.DeltaSparkSessionExtension")
      .config("spark.sql.catalog.spark_catalog", "org.apache.spark.sql.delta.catalog.DeltaCatalog").getOrCreate()
  }
  override def afterAll(): Unit = if (sparkStarted) spark.stop()

  private def key(i: Int): Key = new Key(s"k$i".getBytes)

  /**
   * The model: every update applied (key -> time -> value, "replace": the newest at or before t wins),
   * the updates still waiting for U, and the keys applied since the last snapshot round.
   */
  private final class Oracle {
    val applied = mutable.Map.empty[Int, mutable.TreeMap[Long, String]]
    var waiting = Vector.empty[(Int, Long, String)]
    val changedSinceRound = mutable.Set.empty[Int]
    def commit(updates: Seq[(Int, Long, String)], progress: Long): Unit = {
      val (ready, later) = (waiting ++ updates).partition(_._2 < progress)
      ready.foreach { case (k, t, v) =>
        applied.getOrElseUpdate(k, mutable.TreeMap.empty)(t) = v; changedSinceRound += k
      }
      waiting = later
    }
    def latest(k: Int, t: Long): Option[(Long, String)] = applied.get(k).flatMap(_.rangeTo(t).lastOption)
    def changedIn(partition: Int): Int = changedSinceRound.count(k => key(k).partition(spec.partitions) == partition)
  }

  /** A durable State owned as DurableStates owns one: recovered with change tracking, snapshotted by a Snapshotter. */
  private final class Owner(val dir: Path, fullEvery: Int, retained: Int = 100, legacyTable: Boolean = false) {
    // legacy: as created before the base_id/parent_id columns existed
    private val tables =
      new OwnedTables(dir, conf, "delta-snapshot-suite", Option.when(legacyTable)(SnapshotTable.withoutChains))
    val (log, snapshots, rejected) = (tables.log, tables.snapshots, tables.rejected)
    val target: ChangelogTarget = log.target(spec.partitions)
    val lease: OwnerLease = tables.lease
    val state = new State(spec)
    val recovered: Recovered = StateRecovery.replay(state, log, Some(snapshots), Some(rejected), trackChanges = true)
    val journal = new DeltaJournal(spec.name, log, target, rejected, recovered.nextSeq, recovered.version, lease)
    state.attachJournal(journal)
    state.registerWriter("w")
    val snapshotter = new Snapshotter(SnapshotSource.local(state, journal), log,
      snapshots, retained, fullEvery, recovered.chains)

    def commit(epoch: Long, updates: Seq[(Int, Long, String)], progress: Long): Unit = {
      val b = new UpdateBatch
      updates.foreach { case (k, t, v) => b.add(s"k$k".getBytes, t, v.getBytes) }
      val files = target.writeTask("w", epoch, 0, b)
      state.stage("w", epoch, 0, b)
      state.commitEpoch("w", epoch, progress, payload = files)
    }

    def close(): Unit = { lease.release(); state.close() }
  }

  /** Epoch `e`: `n` random updates at times in [e*1000, e*1000+999] (waiting until the next epoch's U), U = e*1000. */
  private def epoch(o: Owner, model: Oracle, rnd: Random, e: Long, n: Int, keyRange: Int = keys): Unit = {
    val updates = Seq.fill(n)((rnd.nextInt(keyRange), e * 1000L + rnd.nextInt(1000), s"v$e-${rnd.nextInt(1 << 20)}"))
      .distinctBy(u => (u._1, u._2))
    o.commit(e, updates, e * 1000L)
    model.commit(updates, e * 1000L)
  }

  private def recover(
      dir: Path, pick: Option[(SnapshotTable, Int) => Seq[StoredSnapshot]] = None): (State, Recovered) = {
    val log = DeltaChangelog.openOrCreate(new Path(dir, "changelog").toString, conf)
    val snapshots = SnapshotTable.openOrCreate(new Path(dir, "snapshots").toString, conf)
    val s = new State(spec)
    val r = pick.fold(StateRecovery.replay(s, log, Some(snapshots), None))(p =>
      StateRecovery.replay(s, log, Some(snapshots), None, pick = p))
    (s, r)
  }

  /** Every key's stored pairs and the waiting updates are the live State's, pair for pair. */
  private def assertSameContents(live: State, other: State): Unit = {
    assert(other.metrics.keys == live.metrics.keys && other.metrics.updatesStaged == live.metrics.updatesStaged)
    (0 until keys).foreach { k =>
      val (a, b) = (live.partitionOf(key(k)).get(key(k)), other.partitionOf(key(k)).get(key(k)))
      assert((a == null) == (b == null), s"k$k")
      if (a != null) {
        assert(a.size == b.size, s"k$k: ${a.size} pairs live, ${b.size} recovered")
        (0 until a.size).foreach(i =>
          assert(a.timeAt(i) == b.timeAt(i) && a.valueAt(i).sameElements(b.valueAt(i)), s"k$k pair $i"))
      }
    }
  }

  /** The fetch answers from `from` up to U are the model's. */
  private def assertOracleAnswers(model: Oracle, s: State, from: Long, until: Long): Unit = {
    assert(s.updateProgress <= until && s.updateProgress > from)
    for (k <- 0 until keys; t <- from until s.updateProgress by 97) {
      (model.latest(k, t), s.fetchLatest(key(k), t)) match {
        case (Some((mt, mv)), FetchAnswer.Found(st, sv)) => assert(mt == st && mv == new String(sv), s"k$k at $t")
        case (None, FetchAnswer.Found(st, _)) => fail(s"k$k at $t: found $st, the model has none")
        case (Some(m), other) => fail(s"k$k at $t: the model has $m, the State answered $other")
        case (None, _) => ()
      }
    }
  }

  private def kinds(t: SnapshotTable, p: Int): Seq[String] = t.links(p).reverse.map(l => if (l.isDelta) "D" else "F")

  test(
    "delta snapshots hold only the keys changed since the previous snapshot; a chain of them recovers the live State") {
    val dir = new Path(Files.createTempDirectory("delta-snapshots-").toString)
    val o = new Owner(dir, fullEvery = 8)
    val model = new Oracle
    val rnd = new Random(7)
    (1L to 3L).foreach(e => epoch(o, model, rnd, e, n = 400))
    epoch(o, model, rnd, 4L, n = 6) // what waits for U at the full snapshot is applied in the first delta's round
    val full = o.snapshotter.round()
    assert(full.written == 2 && full.deltas == 0 && full.entries == o.state.metrics.keys)
    model.changedSinceRound.clear()
    var e = 5L
    (1 to 4).foreach { r =>
      // A few keys per round (an overwrite of already-present keys mostly), the rest untouched.
      (0 until 2).foreach { _ => epoch(o, model, rnd, e, n = 6); e += 1 }
      val round = o.snapshotter.round()
      val expected = (0 until spec.partitions).map(model.changedIn).sum
      assert(round.written == 2 && round.deltas == 2, s"round $r: $round")
      assert(round.entries == expected, s"round $r: the deltas hold ${round.entries} entries; $expected keys changed")
      assert(expected > 0 && expected < 20 && round.bytes * 10 < full.bytes, s"round $r: $round vs the full $full")
      model.changedSinceRound.clear()
      (0 until spec.partitions).foreach(p => assert(kinds(o.snapshots, p) == "F" +: Seq.fill(r)("D")))
      val (fresh, recovered) = recover(dir)
      assert(recovered.dataFilesRead == 0, "nothing after the newest delta")
      assertSameContents(o.state, fresh)
      assertOracleAnswers(model, fresh, 0L, e * 1000L)
      fresh.close()
    }
    // The changelog tail after the newest delta replays on top of the chain.
    epoch(o, model, rnd, e, n = 50); epoch(o, model, rnd, e + 1, n = 50)
    val (fresh, recovered) = recover(dir)
    assert(recovered.dataFilesRead > 0 && recovered.chains.values.forall(_.links == 5))
    assertSameContents(o.state, fresh)
    assertOracleAnswers(model, fresh, 0L, (e + 2) * 1000L)
    fresh.close()
    o.close()
  }

  test(
    "compaction between snapshots: a delta carries each trimmed key's whole history, recovery matches pair for pair") {
    val dir = new Path(Files.createTempDirectory("delta-compaction-").toString)
    val o = new Owner(dir, fullEvery = 8)
    val model = new Oracle
    val rnd = new Random(11)
    o.state.registerReader("r") // F: compaction keeps the newest pair at or below min(F, U) and every pair above
    (1L to 5L).foreach(e => epoch(o, model, rnd, e, n = 500))
    epoch(o, model, rnd, 6L, n = 3)
    o.snapshotter.round()
    model.changedSinceRound.clear()
    val pairsBefore = o.state.metrics.pairs
    o.state.reportFetchProgress("r", 5500L)
    val examined = o.state.compactionStep(10000)
    assert(examined > 0 && o.state.metrics.pairs < pairsBefore, "compaction dropped pairs")
    val round = o.snapshotter.round() // no commit since the full snapshot: nothing to store, the keys wait
    assert(round.written == 0)
    epoch(o, model, rnd, 7L, n = 3)
    val delta = o.snapshotter.round()
    assert(
      delta.deltas == 2 && delta.entries > model.changedSinceRound.size,
      s"the delta holds the compacted keys too: $delta, ${model.changedSinceRound.size} keys updated"
    )
    val (fresh, _) = recover(dir)
    assert(fresh.metrics.pairs == o.state.metrics.pairs)
    assertSameContents(o.state, fresh)
    assertOracleAnswers(model, fresh, 5500L, 8000L)
    fresh.close()
    o.close()
  }

  test("a full snapshot cuts the chain every fullEvery links; a restarted owner continues its restored chain") {
    val dir = new Path(Files.createTempDirectory("delta-chains-").toString)
    val model = new Oracle
    val rnd = new Random(3)
    var o = new Owner(dir, fullEvery = 3)
    var e = 1L
    // Every key in the first snapshot, then a few per round: the deltas stay smaller than their full snapshot.
    (1 to 4).foreach { r =>
      if (r == 1) { epoch(o, model, rnd, e, n = 2000); e += 1 } // applied by the next epoch's commit
      epoch(o, model, rnd, e, n = 30); e += 1; o.snapshotter.round()
    }
    (0 until spec.partitions).foreach(p => assert(kinds(o.snapshots, p) == Seq("F", "D", "D", "F")))
    // Restart: the new owner recovers F+D (after one more round) and its next snapshots extend that chain.
    epoch(o, model, rnd, e, n = 30); e += 1; o.snapshotter.round()
    o.close()
    o = new Owner(dir, fullEvery = 3)
    assert(o.recovered.chains.values.forall(c => c.links == 2))
    assertSameContents(recover(dir)._1, o.state)
    epoch(o, model, rnd, e, n = 30); e += 1
    val round = o.snapshotter.round()
    assert(round.deltas == 2, s"the restarted owner's first snapshots are deltas on the restored chain: $round")
    epoch(o, model, rnd, e, n = 30); e += 1
    assert(o.snapshotter.round().deltas == 0, "the chain had 3 links: a full snapshot")
    (0 until spec.partitions).foreach(p => assert(kinds(o.snapshots, p) == Seq("F", "D", "D", "F", "D", "D", "F")))
    epoch(o, model, rnd, e, n = 30); e += 1
    val (fresh, _) = recover(dir)
    assertSameContents(o.state, fresh)
    assertOracleAnswers(model, fresh, 0L, e * 1000L)
    // An older restore point (the first chain's first delta, at U = 3000) still recovers, through the changelog after it.
    val (older, _) = recover(dir, Some((t: SnapshotTable, p: Int) => t.chainAtOrBefore(p, 3000L)))
    assert(older.metrics.keys == o.state.metrics.keys)
    assertOracleAnswers(model, older, 0L, e * 1000L)
    Seq(fresh, older).foreach(_.close())
    o.close()
  }

  test("retention keeps the newest restore points with their chain, drops older chains, and recovery still matches") {
    val dir = new Path(Files.createTempDirectory("delta-retention-").toString)
    val o = new Owner(dir, fullEvery = 3, retained = 2)
    val model = new Oracle
    val rnd = new Random(5)
    var e = 1L
    val rounds = (1 to 7).map { r =>
      if (r == 1) { epoch(o, model, rnd, e, n = 2000); e += 1 } // every key in the first full snapshot
      epoch(o, model, rnd, e, n = 30); e += 1; o.snapshotter.round()
    }
    // Chains F D D | F D D | F: the newest two restore points are F(7) and D(6), whose chain starts at F(4).
    assert(!rounds(3).snapshotsRemoved && rounds(4).snapshotsRemoved)
    (0 until spec.partitions).foreach { p =>
      assert(kinds(o.snapshots, p) == Seq("F", "D", "D", "F"), s"partition $p")
    }
    // The changelog is trimmed up to F(4) once (round 5); while that chain is kept the delete is not repeated.
    assert(rounds.map(_.changelogTrimmed) == Seq(false, true, false, false, true, false, false))
    epoch(o, model, rnd, e, n = 40); e += 1
    val (fresh, _) = recover(dir)
    assertSameContents(o.state, fresh)
    assertOracleAnswers(model, fresh, 0L, e * 1000L)
    // The oldest kept snapshot (a full one) is a restore point too: the changelog after it is all there.
    val (oldest, _) = recover(dir, Some((t: SnapshotTable, p: Int) => t.chainAtOrBefore(p, t.oldestProgress(p).get)))
    assertSameContents(o.state, oldest)
    Seq(fresh, oldest).foreach(_.close())
    o.close()
  }

  test(
    "older snapshots go by one commit of remove actions, each file decided from its footer; older versions keep them") {
    val path = Files.createTempDirectory("snapshot-remove-").resolve("snapshots").toString
    val t = SnapshotTable.openOrCreate(path, conf, chunkBytes = 64)
    val chunk = Array.tabulate[Byte](200)(_.toByte) // 4 chunk rows per snapshot
    for (p <- 0 until 3; id <- 1L to 4L) t.write(p, id, id * 10, id, chunk)
    val engine = KernelTables.engine(conf)
    val table = io.delta.kernel.Table.forPath(engine, path)
    def files(version: Long) = KernelTables.scanFiles(engine, table.getSnapshotAsOfVersion(engine, version), None) {
      f => io.delta.kernel.internal.InternalScanFileUtils.getAddFileStatus(f).getPath
    }
    val before = table.getLatestSnapshot(engine).getVersion
    // Each snapshot is a file of its own whose footer names its id.
    assert(files(before).map(SnapshotFooters.idRange(_, conf)).map(_.get).count { case (lo, hi) => lo == hi } == 12)
    val removed = t.removeOlderThan(Map(0 -> 3L, 1 -> 2L)) // partition 2: not named, kept whole
    assert(removed.count == 3 && removed.bytes > 0, removed)
    assert(t.ids(0) == Seq(4L, 3L) && t.ids(1) == Seq(4L, 3L, 2L) && t.ids(2) == Seq(4L, 3L, 2L, 1L))
    assert(t.latest(0).map(s => (s.id, s.bytes.toSeq)) == Some((4L, chunk.toSeq)))
    // One new version, writing only the log: the removed files stay on disk, and the version before reads them.
    val after = table.getLatestSnapshot(engine).getVersion
    assert(after == before + 1 && files(after).size == 9 && files(before).size == 12)
    assert(files(before).forall(f => new java.io.File(new Path(f).toUri.getPath).exists()))
    // Nothing older left: no commit.
    assert(t.removeOlderThan(Map(0 -> 3L, 1 -> 2L)).count == 0 && table.getLatestSnapshot(engine).getVersion == after)
  }

  test("the changelog trim finds its files outside the commit lock: writers commit meanwhile; it removes only those") {
    val dir = new Path(Files.createTempDirectory("delta-trim-").toString)
    val o = new Owner(dir, fullEvery = 1, retained = 1)
    val model = new Oracle
    val rnd = new Random(17)
    (1L to 3L).foreach(e => epoch(o, model, rnd, e, n = 300))
    // The round's trim stops once it has found its files, until the writer committed two more epochs.
    val planned = new CountDownLatch(1)
    val proceed = new CountDownLatch(1)
    o.snapshotter.beforeTrim = () => { planned.countDown(); proceed.await(60, TimeUnit.SECONDS); () }
    val pool = Executors.newFixedThreadPool(2)
    implicit val ec: ExecutionContext = ExecutionContext.fromExecutor(pool)
    val round = Future(o.snapshotter.round())
    assert(planned.await(60, TimeUnit.SECONDS), "the trim found its files")
    Await.result(Future((4L to 5L).foreach(e => epoch(o, model, rnd, e, n = 100))), 60.seconds)
    assert(!round.isCompleted)
    proceed.countDown()
    val r = Await.result(round, 2.minutes)
    pool.shutdown()
    o.snapshotter.beforeTrim = () => ()
    assert(r.written == spec.partitions && r.changelogTrimmed, r)
    // The snapshot holds epochs 1-3: their updates are gone from the changelog, 4 and 5 stay, and the
    // journal keeps every commit.
    (0 until spec.partitions).foreach { p =>
      assert(o.log.readPartition(p).map(_.epoch).toSet == Set(4L, 5L), s"partition $p")
    }
    val journal = o.log.readPartition(ChangelogSchema.JournalPartition)
    assert(journal.filter(_.event == ChangelogSchema.Events.Commit).map(_.epoch).toSet == (1L to 5L).toSet)
    val latest = o.log.latestVersion
    assert(o.log.filesAddedAfter(latest - 1, latest).contains(Map.empty), "the trim's commit writes the log only")
    assert(o.log.trimmedThrough().keySet == (0 until spec.partitions).toSet)
    val (fresh, _) = recover(dir)
    assertSameContents(o.state, fresh)
    assertOracleAnswers(model, fresh, 0L, 6000L)
    fresh.close()
    o.close()
  }

  test(
    "a reader's snapshot read racing the owner's rounds and trims replays as of before them; its follower reads every file") {
    val dir = new Path(Files.createTempDirectory("delta-reader-race-").toString)
    val o = new Owner(dir, fullEvery = 1, retained = 1)
    val model = new Oracle
    val rnd = new Random(23)
    (1L to 3L).foreach(e => epoch(o, model, rnd, e, n = 300))
    o.snapshotter.round()
    epoch(o, model, rnd, 4L, n = 100)
    // Another application's read: it has read the snapshots of round 1 when the owner commits epoch 5,
    // takes round 2 (removing round 1's snapshots, trimming the changelog behind round 2's), commits
    // epoch 6 and takes round 3, whose trim removes epoch 6's files too.
    val log = DeltaChangelog.openOrCreate(new Path(dir, "changelog").toString, conf)
    val snapshots = SnapshotTable.openOrCreate(new Path(dir, "snapshots").toString, conf)
    val reader = new State(spec)
    val raced = mutable.ArrayBuffer.empty[SnapshotRound]
    val r = StateRecovery.replay(
      reader,
      log,
      Some(snapshots),
      None,
      readsOwnersTables = true,
      afterSnapshotsRead = () =>
        (5L to 6L).foreach { e => epoch(o, model, rnd, e, n = 100); raced += o.snapshotter.round() }
    )
    assert(raced.forall(round => round.snapshotsRemoved && round.changelogTrimmed), raced)
    assert(r.version < log.latestVersion, "as of a version before the trims")
    assertOracleAnswers(model, reader, 0L, 6000L) // epoch 5's U
    // Its follower steps over the second trim: epoch 6's files, trimmed before it read them, are read.
    new StateFollower(reader, log, r, intervalMs = 0L).catchUp()
    assertSameContents(o.state, reader)
    assertOracleAnswers(model, reader, 0L, 7000L)
    // The owner's own recovery never walks back (nothing raced it here: it recovers the latest).
    val (fresh, recovered) = recover(dir)
    assert(recovered.version == log.latestVersion)
    assertSameContents(o.state, fresh)
    Seq(reader, fresh).foreach(_.close())
    o.close()
  }

  test("VACUUM deletes from disk the files retention removed once old enough; only those; recovery still matches") {
    val dir = new Path(Files.createTempDirectory("delta-vacuum-").toString)
    val o = new Owner(dir, fullEvery = 1, retained = 1)
    val model = new Oracle
    val rnd = new Random(31)
    (1L to 4L).foreach { e => epoch(o, model, rnd, e, n = 200); o.snapshotter.round() }
    epoch(o, model, rnd, 5L, n = 50)
    val engine = KernelTables.engine(conf)
    def onDisk(table: String): Set[String] = {
      val root = java.nio.file.Paths.get(dir.toUri.getPath, table)
      val walk = Files.walk(root)
      try walk.iterator().asScala.filter(f => f.toString.endsWith(".parquet") && !f.toString.contains("_delta_log"))
          .map(_.getFileName.toString).toSet
      finally walk.close()
    }
    def live(table: String): Set[String] = {
      val t = io.delta.kernel.Table.forPath(engine, new Path(dir, table).toString)
      KernelTables.scanFiles(engine, t.getLatestSnapshot(engine), None) { f =>
        DeltaChangelog.fileName(io.delta.kernel.internal.InternalScanFileUtils.getAddFileStatus(f).getPath)
      }.toSet
    }
    val tables = Seq("changelog", "snapshots")
    tables.foreach { t => assert(live(t).subsetOf(onDisk(t)) && onDisk(t).size > live(t).size, t) }
    // Removed less than an hour ago: kept.
    val before = tables.map(t => t -> onDisk(t)).toMap
    tables.foreach(t => TableVacuum.run(spark, new Path(dir, t).toString, retentionMs = 3600000L))
    tables.foreach(t => assert(onDisk(t) == before(t), t))
    // With no retention: exactly the live files stay.
    tables.foreach(t => TableVacuum.run(spark, new Path(dir, t).toString, retentionMs = 0L))
    tables.foreach(t => assert(onDisk(t) == live(t), t))
    // The owner goes on committing, and a recovery from what is left equals it.
    epoch(o, model, rnd, 6L, n = 50)
    val (fresh, _) = recover(dir)
    assertSameContents(o.state, fresh)
    assertOracleAnswers(model, fresh, 0L, 7000L)
    fresh.close()
    o.close()
  }

  test("a snapshots table from before base_id/parent_id takes full snapshots only and still recovers") {
    val dir = new Path(Files.createTempDirectory("delta-legacy-").toString)
    val o = new Owner(dir, fullEvery = 8, legacyTable = true)
    assert(!o.snapshots.recordsChains)
    val model = new Oracle
    val rnd = new Random(9)
    (1L to 3L).foreach { e => epoch(o, model, rnd, e, n = 100); assert(o.snapshotter.round().deltas == 0) }
    epoch(o, model, rnd, 4L, n = 10)
    val (fresh, _) = recover(dir)
    assertSameContents(o.state, fresh)
    assertOracleAnswers(model, fresh, 0L, 5000L)
    fresh.close()
    o.close()
  }

  test(
    "a cluster owner's rounds (DurableStates.attachCluster) take deltas as spark.sharedstate.snapshot.fullEvery says") {
    val dir = new Path(Files.createTempDirectory("delta-cluster-owner-").toString)
    val o = new Owner(dir, fullEvery = 1)
    val asked = mutable.ArrayBuffer.empty[(Int, Boolean)]
    // The rounds of a cluster State encode through its controller; here the owner's local source stands
    // in for it, recording what each round asks for (a cluster source says it takes deltas).
    val local = SnapshotSource.local(o.state, o.journal)
    val source = new SnapshotSource {
      override def partitionCount: Int = local.partitionCount
      override def tracksChanges: Boolean = true
      override def encode(p: Int, delta: Boolean, parent: Long): EncodedPartition =
        asked.synchronized { asked += (p -> delta); local.encode(p, delta, parent) }
      override def betweenCommits[T](body: => T): T = local.betweenCommits(body)
      override def checkHealthy(): Unit = local.checkHealthy()
    }
    val session = spark.newSession()
    session.conf.set("spark.sharedstate.snapshot.fullEvery", "2")
    session.conf.set("spark.sharedstate.snapshot.interval", "0")
    session.conf.set("spark.sharedstate.snapshot.retained", "100")
    val model = new Oracle
    val rnd = new Random(41)
    DurableStates.attachCluster(session, spec.name,
      DurableTables(dir.toString, o.log, o.snapshots, o.target, o.rejected, o.lease), source)
    try {
      val rounds = (1 to 3).map { e =>
        epoch(o, model, rnd, e, 60)
        DurableStates.snapshot(spec.name)
      }
      // fullEvery = 2: full, delta, full (the chain is cut at two links)
      assert(rounds.map(_.deltas) == Seq(0, 2, 0), rounds)
      assert(asked.groupBy(_._1).values.forall(_.map(_._2).toSeq == Seq(false, true, false)), asked)
      val (recovered, _) = recover(dir)
      assertSameContents(o.state, recovered)
    } finally { DurableStates.forget(spec.name); o.close() }
  }
}
