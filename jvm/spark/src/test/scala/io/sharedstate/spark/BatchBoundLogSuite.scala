package io.sharedstate.spark

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
    assert(log.getOrAdd(3, 25L) === 25L)
    assert(log.getOrAdd(3, 100L) === 25L, "a re-run records nothing new")
    val restarted = new BatchBoundLog(d, new Configuration())
    assert(restarted.get(3) === Some(25L))
    assert(restarted.getOrAdd(3, 100L) === 25L)
    assert(restarted.getOrAdd(4, 100L) === 100L)
    assert(restarted.latest === Some(4L))
  }

  test("forgetting old batches keeps the newer ones") {
    val log = new BatchBoundLog(dir(), new Configuration())
    (0L until 12L).foreach(b => log.getOrAdd(b, b * 10))
    log.forgetBefore(4)
    log.forget(7)
    assert((0L until 12L).filter(b => log.get(b).isDefined) === Seq(4L, 5L, 6L, 8L, 9L, 10L, 11L))
    assert(log.get(11) === Some(110L))
  }

  test("BatchBounds keeps a registered join's bound in its log before answering") {
    val d = dir()
    BatchBounds.register("q-suite", "join-a", d.getParent.toString, new Configuration())
    var asked = 0
    def live(u: Long): Long = { asked += 1; u }
    assert(BatchBounds.onDriver(BatchBounds.key("q-suite", "join-a", 9), live(40L)) === 40L)
    assert(BatchBounds.onDriver(BatchBounds.key("q-suite", "join-a", 9), live(90L)) === 40L)
    assert(asked === 1, "U is read once per batch")
    assert(new BatchBoundLog(d, new Configuration()).get(9) === Some(40L))
    // A batch recorded by an earlier driver: its bound comes from the log, not from live U.
    new BatchBoundLog(d, new Configuration()).getOrAdd(10, 55L)
    assert(BatchBounds.onDriver(BatchBounds.key("q-suite", "join-a", 10), live(99L)) === 55L)
  }
}
