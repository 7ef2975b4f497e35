package io.sharedstate.spark.durable

import io.delta.tables.DeltaTable
import io.sharedstate.core.{FetchAnswer, Key, SharedStateException, State, StateRegistry, StateSpec, UpdateBatch}
import java.nio.file.{Files, Path => JPath}
import org.apache.commons.io.FileUtils
import org.apache.hadoop.fs.{FileSystem, Path}
import org.apache.spark.sql.SparkSession
import org.scalatest.BeforeAndAfterAll
import org.scalatest.funsuite.AnyFunSuite

/**
 * A durable State whose metadata exists but a table (or, after retention trimmed the changelog, the
 * snapshots it relied on) is gone does not open, through the one open sequence (DurableStates), with
 * an error naming the table and what it should hold; nothing is re-created over it. A new State
 * still creates every table, and an intact one reopens with what it had (the live State is the oracle).
 */
class StateIntegritySuite extends AnyFunSuite with BeforeAndAfterAll {
  private lazy val spark = SparkSession.builder().master("local[1]").appName("state-integrity")
    .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "1")
    .config("spark.sql.extensions", "io.delta.sql.DeltaSparkSessionExtension")
    .config("spark.sql.catalog.spark_catalog", "org.apache.spark.sql.delta.catalog.DeltaCatalog")
    .config("spark.sharedstate.snapshot.interval", "0").config("spark.sharedstate.snapshot.retained", "1")
    .getOrCreate()
  override def afterAll(): Unit = spark.stop()

  private def spec(name: String) = StateSpec(name, "k STRING", "v STRING", 2, "replace")

  /** A State created under a fresh root and written (3 epochs of 10 keys), then let go in this application. */
  private final class Written(name: String, snapshot: Boolean = false) {
    val root: JPath = Files.createTempDirectory("integrity-")
    val dir: JPath = root.resolve(name)
    private val registry = new StateRegistry
    val live: State = DurableStates.create(spark, spec(name), root.toString, registry)
    private val target = DurableStates.target(name).get
    live.registerWriter("w")
    (0L until 3L).foreach { e =>
      val b = new UpdateBatch
      (0 until 10).foreach(i => b.add(s"k$i".getBytes, e * 100L + i, s"v$e-$i".getBytes))
      val files = target.writeTask("w", e, 0, b)
      live.stage("w", e, 0, b)
      live.commitEpoch("w", e, e * 100L + 50L, payload = files)
    }
    val round: Option[SnapshotRound] = Option.when(snapshot)(DurableStates.snapshot(name))
    DurableStates.forget(name)
    registry.drop(name)

    def reopen(): State = DurableStates.open(spark, name, root.toString, new StateRegistry).get
    // As DurableStates names it: under the qualified root.
    def table(t: String): String = {
      val qualified = FileSystem.getLocal(spark.sessionState.newHadoopConf()).makeQualified(new Path(root.toString))
      new Path(new Path(qualified, name), t).toString
    }
    def openFails(): SharedStateException = {
      val e = intercept[SharedStateException](reopen())
      DurableStates.forget(name)
      e
    }
  }

  private def answers(s: State): Seq[FetchAnswer] =
    for (k <- 0 until 10; t <- 0L to 300L by 37) yield s.fetchLatest(new Key(s"k$k".getBytes), t)

  private def sameAnswers(a: Seq[FetchAnswer], b: Seq[FetchAnswer]): Boolean = a.zip(b).forall {
    case (FetchAnswer.Found(t1, v1), FetchAnswer.Found(t2, v2)) => t1 == t2 && v1.sameElements(v2)
    case (x, y) => x == y
  } && a.size == b.size

  private def reopenedHolds(w: Written): Unit = {
    val expected = answers(w.live)
    val s = w.reopen()
    try assert(sameAnswers(expected, answers(s)) && expected.exists(_.isInstanceOf[FetchAnswer.Found]))
    finally { DurableStates.forget(s.name); s.close() }
  }

  test("a new State creates every table, the metadata last; intact, it reopens with what it had") {
    val w = new Written("fresh")
    Seq("changelog", "snapshots", "rejected", "metadata").foreach(t =>
      assert(Files.isDirectory(w.dir.resolve(t).resolve("_delta_log")), t))
    reopenedHolds(w)
  }

  test("a deleted changelog (directory, or its _delta_log) fails the open naming it; nothing is re-created") {
    Seq("changelog", "changelog/_delta_log").foreach { deleted =>
      val w = new Written(s"lost_${deleted.length}")
      FileUtils.deleteDirectory(w.dir.resolve(deleted).toFile)
      val e = w.openFails()
      assert(
        e.getMessage.contains(s"its changelog table at ${w.table("changelog")} is missing") &&
          e.getMessage.contains("every update and the journal"),
        e.getMessage
      )
      assert(!Files.exists(w.dir.resolve("changelog/_delta_log")), s"$deleted: no table re-created over it")
      // Creating it again (same definition) is the same open: it fails the same way.
      val again = intercept[SharedStateException](
        DurableStates.create(spark, spec(s"lost_${deleted.length}"), w.root.toString, new StateRegistry))
      assert(again.getMessage.contains("changelog table") && again.getMessage.contains("is missing"))
    }
  }

  test("a deleted snapshots or rejected table fails the open naming it") {
    Seq("snapshots", "rejected").foreach { t =>
      val w = new Written(s"no_$t", snapshot = true)
      FileUtils.deleteDirectory(w.dir.resolve(t).toFile)
      val e = w.openFails()
      assert(e.getMessage.contains(s"its $t table at ${w.table(t)} is missing"), e.getMessage)
      assert(!Files.exists(w.dir.resolve(t)), s"$t is not re-created")
    }
  }

  test("snapshots emptied after retention trimmed the changelog behind them: the open fails naming them") {
    val w = new Written("trimmed", snapshot = true)
    assert(w.round.exists(r => r.written == 2 && r.changelogTrimmed), w.round)
    reopenedHolds(w) // the trimmed changelog plus the kept snapshots still hold everything
    DeltaTable.forPath(spark, w.table("snapshots")).delete()
    val e = w.openFails()
    assert(
      e.getMessage.contains("retention trimmed the changelog") &&
        e.getMessage.contains(s"the snapshots table at ${w.table("snapshots")} has no complete snapshot of partition"),
      e.getMessage
    )
  }

  test("a changelog whose rows were deleted, or replaced by an empty one under kept snapshots, fails the open") {
    val emptied = new Written("emptied")
    DeltaTable.forPath(spark, emptied.table("changelog")).delete()
    assert(emptied.openFails().getMessage.contains("holds no journal rows"))

    val replaced = new Written("replaced", snapshot = true)
    FileUtils.deleteDirectory(replaced.dir.resolve("changelog").toFile)
    DeltaChangelog.openOrCreate(replaced.table("changelog"), spark.sessionState.newHadoopConf()) // as the old open did
    val e = replaced.openFails()
    assert(e.getMessage.contains("the changelog was replaced or emptied after the snapshots were taken"), e.getMessage)
  }
}
