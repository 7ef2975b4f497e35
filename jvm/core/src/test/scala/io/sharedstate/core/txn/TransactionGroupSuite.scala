package io.sharedstate.core.txn

import io.sharedstate.core._
import io.sharedstate.core.fetch.{FetchRequest, FetchRule}
import io.sharedstate.core.txn.apps.StreamingLedger
import org.scalatest.funsuite.AnyFunSuite

/** The group's contract case by case: a transfer, errors, the shared U, deletes, lateness, fetches and the change feed. */
class TransactionGroupSuite extends AnyFunSuite {
  import TxnRows._
  import TransactionGroupSuite._

  private def spec(name: String, rule: String = "replace") = StateSpec(name, "k BIGINT", "v BIGINT", 2, rule)
  private def value(s: State, k: Long, t: Long): Option[Long] = s.fetchLatest(new Key(long(k)), t) match {
    case FetchAnswer.Found(_, v) => Some(readLong(v))
    case FetchAnswer.Absent => None
    case FetchAnswer.NotYet => fail(s"not final at $t")
  }
  private def batch(txns: Transaction*): TransactionBatch = { val b = new TransactionBatch; txns.foreach(b.add); b }

  test("a transfer across two States reads the values before it and writes atomically; an uncovered one aborts") {
    val acc = new State(spec("acc")); val ast = new State(spec("ast"))
    val g = new TransactionGroup("ledger", Seq(acc, ast))
    g.registerWriter("w")
    val ks = IndexedSeq(key("acc", 1), key("acc", 2), key("ast", 1), key("ast", 2))
    g.stage(
      "w",
      0,
      0,
      batch(
        new Transaction(10, ks, ks, StreamingLedger.Transfer(300, 100)),
        new Transaction(20, ks, ks, StreamingLedger.Transfer(800, 0)), // 700 left: aborts
        new Transaction(5, ks.take(1) ++ ks.slice(2, 3), ks.take(1) ++ ks.slice(2, 3), StreamingLedger.Deposit(1, 2))
      )
    )
    assert(g.commitEpoch("w", 0, 100).accepted == 3)
    val out = g.drainOutcomes()
    assert(out.map(o => (o.time, o.committed)) == Seq((5L, true), (10L, true), (20L, false)))
    assert(out(1).reads.map(_.map(readLong)) == Seq(Some(1001L), None, Some(1002L), None))
    assert(out(2).reason == "insufficient balance")
    assert(value(acc, 1, 99).contains(701L) && value(acc, 2, 99).contains(1300L))
    assert(value(ast, 1, 99).contains(902L) && value(ast, 2, 99).contains(1100L))
    assert(value(acc, 1, 7).contains(1001L), "the pair of each transaction stays at its time")
  }

  test("a State final after a bulk load cannot join a group; reopened by a writer, it can") {
    val s = new State(spec("bulk")); val other = new State(spec("other"))
    s.registerWriter("bulk-load")
    s.commitEpoch("bulk-load", 0, 40, finish = true)
    assert(s.updateProgress == EventTime.PlusInfinity)
    val e = intercept[SharedStateException](new TransactionGroup("b", Seq(other, s)))
    assert(e.getMessage.contains("State 'bulk' is final") && e.getMessage.contains("reopens it at its last finite U"))
    new TransactionGroup("o", Seq(other)).close() // the refused group joined nothing
    s.registerWriter("loader"); s.pauseWriter("loader") // a streaming writer that ran and stopped
    val g = new TransactionGroup("b", Seq(s))
    // The last finite U: here -infinity, as the bulk load finished in its only commit.
    assert(g.updateProgress == s.updateProgress && g.updateProgress == EventTime.MinusInfinity)
    g.close()
  }

  test("bad input: a State outside the group, a State in two groups, an unregistered writer, the wrong write count") {
    val a = new State(spec("ga")); val b = new State(spec("gb"))
    val g = new TransactionGroup("g1", Seq(a))
    val e = intercept[SharedStateException](g.stage("w", 0, 0,
        batch(new Transaction(1, IndexedSeq(key("gb", 1)),
            IndexedSeq.empty, PutAll(1)))))
    assert(e.getMessage.contains("no State 'gb'") && e.getMessage.contains("ga"))
    val e2 = intercept[SharedStateException](new TransactionGroup("g2", Seq(b, a)))
    assert(e2.getMessage.contains("already in transaction group 'g1'"))
    new TransactionGroup("g3", Seq(b)).close() // b was left as it was: the failed group released it
    val e3 = intercept[SharedStateException](g.commitEpoch("nobody", 0, 1))
    assert(e3.getMessage.contains("Writer 'nobody' is not registered"))
    g.registerWriter("w")
    val bad = new TransactionLogic {
      def decide(txn: Transaction, reads: IndexedSeq[Option[Array[Byte]]]) =
        TransactionDecision.Commit(IndexedSeq.empty)
    }
    val boom = new TransactionLogic {
      def decide(txn: Transaction, reads: IndexedSeq[Option[Array[Byte]]]) = throw new IllegalArgumentException("no")
    }
    g.stage("w", 0, 0,
      batch(new Transaction(1, IndexedSeq.empty, IndexedSeq(key("ga", 1)), bad),
        new Transaction(2, IndexedSeq.empty, IndexedSeq(key("ga", 1)), boom)))
    g.commitEpoch("w", 0, 10)
    val out = g.drainOutcomes()
    assert(out(0).reason.startsWith("bad_decision") && out(1).reason == "logic_failed: no")
    assert(value(a, 1, 9).isEmpty)
  }

  test("the group's U is the minimum over the writers of every member, published on all of them") {
    val a = new State(spec("ua")); val b = new State(spec("ub"))
    val g = new TransactionGroup("u", Seq(a, b))
    g.registerWriter("txns")
    b.registerWriter("plainB") // a writer of b only holds back a too
    g.stage("txns", 0, 0, batch(new Transaction(5, IndexedSeq.empty, IndexedSeq(key("ua", 1)), PutAll(7))))
    g.commitEpoch("txns", 0, 50)
    assert(g.updateProgress == EventTime.MinusInfinity && a.updateProgress == EventTime.MinusInfinity)
    assert(g.drainOutcomes().isEmpty && g.waitingTransactions == 1)
    val ub = new UpdateBatch; ub.add(long(1), 3, long(40))
    b.stage("plainB", 0, 0, ub)
    b.commitEpoch("plainB", 0, 20) // committing on a member advances the group
    assert(g.updateProgress == 20 && a.updateProgress == 20 && b.updateProgress == 20)
    assert(value(a, 1, 19).contains(7L) && value(b, 1, 19).contains(40L))
    assert(g.drainOutcomes().map(_.time) == Seq(5L))
  }

  test("a delete: reads and latest see nothing from then on, ranges and aggregates skip it, earlier pairs stay") {
    val s = new State(spec("del", "sum"))
    val g = new TransactionGroup("d", Seq(s))
    g.registerWriter("w")
    val k = key("del", 1)
    val ub = new UpdateBatch
    ub.add(long(1), 1, long(5)); ub.add(long(1), 3, long(6));
    ub.add(long(1), 8, long(2)) // sum: 5, 11, then 2 after the delete
    s.stage("w", 0, 0, ub)
    g.stage("w", 0, 0,
      batch(new Transaction(5, IndexedSeq.empty, IndexedSeq(k), DeleteAll),
        new Transaction(6, IndexedSeq(k), IndexedSeq.empty, PutAll(0))))
    g.commitEpoch("w", 0, 100)
    val out = g.drainOutcomes()
    assert(out(1).reads == IndexedSeq(None))
    assert(value(s, 1, 4).contains(11L) && value(s, 1, 5).isEmpty && value(s, 1, 7).isEmpty && value(s, 1, 9).contains(
      2L))
    val range = s.fetch(FetchRequest(new Key(long(1)), 99, FetchRule.Range(0))).asInstanceOf[FetchAnswer.Pairs]
    assert(range.times.toSeq == Seq(1L, 3L, 8L))
    val count = s.fetch(FetchRequest(new Key(long(1)), 99, s.fetchRule("count", 4))).asInstanceOf[FetchAnswer.Aggregate]
    assert(readLong(count.row) == 1L)
    val sum = s.fetch(FetchRequest(new Key(long(1)), 99, s.fetchRule("sum", 0))).asInstanceOf[FetchAnswer.Aggregate]
    assert(readLong(sum.row) == 18L)
  }

  test("a plain update after a delete folds on no value, whether its step applies transactions or not") {
    // A step with no transaction ready applies the members' plain updates with their own appliers, one with
    // transactions with the group's chains (and a durable member replays a step without pairs of its own
    // with its applier): the delete must read as no value for both, or live and replay differ.
    for (withTransaction <- Seq(false, true)) {
      val s = new State(spec("after_del", "sum")); val other = new State(spec("other"))
      val g = new TransactionGroup("ad", Seq(s, other))
      g.registerWriter("w")
      val first = new UpdateBatch
      first.add(long(1), 1, long(5))
      s.stage("w", 0, 0, first)
      g.stage("w", 0, 0, batch(new Transaction(5, IndexedSeq.empty, IndexedSeq(key("after_del", 1)), DeleteAll)))
      g.commitEpoch("w", 0, 10)
      assert(value(s, 1, 9).isEmpty)
      val later = new UpdateBatch
      later.add(long(1), 12, long(4))
      s.stage("w", 1, 0, later)
      if (withTransaction)
        g.stage("w", 1, 0, batch(new Transaction(13, IndexedSeq.empty, IndexedSeq(key("other", 2)), PutAll(1))))
      g.commitEpoch("w", 1, 20)
      assert(s.rejectedUpdates.isEmpty, s"with a transaction: $withTransaction: ${s.rejectedUpdates}")
      assert(value(s, 1, 19).contains(4L), s"with a transaction: $withTransaction")
      g.close()
    }
  }

  test("a late transaction is rejected with the U it met, has no effect and no outcome") {
    val s = new State(spec("late"))
    val g = new TransactionGroup("l", Seq(s))
    g.registerWriter("w")
    g.commitEpoch("w", 0, 50)
    g.stage("w", 1, 3, batch(new Transaction(10, IndexedSeq.empty, IndexedSeq(key("late", 1)), PutAll(1), long(77))))
    val c = g.commitEpoch("w", 1, 60)
    assert(c.rejected == 1 && c.accepted == 0)
    val late = g.drainLate()
    assert(late == Seq(RejectedTransaction(TransactionId("w", 1, 3, 0), 10, "late", 50, late.head.payload)) &&
      readLong(late.head.payload) == 77L)
    assert(g.drainLate().isEmpty && g.lateCount == 1L, "drained once, counted")
    assert(g.drainOutcomes().isEmpty && value(s, 1, 59).isEmpty)
    // The member it would have written logs it like a late update: the key, the time, no value.
    assert(s.rejectedUpdates.map(r =>
      (readLong(r.key), r.time.longValue, r.value, r.reason, r.writer, r.epoch,
        r.updateProgressAtArrival)) == Seq((1L, 10L, null, RejectedTransaction.LateInState, "w", 1L, 50L)))
    assert(g.commitEpoch("w", 1, 60).alreadyCommitted && g.drainLate().isEmpty)
    g.finishWriter("w")
    assert(g.updateProgress == EventTime.PlusInfinity)
    val e = intercept[SharedStateException](g.registerWriter("late_joiner"))
    assert(e.getMessage.contains("is final"))
    intercept[SharedStateException](g.registerWriter("w")) // a finished writer cannot reopen it either
    val e2 = intercept[SharedStateException](s.registerWriter("direct"))
    assert(e2.getMessage.contains("cannot reopen it"))
  }

  test("restoring a committed epoch after a restart: the transactions not final wait again, once; others are refused") {
    val s = new State(spec("rs"))
    val g = new TransactionGroup("r1", Seq(s))
    g.registerWriter("w")
    g.stage("w", 0, 0, batch(new Transaction(5, IndexedSeq.empty, IndexedSeq(key("rs", 1)), PutAll(1))))
    g.commitEpoch("w", 0, 10) // applies the transaction at 5: U = 10
    g.close()
    // A new group over the member, as after a restart: epoch 0 holds one final and one waiting transaction.
    val again = new TransactionGroup("r2", Seq(s))
    val tasks = Seq(0 -> batch(new Transaction(5, IndexedSeq.empty, IndexedSeq(key("rs", 1)), PutAll(1)),
      new Transaction(20, IndexedSeq(key("rs", 1)), IndexedSeq(key("rs", 2)), PutAll(2))))
    assert(again.restoreCommitted("w", 0, tasks) == 1 && again.waitingTransactions == 1)
    assert(again.restoreCommitted("w", 0, tasks) == 0, "an epoch restored once is not restored again")
    val e = intercept[SharedStateException](again.restoreCommitted("w", 1, tasks))
    assert(e.getMessage.contains("epoch 1 of writer 'w' is not committed on State 'rs'"))
    again.finishWriter("w")
    assert(again.drainOutcomes().map(o => (o.id, o.committed)) == Seq((TransactionId("w", 0, 0, 1), true)))
    assert(value(s, 2, 30).contains(2L) && value(s, 1, 30).contains(1L))
  }

  test("a fetch waiting on a member is answered by the group's commit; the member's change feed gets the writes") {
    val a = new State(spec("fa")); val b = new State(spec("fb"))
    val g = new TransactionGroup("f", Seq(a, b))
    g.registerWriter("w")
    val sub = b.subscribeChanges(EventTime.MinusInfinity)
    val pending = b.fetchAsync(FetchRequest(new Key(long(4)), 30))
    assert(!pending.isDone)
    g.stage("w", 0, 0, batch(new Transaction(12, IndexedSeq(key("fa", 9)), IndexedSeq(key("fb", 4)), PutAll(3))))
    g.commitEpoch("w", 0, 40)
    assert(pending.isDone)
    pending.get match {
      case FetchAnswer.Found(t, v) => assert(t == 12L && readLong(v) == 3L)
      case other => fail(s"answered $other")
    }
    val changes = sub.changes(EventTime.MinusInfinity, 40)
    assert(changes.map(c => (c.time, readLong(c.key), readLong(c.value))).toSeq == Seq((12L, 4L, 3L)))
    sub.close()
  }
}

object TransactionGroupSuite {
  import TxnRows.long

  /** Puts `v` on every write (no read needed). */
  final case class PutAll(v: Long) extends TransactionLogic {
    def decide(txn: Transaction, reads: IndexedSeq[Option[Array[Byte]]]): TransactionDecision =
      TransactionDecision.Commit(txn.writes.map(_ => WriteValue.Put(long(v))))
  }
  object DeleteAll extends TransactionLogic {
    def decide(txn: Transaction, reads: IndexedSeq[Option[Array[Byte]]]): TransactionDecision =
      TransactionDecision.Commit(txn.writes.map(_ => WriteValue.Delete))
  }
}
