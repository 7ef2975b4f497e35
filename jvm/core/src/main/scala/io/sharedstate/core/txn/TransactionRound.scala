package io.sharedstate.core.txn

import io.sharedstate.core.{Change, GroupAdvance, Key, State}
import java.util.Arrays
import scala.collection.immutable.ArraySeq
import scala.collection.mutable.ArrayBuffer

/**
 * One advance of a group's U to `newU` when transactions are ready: takes every member's staged plain
 * updates below `newU` and the given transactions (all below `newU`), builds one chain per (State,
 * key) they touch, runs the chains, routes rule failures to each State's rejected log, journals in
 * each durable member the pairs the transactions put there, hands the change feeds their new pairs and
 * returns the outcomes in (time, id) order. Publishing U is the caller's, after this returns
 * (everything below it is applied, and journaled, by then).
 *
 * The chains are built without an object per access: the transactions are ranked by (time, id), each
 * access gets its chain in one pass (a hash look-up per access), and a second pass lays every chain's
 * accesses out in one array, each chain a slice of it, already in the order they apply in (ranks
 * ascending, a transaction's reads before its writes): no sort. Only plain updates and replayed pairs
 * are objects, sorted per chain.
 */
private[sharedstate] final class TransactionRound(states: IndexedSeq[State], scheduler: ChainScheduler) {
  private val stateIndex: java.util.HashMap[String, Integer] = {
    val m = new java.util.HashMap[String, Integer]()
    states.indices.foreach(i => m.put(states(i).name, i))
    m
  }

  def run(newU: Long, txns: IndexedSeq[(TransactionId, Transaction)],
      decided: IndexedSeq[TransactionOutcome] => Unit,
      journal: IndexedSeq[(State, GroupAdvance)] => Unit): Unit = {
    val runs = TransactionRound.ranked(txns)
    val table = new TransactionRound.Chains
    addPlain(table, newU)
    // Pass 1: each access's chain, and how many accesses each chain has.
    var total = 0
    runs.foreach(r => total += r.txn.reads.length + r.txn.writes.length)
    val chainOf = new Array[Int](total)
    var a = 0
    var rank = 0
    while (rank < runs.length) {
      val txn = runs(rank).txn
      a = locate(table, txn.reads, chainOf, a)
      a = locate(table, txn.writes, chainOf, a)
      runs(rank).decideWithoutReads()
      rank += 1
    }
    // Pass 2: every chain's accesses in one array, chain c in [start(c), start(c + 1)).
    val start = table.starts()
    val next = Arrays.copyOf(start, start.length)
    val accesses = new Array[Long](total)
    a = 0
    rank = 0
    while (rank < runs.length) {
      val txn = runs(rank).txn
      var i = 0
      while (i < txn.reads.length) {
        val c = chainOf(a); accesses(next(c)) = ChainOp.access(rank, write = false, i); next(c) += 1; a += 1; i += 1
      }
      i = 0
      while (i < txn.writes.length) {
        val c = chainOf(a); accesses(next(c)) = ChainOp.access(rank, write = true, i); next(c) += 1; a += 1; i += 1
      }
      rank += 1
    }
    val built = execute(newU, table, accesses, start, runs)
    decided(ArraySeq.unsafeWrapArray(runs.map(_.outcome)))
    journal(advances(newU, built))
    feedChanges(newU, built)
  }

  // The chain of each of `keys` into chainOf(a...), counted; returns the next a.
  private def locate(
      table: TransactionRound.Chains, keys: IndexedSeq[StateKey], chainOf: Array[Int], from: Int): Int = {
    var a = from
    var i = 0
    while (i < keys.length) {
      val k = keys(i)
      val c = table.chainOf(stateIndex.get(k.state).intValue, k.key)
      table.counts(c) += 1
      chainOf(a) = c
      a += 1; i += 1
    }
    a
  }

  /** Replays one journaled round of the only member State: its plain updates below U and the journaled pairs. */
  private def replayRound(advance: GroupAdvance): Unit = {
    val table = new TransactionRound.Chains
    addPlain(table, advance.updateProgress)
    advance.pairs.iterator.zipWithIndex.foreach { case (p, i) =>
      table.addOther(0, new Key(p.key), new ChainOp.Put(p.time, i.toLong, p.value))
    }
    feedChanges(advance.updateProgress, execute(advance.updateProgress, table, Array.emptyLongArray, null, null))
  }

  // A chain per (State, key) with a staged plain update below `newU`, the updates in arrival order.
  private def addPlain(table: TransactionRound.Chains, newU: Long): Unit = {
    var arrival = 0L
    states.indices.foreach { s =>
      states(s).partitionsInternal.foreach { p =>
        val ready = p.takeStagedBefore(newU)
        if (ready != null) {
          var i = 0
          while (i < ready.size) {
            table.addOther(s, ready.keys(i),
              new ChainOp.Plain(ready.times(i), arrival, ready.values(i), ready.origins(i)))
            arrival += 1; i += 1
          }
        }
      }
    }
  }

  // Runs the chains (accesses of chain c in start(c) until start(c + 1); `start` null: none), and routes
  // the rule failures to their States' rejected logs.
  private def execute(newU: Long, table: TransactionRound.Chains, accesses: Array[Long], start: Array[Int],
      runs: Array[TransactionRun]): Array[OperationChain] = {
    val horizons = states.map(s => math.min(s.fetchProgress, newU)).toArray
    val journaled = states.map(_.journaled).toArray
    // New keys are published by their chains: room for them first (one chain per key, at most).
    val perPartition = states.map(s => new Array[Int](s.partitionCount)).toArray
    val built = new Array[OperationChain](table.size)
    var c = 0
    while (c < built.length) {
      val s = table.stateOf(c)
      val key = table.keys(c)
      val p = key.partition(perPartition(s).length)
      perPartition(s)(p) += 1
      val others = table.others(c)
      val sorted = if (others == null) OperationChain.noOthers
      else {
        val arr = others.toArray
        Arrays.sort(arr, ChainOp.Order)
        arr
      }
      val partition = states(s).partitionsInternal(p)
      built(c) =
        if (start == null) OperationChain.ofOthers(partition, key, s, sorted, horizons(s), journaled(s))
        else new OperationChain(partition, key, s, sorted, accesses, start(c), start(c + 1), runs, horizons(s),
          journaled(s))
      c += 1
    }
    var s = 0
    while (s < perPartition.length) {
      var p = 0
      while (p < perPartition(s).length) {
        if (perPartition(s)(p) > 0) states(s).partitionsInternal(p).reserveKeys(perPartition(s)(p))
        p += 1
      }
      s += 1
    }
    scheduler.run(built)
    built.foreach(c => c.rejected.foreach(states(c.state).rejectApplied))
    built
  }

  // Per durable member, the advance its journal records: U and the pairs the round's transactions put in it.
  private def advances(newU: Long, built: Array[OperationChain]): IndexedSeq[(State, GroupAdvance)] =
    states.indices.filter(states(_).journaled).map { s =>
      val pairs = built.iterator.filter(c => c.state == s && c.transactionPuts.nonEmpty).flatMap { c =>
        c.transactionPuts.iterator.map { case (t, v) => GroupAdvance.Pair(c.key.bytes, t, v) }
      }.toIndexedSeq
      states(s) -> GroupAdvance(newU, pairs)
    }

  // Members with an open change feed get the pairs this round made final, before U is published.
  private def feedChanges(newU: Long, built: Array[OperationChain]): Unit =
    states.foreach { state =>
      val feed = state.changeFeed
      if (feed != null) {
        val from = state.updateProgress
        val newly: Array[Array[Change]] = state.partitionsInternal.map { p =>
          p.changesOf(built.iterator.filter(_.partition eq p).map(_.key), from, newU)
        }
        feed.publish(newly, newU)
      }
    }
}

private[sharedstate] object TransactionRound {

  /**
   * Replays a journaled round in `state` (a member rebuilt alone from its journal): the staged plain
   * updates below the round's U and the pairs its transactions put, per key in (time, tie) order, on
   * the calling thread. The caller publishes U.
   */
  def replay(state: State, advance: GroupAdvance): Unit =
    new TransactionRound(IndexedSeq(state), ChainScheduler.inline).replayRound(advance)

  /** The transactions in (time, id) order, each with its rank. */
  private def ranked(txns: IndexedSeq[(TransactionId, Transaction)]): Array[TransactionRun] = {
    val sorted = txns.toArray
    Arrays.sort(
      sorted,
      (a: (TransactionId, Transaction), b: (TransactionId, Transaction)) => {
        val c = java.lang.Long.compare(a._2.time, b._2.time)
        if (c != 0) c else a._1.compare(b._1)
      }
    )
    val runs = new Array[TransactionRun](sorted.length)
    var i = 0
    while (i < runs.length) { runs(i) = new TransactionRun(sorted(i)._1, sorted(i)._2, i); i += 1 }
    runs
  }

  /**
   * The round's chains as they are found: each one's State, key, plain updates or replayed pairs, access
   * count. Found by (State, key) in an open-addressing index of chain numbers (linear probing, load at
   * most 1/2), not a HashMap of boxed numbers: a round looks up every access of every transaction here
   * on one thread before any chain runs, so this is on the round's serial path.
   */
  private final class Chains {
    private var n = 0
    var stateOf = new Array[Int](64)
    var keys = new Array[Key](64)
    var others = new Array[ArrayBuffer[ChainOp]](64)
    var counts = new Array[Int](64)
    // Chain number + 1 per slot (0: free); capacity a power of two, at least twice the chains.
    private var index = new Array[Int](128)

    def size: Int = n

    private def hashOf(s: Int, key: Key): Int = {
      val h = key.hashCode * 31 + s
      h ^ (h >>> 16)
    }

    def chainOf(s: Int, key: Key): Int = {
      val mask = index.length - 1
      var i = hashOf(s, key) & mask
      var c = index(i) - 1
      while (c >= 0) {
        if (stateOf(c) == s && ((keys(c) eq key) || keys(c).equals(key))) return c
        i = (i + 1) & mask
        c = index(i) - 1
      }
      if (n == keys.length) {
        stateOf = Arrays.copyOf(stateOf, n * 2); keys = Arrays.copyOf(keys, n * 2)
        others = Arrays.copyOf(others, n * 2); counts = Arrays.copyOf(counts, n * 2)
      }
      stateOf(n) = s; keys(n) = key
      n += 1
      if (2 * n > index.length) grow() else index(i) = n
      n - 1
    }

    // Doubles the index and puts every chain in it again (the newest included).
    private def grow(): Unit = {
      index = new Array[Int](index.length * 2)
      val mask = index.length - 1
      var c = 0
      while (c < n) {
        var i = hashOf(stateOf(c), keys(c)) & mask
        while (index(i) != 0) i = (i + 1) & mask
        index(i) = c + 1
        c += 1
      }
    }

    def addOther(s: Int, key: Key, op: ChainOp): Unit = {
      val c = chainOf(s, key)
      if (others(c) == null) others(c) = ArrayBuffer.empty
      others(c) += op
    }

    /** Where each chain's accesses start in one array of all of them (n + 1 entries: the last is the total). */
    def starts(): Array[Int] = {
      val start = new Array[Int](n + 1)
      var c = 0
      while (c < n) { start(c + 1) = start(c) + counts(c); c += 1 }
      start
    }
  }
}
