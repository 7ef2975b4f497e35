package io.sharedstate.spark.fetch.batch

import io.sharedstate.spark.cluster.{Coordinator, StateController}

import io.sharedstate.core.{SharedStateException, StateSpec}
import java.nio.file.Files
import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
import org.scalatest.funsuite.AnyFunSuite

class BatchBoundLogSuite extends AnyFunSuite {
  private def dir(): Path = new Path(Files.createTempDirectory("bounds").toUri.toString, "fetch-bounds")

  test("the first recorded bound of a batch wins, also for a new driver reading the same directory") {
    val d = dir()
    val log = new BatchBoundLog(d, new Configuration())
    assert(log.get(3) === None)
    assert(log.getOrAdd(3, BatchBound(25L, -7L)) === BatchBound(25L, -7L))
    assert(log.getOrAdd(3, fail("a recorded batch does not compute its bound again")) === BatchBound(25L, -7L))
    val restarted = new BatchBoundLog(d, new Configuration())
    assert(restarted.get(3) === Some(BatchBound(25L, -7L)))
    assert(restarted.getOrAdd(3, BatchBound(100L, 50L)) === BatchBound(25L, -7L))
    assert(restarted.getOrAdd(4, BatchBound(100L, Long.MinValue)) === BatchBound(100L, Long.MinValue))
    assert(restarted.latest === Some(4L))
  }

  test("forgetting old batches keeps the newer ones") {
    val log = new BatchBoundLog(dir(), new Configuration())
    (0L until 12L).foreach(b => log.getOrAdd(b, BatchBound(b * 10, b)))
    log.forgetBefore(4)
    log.forget(7)
    assert((0L until 12L).filter(b => log.get(b).isDefined) === Seq(4L, 5L, 6L, 8L, 9L, 10L, 11L))
    assert(log.get(11) === Some(BatchBound(110L, 11L)))
  }

  private def uf(b: BatchBound): (Long, Long) = (b.u, b.f)

  // A fresh State with the reader of (query, join) at F = 30 and the join's bound log registered.
  private def withJoin(name: String, query: String, join: String)(body: (
          StateController, String, Path) => Unit): Unit = {
    val coordinator = Coordinator.get
    if (coordinator.names.contains(name)) coordinator.drop(name)
    val state = coordinator.create(StateSpec(name, "k BIGINT", "v BIGINT", 1, "replace"))
    val reader = FetchJoinProgress.readerId(query, join)
    state.registerReader(reader)
    state.reportFetchProgress(reader, 30L)
    val d = dir()
    BatchBounds.register(query, join, d.getParent.toString, new Configuration())
    try body(state, reader, d)
    finally coordinator.drop(name)
  }

  test("BatchBounds records a registered join's live U and F in its log before answering, once per batch") {
    val name = "bounds_suite"
    withJoin(name, "q-suite", "join-a") { (state, reader, d) =>
      val first = BatchBounds.onDriver(BatchBounds.key("q-suite", "join-a", 9), name)
      assert(uf(first) === (state.updateProgress, 30L))
      state.reportFetchProgress(reader, 60L)
      assert(BatchBounds.onDriver(BatchBounds.key("q-suite", "join-a", 9), name) === first, "fixed for the batch")
      assert(new BatchBoundLog(d, new Configuration()).get(9) === Some(first.copy(waitingDir = null)))
      new WaitingEventFiles(new Path(first.waitingDir), new Configuration()).writer(9, 0, 1).close() // batch 9's one task
      assert(BatchBounds.onDriver(BatchBounds.key("q-suite", "join-a", 10), name).f === 60L,
        "the next batch reads F again")
      // A batch recorded by an earlier driver: its bound comes from the log, not from the live State.
      new BatchBoundLog(d, new Configuration()).getOrAdd(11, BatchBound(55L, 5L))
      assert(uf(BatchBounds.onDriver(BatchBounds.key("q-suite", "join-a", 11), name)) === (55L, 5L))
    }
  }

  test("a batch's bound is recorded when Spark plans the batch, before any task asks") {
    val name = "bounds_plan_suite"
    withJoin(name, "q-plan", "join-p") { (state, reader, d) =>
      BatchBounds.prepare("q-plan", "join-p", 4, name)
      BatchBounds.awaitPrepared()
      val planned = BatchBound(state.updateProgress, 30L)
      assert(new BatchBoundLog(d, new Configuration()).get(4) === Some(planned), "in the checkpoint before any task")
      state.reportFetchProgress(reader, 60L)
      assert(uf(BatchBounds.of("q-plan", "join-p", 4, name)) === uf(planned),
        "a task gets the bound of the planned batch")
      BatchBounds.prepare("q-plan", "join-p", 4, name) // planned again (Spark may plan a batch twice): no new record
      BatchBounds.awaitPrepared()
      assert(uf(BatchBounds.of("q-plan", "join-p", 4, name)) === uf(planned))
    }
  }

  test(
    "a checkpoint whose join ran without a waiting-events directory (an earlier build) is refused, not read as empty") {
    val d = dir()
    new BatchBoundLog(d, new Configuration()).getOrAdd(2, BatchBound(10L, 5L))
    val e = intercept[SharedStateException](BatchBounds.register("q-old", "join-o", d.getParent.toString,
        new Configuration()))
    assert(e.getMessage.contains("earlier sharedstate build") && e.getMessage.contains("new checkpointLocation"))
  }

  test("a batch after one whose tasks did not all finish fails by name") {
    val name = "bounds_unwritten_suite"
    withJoin(name, "q-unwritten", "join-u") { (_, _, d) =>
      BatchBounds.onDriver(BatchBounds.key("q-unwritten", "join-u", 0),
        name) // batch 0 planned; its tasks never finished
      val e = intercept[SharedStateException](BatchBounds.onDriver(BatchBounds.key("q-unwritten", "join-u", 1), name))
      assert(e.getMessage.contains("waiting events of micro-batch 0") && e.getMessage.contains("must be consumed"))
    }
  }
}
