package io.sharedstate.spark.durable

import io.sharedstate.core.{EventTime, State, UpdateBatch}
import io.sharedstate.core.txn.{RandomMixWorkload, TransactionBatch, TransactionGroup, TxnEvent}
import java.nio.file.Files
import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
import org.scalatest.funsuite.AnyFunSuite
import scala.collection.mutable
import scala.util.Random

/**
 * Durable members of a transaction group: each round that applies transactions journals the pairs
 * they put, so a member rebuilt alone from its tables (the snapshots and the changelog after them, as
 * a new driver does) equals the member before, plain updates folded on top of the transactions'
 * effects included.
 */
class TransactionJournalSuite extends AnyFunSuite {
  private val conf = new Configuration()
  private val workload = new RandomMixWorkload(n = 240, keys = 12) // States with rules sum, replace, max

  /** The group's members, each durable under its own directory, written as the sink and the txn operator do. */
  private final class DurableGroup(seed: Long) {
    private val dir = new Path(Files.createTempDirectory("txn-journal-").toString)
    private val rnd = new Random(seed)
    val tables: Map[String, OwnedTables] = workload.states.map { s =>
      s.name -> new OwnedTables(new Path(dir, s.name), conf, "txn-journal-suite")
    }.toMap
    private val targets = workload.states.map(s => s.name -> tables(s.name).log.target(s.partitions)).toMap
    private val opened = workload.states.map { spec =>
      val t = tables(spec.name)
      val s = new State(spec)
      val start = StateRecovery.replay(s, t.log, Some(t.snapshots), Some(t.rejected))
      val journal = new DeltaJournal(spec.name, t.log, targets(spec.name), t.rejected, start.nextSeq, start.version,
        t.lease)
      s.attachJournal(journal)
      (s, journal)
    }
    val states: Seq[State] = opened.map(_._1)
    private val plainOnly = states.head // a plain writer of one member holds the whole group back
    plainOnly.registerWriter("p")
    val group = new TransactionGroup("mix", states)
    group.registerWriter("w")
    private val epochs = mutable.HashMap("w" -> 0L, "p" -> 0L)
    private val progress = mutable.HashMap("w" -> EventTime.MinusInfinity, "p" -> EventTime.MinusInfinity)

    /** Runs `events` as epochs of both writers, each with a progress some way behind its largest time. */
    def run(events: Seq[TxnEvent]): Unit = {
      var rest = events
      while (rest.nonEmpty) {
        val (now, later) = rest.splitAt(1 + rnd.nextInt(25))
        rest = later
        val (toP, toW) = now.partition {
          case TxnEvent.Plain(s, _, _, _) => s == plainOnly.name && rnd.nextBoolean()
          case _ => false
        }
        commit("w", toW)
        if (toP.nonEmpty || rnd.nextInt(3) == 0) commit("p", toP)
      }
    }

    private def commit(w: String, events: Seq[TxnEvent]): Unit = {
      val epoch = epochs(w)
      val txns = new TransactionBatch
      val updates = states.map(s => s.name -> new UpdateBatch).toMap
      events.foreach {
        case TxnEvent.Plain(s, k, t, v) => updates(s).add(k, t, v)
        case TxnEvent.Txn(txn) => txns.add(txn)
      }
      val written = states.filter(s => w == "w" || s.name == plainOnly.name).map { s =>
        s.stage(w, epoch, 0, updates(s.name))
        s.name -> targets(s.name).writeTask(w, epoch, 0, updates(s.name))
      }.toMap
      val newProgress = (progress(w) +: events.map(_.time - 5 - rnd.nextInt(15))).max
      if (w == "w") {
        group.stage(w, epoch, 0, txns)
        group.commitEpoch(w, epoch, newProgress, payloads = written)
      } else plainOnly.commitEpoch(w, epoch, newProgress, payload = written(plainOnly.name))
      progress(w) = newProgress
      epochs(w) = epoch + 1
    }

    def snapshot(): Unit = opened.foreach { case (s, journal) =>
      assert(new Snapshotter(null, SnapshotSource.local(s, journal), tables(s.name).log, tables(s.name).snapshots,
        retained = 10).round().written > 0)
    }

    /** Each member rebuilt alone from its tables, as a new driver opens it (`snapshots` = false: the changelog only). */
    def recovered(snapshots: Boolean): Seq[State] = workload.states.map { spec =>
      val s = new State(spec)
      StateRecovery.replay(s, tables(spec.name).log, Option.when(snapshots)(tables(spec.name).snapshots), None)
      s
    }
  }

  /** Every key's pairs with time < `below` (deletes included). */
  private def contents(s: State, below: Long): Map[Seq[Byte], Seq[(Long, Seq[Byte])]] = {
    val pairs = mutable.HashMap.empty[Seq[Byte], Seq[(Long, Seq[Byte])]]
    (0 until s.partitionCount).foreach { p =>
      s.partition(p).foreachEntry { (k, set) =>
        val kept = (0 until set.size).filter(set.timeAt(_) < below).map(i => (set.timeAt(i), set.valueAt(i).toSeq))
        if (kept.nonEmpty) pairs(k.bytes.toSeq) = kept
      }
    }
    pairs.toMap
  }

  private def assertSame(live: Seq[State], rebuilt: Seq[State], below: Long, what: String): Unit =
    live.zip(rebuilt).foreach { case (l, r) =>
      val lp = contents(l, below)
      val rp = contents(r, below)
      assert(rp.keySet == lp.keySet, s"$what: State ${l.name}'s keys")
      lp.foreach { case (k, pairs) => assert(rp(k) == pairs, s"$what: State ${l.name} key ${k.mkString(",")}") }
    }

  test("a durable member with transactions applied, rebuilt alone from its tables, equals the member before") {
    for (seed <- 1L to 3L) {
      val g = new DurableGroup(seed)
      val events = workload.events(seed)
      val (first, second) = events.splitAt(events.size / 2)
      g.run(first)
      assert(g.group.drainOutcomes().exists(_.committed), "transactions were applied")
      // Mid-run: U is the group's U of the journal (the live one), the same pairs below it.
      val mid = g.recovered(snapshots = false)
      mid.foreach(r => assert(r.updateProgress == g.group.updateProgress, s"seed $seed mid-run: U of ${r.name}"))
      assertSame(g.states, mid, g.group.updateProgress, s"seed $seed mid-run")
      g.snapshot()
      g.run(second)
      // Every writer finishes: the last round applies every waiting transaction, journaled like the others.
      g.group.finishWriter("w")
      g.states.head.finishWriter("p")
      assert(g.group.updateProgress == EventTime.PlusInfinity && g.group.waitingTransactions == 0)
      for (snapshots <- Seq(true, false)) {
        val rebuilt = g.recovered(snapshots)
        val what = s"seed $seed, ${if (snapshots) "from the snapshots" else "from the changelog only"}"
        rebuilt.foreach(r => assert(r.updateProgress == EventTime.PlusInfinity, s"$what: U of ${r.name}"))
        assertSame(g.states, rebuilt, EventTime.PlusInfinity, what)
        if (!snapshots) g.states.zip(rebuilt).foreach { case (l, r) =>
          def failures(s: State) = s.rejectedUpdates.filter(_.reason != "late_transaction")
            .map(u => (u.key.toSeq, u.time, u.reason))
          assert(failures(r) == failures(l), s"$what: rejected updates of ${l.name}")
        }
      }
    }
  }

  test("a member recovered inside its group holds U at the group's U until it joins a group again") {
    val g = new DurableGroup(7L)
    g.run(workload.events(7L).take(120))
    val rebuilt = g.recovered(snapshots = true)
    val a = rebuilt.head
    val held = a.updateProgress
    // Its own writer alone would move U; held, it does not (transactions may still wait in the group).
    a.reportUpdateProgress("p", 1000000L)
    assert(a.updateProgress == held)
    val again = new TransactionGroup("mix", rebuilt)
    try {
      a.reportUpdateProgress("p", 1000001L)
      assert(again.updateProgress >= held)
    } finally again.close()
  }
}
