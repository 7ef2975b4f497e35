package io.sharedstate.spark.fetch.batch

import io.sharedstate.core.SharedStateException
import java.nio.file.{Files, Paths}
import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.types.{LongType, StringType, StructField, StructType}
import org.apache.spark.unsafe.types.UTF8String
import org.scalatest.funsuite.AnyFunSuite
import scala.util.Random

class WaitingEventFilesSuite extends AnyFunSuite {
  private val schema = StructType(Seq(StructField("id", LongType), StructField("s", StringType)))
  private val toUnsafe = UnsafeProjection.create(schema)

  private def files(): WaitingEventFiles = {
    val f = new WaitingEventFiles(new Path(Files.createTempDirectory("waiting").toUri.toString, "fetch-waiting"),
      new Configuration())
    f.create()
    f
  }

  private def event(id: Long, s: String): UnsafeRow =
    toUnsafe(InternalRow(id, if (s == null) null else UTF8String.fromString(s))).copy()

  // Writes `perTask(i)` events (ids from `first`) as task i of perTask.size in `batch`; returns (id, arrival) of each.
  private def write(
      f: WaitingEventFiles, batch: Long, perTask: Seq[Int], first: Long, random: Random): Seq[(Long, Long)] = {
    f.reset(batch) // as the driver does before the batch's tasks run
    perTask.zipWithIndex.flatMap { case (count, task) =>
      val w = f.writer(batch, task, perTask.size)
      val written = (0 until count).map { k =>
        val id = first + perTask.take(task).sum + k
        val arrived = random.nextInt(1 << 20).toLong
        w.write(event(id, if (random.nextInt(5) == 0) null else "e" * random.nextInt(40)), arrived)
        (id, arrived)
      }
      w.close()
      written
    }
  }

  test("the next batch's tasks read every waiting event exactly once, whatever both batches' task counts") {
    (1 to 40).foreach { seed =>
      val random = new Random(seed)
      val f = files()
      val perTask = Seq.fill(1 + random.nextInt(6))(random.nextInt(30))
      val written = write(f, 7, perTask, 0L, random)
      val (previous, parts) = f.previous(9)
      assert((previous, parts) === (7L, perTask.size), s"seed $seed")
      val tasks = 1 + random.nextInt(6)
      val read = (0 until tasks).flatMap(t =>
        f.reader(previous, parts, t, tasks, schema.length).map { case (row, arrived) =>
          (row.getLong(0), arrived)
        })
      assert(read.sorted === written.sorted, s"seed $seed: $tasks tasks after ${perTask.size}")
    }
  }

  test("event columns come back as written, nulls included") {
    val f = files()
    f.reset(0)
    val w = f.writer(0, 0, 1)
    Seq(event(1, "a"), event(2, null), event(3, "x" * 1000)).foreach(w.write(_, 5L))
    w.close()
    val back = f.reader(0, 1, 0, 1, schema.length).map(_._1).toList
    assert(back.map(r => (r.getLong(0), if (r.isNullAt(1)) null else r.getUTF8String(1).toString)) ===
      List((1L, "a"), (2L, null), (3L, "x" * 1000)))
  }

  test("a batch with a missing part, or parts of two attempts with different counts, is refused by name") {
    val f = files()
    write(f, 3, Seq(2, 2), 0L, new Random(1))
    f.reset(5)
    val w = f.writer(5, 0, 3)
    w.close()
    f.writer(5, 1, 3).cancel() // a task whose output was not all consumed publishes nothing
    f.writer(5, 2, 3).close()
    assert(f.previous(5) === (3L, 2))
    val e = intercept[SharedStateException](f.previous(6))
    assert(e.getMessage.contains("waiting events of micro-batch 5") && e.getMessage.contains("incomplete"))
    assert(e.getMessage.contains("must be consumed"))
    f.reset(5)
    write(f, 5, Seq(1, 1, 1), 10L, new Random(2))
    f.writer(5, 0, 2).close() // a stale file of an attempt with two tasks
    assert(intercept[SharedStateException](f.previous(6)).getMessage.contains("incomplete"))
  }

  test("reset empties an earlier attempt of a batch and forgetBefore drops the batches before one") {
    val f = files()
    Seq(1L, 2L, 4L).foreach(b => write(f, b, Seq(1), b * 10, new Random(b)))
    f.reset(4)
    assert(intercept[SharedStateException](f.previous(5)).getMessage.contains("micro-batch 4"), "nothing written yet")
    f.forgetBefore(4)
    assert(f.batches === Seq(4L))
    f.writer(4, 0, 1).close()
    assert(f.previous(5) === (4L, 1))
  }

  test("the first batch takes over nothing; forgetBefore keeps the batch it names") {
    val f = files()
    Seq(1L, 2L).foreach(b => write(f, b, Seq(1), b * 10, new Random(b)))
    f.forgetBefore(2)
    assert(f.batches === Seq(2L))
    assert(f.previous(9) === (2L, 1))
    assert(f.previous(2) === (-1L, 0))
  }

  test("a cut-off file is an error that names it, not fewer events") {
    val f = files()
    write(f, 0, Seq(500), 0L, new Random(3))
    val file = Paths.get(new Path(new Path(f.dir, "0"), WaitingEventFiles.name(0, 1)).toUri)
    val bytes = Files.readAllBytes(file)
    Files.write(file, bytes.take(bytes.length / 2))
    val e = intercept[SharedStateException](f.reader(0, 1, 0, 1, schema.length).size)
    assert(e.getMessage.contains("ends early") && e.getMessage.contains(WaitingEventFiles.name(0, 1)))
  }
}
