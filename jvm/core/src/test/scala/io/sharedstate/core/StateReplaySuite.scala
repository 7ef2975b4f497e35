package io.sharedstate.core

import scala.collection.mutable.ArrayBuffer
import scala.util.Random
import org.scalatest.funsuite.AnyFunSuite

/** A State rebuilt from its journal equals the State that wrote it: entries, U, writers, rejections. */
class StateReplaySuite extends AnyFunSuite {
  private def bytes(s: String) = s.getBytes("UTF-8")
  private def spec(lateness: String = StateSpec.RejectLate) =
    StateSpec("replayed", "k STRING", "v STRING", 3, "replace", compaction = "none", lateness = lateness)

  private sealed trait Event
  private case class Registered(writer: String, frontier: Long) extends Event
  private case class Committed(c: JournalCommit) extends Event
  private case class Finished(writer: String) extends Event
  private case class Deregistered(writer: String) extends Event

  private final class RecordingJournal extends StateJournal {
    val events = ArrayBuffer.empty[Event]
    var failNextCommit = false
    def writerRegistered(writer: String, frontier: Long): Unit = events += Registered(writer, frontier)
    def epochCommitting(commit: JournalCommit): Unit = {
      if (failNextCommit) { failNextCommit = false; throw new RuntimeException("journal unavailable") }
      events += Committed(commit)
    }
    def writerFinished(writer: String): Unit = events += Finished(writer)
    def writerDeregistered(writer: String): Unit = events += Deregistered(writer)
  }

  private def replay(events: Seq[Event]): State = {
    val s = new State(spec())
    val r = new StateReplay(s)
    events.foreach {
      case Registered(w, f) => r.registered(w, f)
      case Committed(c) => r.committed(c.writer, c.epoch, c.updateProgress, c.writerProgress, c.finish,
          c.payload.asInstanceOf[Seq[UpdateBatch]])
      case Finished(w) => r.finished(w)
      case Deregistered(w) => r.deregistered(w)
    }
    r.finish()
    s
  }

  private def entries(s: State): Map[String, Seq[(Long, String)]] = {
    val out = Map.newBuilder[String, Seq[(Long, String)]]
    (0 until s.partitionCount).foreach(p =>
      s.partition(p).foreachEntry { (k, set) =>
        out += new String(k.bytes, "UTF-8") -> (0 until set.size).map(i =>
          set.timeAt(i) -> new String(set.valueAt(i), "UTF-8"))
      })
    out.result()
  }

  private def rejected(s: State): Seq[(String, java.lang.Long, String, String, String, Long, Long)] =
    s.rejectedUpdates.map(r =>
      (Option(r.key).map(new String(_, "UTF-8")).orNull, r.time, new String(r.value, "UTF-8"),
        r.reason, r.writer, r.epoch, r.updateProgressAtArrival)).sortBy(_.toString)

  test("random epochs of two writers with late updates and ties replay to the same State") {
    (1 to 20).foreach { seed =>
      val rnd = new Random(seed)
      val journal = new RecordingJournal
      val s = new State(spec())
      s.attachJournal(journal)
      val writers = Seq("w1", "w2")
      writers.foreach(s.registerWriter)
      val epochs = Array(0L, 0L)
      val progress = Array(0L, 0L)
      (1 to 12).foreach { _ =>
        val w = rnd.nextInt(2)
        val tasks = (0 until 1 + rnd.nextInt(3)).map { task =>
          val b = new UpdateBatch
          (0 until rnd.nextInt(6)).foreach { i =>
            // Times around the writer's progress, so some are late; few keys and times, so ties happen.
            b.add(bytes(s"k${rnd.nextInt(5)}"), progress(w) - 20 + rnd.nextInt(60),
              bytes(s"s$seed-w$w-e${epochs(w)}-t$task-$i"))
          }
          if (rnd.nextInt(5) == 0)
            b.reject(RejectedUpdate(null, 1L, bytes("nokey"), RejectedUpdate.NullKey, "", 0L, 0L))
          s.stage(writers(w), epochs(w), task, b)
          b
        }
        progress(w) += rnd.nextInt(30)
        s.commitEpoch(writers(w), epochs(w), progress(w), payload = tasks)
        epochs(w) += 1
      }
      if (rnd.nextBoolean()) s.finishWriter("w2")
      val r = replay(journal.events.toSeq)
      assert(entries(r) == entries(s), s"seed $seed")
      assert(r.updateProgress == s.updateProgress, s"seed $seed")
      writers.foreach { w =>
        assert(r.writerProgress(w) == s.writerProgress(w))
        assert(r.lastCommittedEpoch(w) == s.lastCommittedEpoch(w))
      }
      assert(rejected(r) == rejected(s), s"seed $seed")
      assert(r.metrics.updatesStaged == s.metrics.updatesStaged, s"seed $seed")
    }
  }

  test("a journal failure leaves the epoch uncommitted: U does not move and a retry commits it") {
    val journal = new RecordingJournal
    val s = new State(spec())
    s.attachJournal(journal)
    s.registerWriter("w")
    val b = new UpdateBatch
    b.add(bytes("a"), 5L, bytes("x"))
    s.stage("w", 0L, 0, b)
    journal.failNextCommit = true
    intercept[RuntimeException](s.commitEpoch("w", 0L, 10L, payload = Seq(b)))
    assert(s.updateProgress == EventTime.MinusInfinity && s.lastCommittedEpoch("w") == -1L)
    s.commitEpoch("w", 0L, 10L, payload = Seq(b))
    assert(s.updateProgress == 10L)
    assert(entries(replay(journal.events.toSeq)) == Map("a" -> Seq(5L -> "x")))
  }

  test("a bulk load that finishes with its commit, then a streaming writer joining, replay to the same progress") {
    val journal = new RecordingJournal
    val s = new State(spec())
    s.attachJournal(journal)
    s.registerWriter("bulk")
    val b = new UpdateBatch
    b.add(bytes("a"), 5L, bytes("x"))
    s.stage("bulk", 0L, 0, b)
    s.commitEpoch("bulk", 0L, 5L, payload = Seq(b), finish = true)
    assert(s.updateProgress == EventTime.PlusInfinity)
    s.registerWriter("stream")
    assert(journal.events.last == Registered("stream", s.writerProgress("stream").get))
    val r = replay(journal.events.toSeq)
    assert(r.updateProgress == s.updateProgress)
    assert(r.writerProgress("stream") == s.writerProgress("stream"))
    assert(entries(r) == entries(s))
  }
}
