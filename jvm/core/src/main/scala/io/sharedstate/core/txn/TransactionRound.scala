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
 * The chains are built without an object per access, and in parallel (TStream's partitioned
 * preparation): the transactions are ranked by (time, id) once, then the round is prepared in parts,
 * part u owning partition q of every member when q % parts = u (the State partition of the key decides,
 * so a part's keys, staged plain updates and key tables are its own). Each part, on whichever worker of
 * the scheduler claims it, takes its partitions' staged updates, finds the chain of each of its accesses
 * (a hash look-up per access, in a table of its own), lays its chains' accesses out in one array, each
 * chain a slice of it, already in the order they apply in (ranks ascending, a transaction's reads
 * before its writes): no sort; reserves room for its new keys, and decides its share of the
 * transactions that read nothing. Only plain updates and replayed pairs are objects, sorted per chain.
 * The chains run once every part is prepared.
 */
private[sharedstate] final class TransactionRound(states: IndexedSeq[State], scheduler: ChainScheduler,
    parallelFrom: Long = 0L) {
  private val names: Array[String] = states.map(_.name).toArray
  private val stateIndex: java.util.HashMap[String, Integer] = {
    val m = new java.util.HashMap[String, Integer]()
    states.indices.foreach(i => m.put(states(i).name, i))
    m
  }
  private val partitionCounts: Array[Int] = states.map(_.partitionCount).toArray
  // Parts a round is prepared in: one per worker, at most one per partition of the largest member.
  private val parts: Int = math.max(1, math.min(scheduler.parallelism, partitionCounts.max))

  def run(newU: Long, txns: IndexedSeq[(TransactionId, Transaction)],
      decided: IndexedSeq[TransactionOutcome] => Unit,
      journal: IndexedSeq[(State, GroupAdvance)] => Unit): Unit = {
    val runs = TransactionRound.ranked(txns)
    val horizons = horizonsAt(newU)
    val journaled = states.map(_.journaled).toArray
    var accesses = 0L
    runs.foreach(r => accesses += r.txn.reads.length + r.txn.writes.length)
    val built =
      if (accesses < parallelFrom) ChainScheduler.inline.prepareAndRun(1,
        u => prepare(u, 1, newU, runs, horizons, journaled))
      else scheduler.prepareAndRun(parts, u => prepare(u, parts, newU, runs, horizons, journaled))
    built.foreach(c => c.rejected.foreach(states(c.state).rejectApplied))
    decided(ArraySeq.unsafeWrapArray(runs.map(_.outcome)))
    journal(advances(newU, built))
    feedChanges(newU, built)
  }

  private def horizonsAt(newU: Long): Array[Long] = {
    val h = new Array[Long](states.length)
    var s = 0
    while (s < h.length) { h(s) = math.min(states(s).fetchProgress, newU); s += 1 }
    h
  }

  // Part u of a round: the chains of the keys in the partitions it owns (see the class comment).
  private def prepare(u: Int, parts: Int, newU: Long, runs: Array[TransactionRun], horizons: Array[Long],
      journaled: Array[Boolean]): Array[OperationChain] = {
    val table = new TransactionRound.Chains
    addPlain(table, newU, u, parts)
    // Pass 1: each of the part's accesses (as ChainOp.access) and its chain; how many each chain has.
    val found = new TransactionRound.Found
    var rank = 0
    while (rank < runs.length) {
      val txn = runs(rank).txn
      locate(table, txn.reads, u, parts, rank, write = false, found)
      locate(table, txn.writes, u, parts, rank, write = true, found)
      if (rank % parts == u) runs(rank).decideWithoutReads()
      rank += 1
    }
    // Pass 2: every chain's accesses in one array, chain c in [start(c), start(c + 1)).
    val start = table.starts()
    val next = Arrays.copyOf(start, start.length)
    val accesses = new Array[Long](found.n)
    var j = 0
    while (j < found.n) {
      val c = found.chains(j)
      accesses(next(c)) = found.accesses(j); next(c) += 1
      j += 1
    }
    build(table, accesses, start, runs, horizons, journaled)
  }

  // The index of the member State named `name`: the names a transaction carries are most often the
  // members' own String objects, so a reference compare usually finds it without hashing.
  private def indexOfState(name: String): Int = {
    var s = 0
    while (s < names.length) { if (names(s) eq name) return s; s += 1 }
    stateIndex.get(name).intValue
  }

  // Of `keys`, those in part u: their chains and accesses into `found`, each chain counted.
  private def locate(table: TransactionRound.Chains, keys: IndexedSeq[StateKey], u: Int, parts: Int, rank: Int,
      write: Boolean, found: TransactionRound.Found): Unit = {
    var i = 0
    while (i < keys.length) {
      val k = keys(i)
      val s = indexOfState(k.state)
      if (k.key.partition(partitionCounts(s)) % parts == u) {
        val c = table.chainOf(s, k.key)
        table.counts(c) += 1
        found.add(c, ChainOp.access(rank, write, i))
      }
      i += 1
    }
  }

  /** Replays one journaled round of the only member State: its plain updates below U and the journaled pairs. */
  private def replayRound(advance: GroupAdvance): Unit = {
    val newU = advance.updateProgress
    val table = new TransactionRound.Chains
    addPlain(table, newU, 0, 1)
    advance.pairs.iterator.zipWithIndex.foreach { case (p, i) =>
      table.addOther(0, new Key(p.key), new ChainOp.Put(p.time, i.toLong, p.value))
    }
    val built = build(table, Array.emptyLongArray, null, null, horizonsAt(newU), states.map(_.journaled).toArray)
    scheduler.run(built)
    built.foreach(c => c.rejected.foreach(states(c.state).rejectApplied))
    feedChanges(newU, built)
  }

  // A chain per (State, key) of part u with a staged plain update below `newU`, the updates in arrival
  // order (a key's updates are all staged in its partition, so a count per part orders them).
  private def addPlain(table: TransactionRound.Chains, newU: Long, u: Int, parts: Int): Unit = {
    var arrival = 0L
    states.indices.foreach { s =>
      val ps = states(s).partitionsInternal
      var q = u
      while (q < ps.length) {
        val p = ps(q)
        q += parts
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

  // The chains of `table` (accesses of chain c in start(c) until start(c + 1); `start` null: none), with
  // room reserved in their partitions for the keys they may publish.
  private def build(table: TransactionRound.Chains, accesses: Array[Long], start: Array[Int],
      runs: Array[TransactionRun], horizons: Array[Long], journaled: Array[Boolean]): Array[OperationChain] = {
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
    val order = packedOrder(txns)
    val runs = new Array[TransactionRun](txns.length)
    if (order != null) {
      var i = 0
      while (i < runs.length) { val (id, t) = txns(order(i)); runs(i) = new TransactionRun(id, t, i); i += 1 }
    } else {
      val sorted = txns.toArray
      Arrays.sort(
        sorted,
        (a: (TransactionId, Transaction), b: (TransactionId, Transaction)) => {
          val c = java.lang.Long.compare(a._2.time, b._2.time)
          if (c != 0) c else a._1.compare(b._1)
        }
      )
      var i = 0
      while (i < runs.length) { runs(i) = new TransactionRun(sorted(i)._1, sorted(i)._2, i); i += 1 }
    }
    runs
  }

  /**
   * The (time, id) order of `txns` as positions, by one sort of primitive longs, when they come in id
   * order (as one writer commits them: epoch by epoch, task by task) and their times span few enough
   * values that a time and a position fit in one long: (time - least) above the position, so the longs'
   * order is time, then position, which is then id. Null otherwise (the caller sorts by comparison).
   */
  private[txn] def packedOrder(txns: IndexedSeq[(TransactionId, Transaction)]): Array[Int] = {
    val n = txns.length
    if (n < 2) return Array.range(0, n)
    var least = Long.MaxValue
    var most = Long.MinValue
    var i = 0
    var previous: TransactionId = null
    while (i < n) {
      val (id, t) = txns(i)
      if (previous != null && previous.compare(id) >= 0) return null
      previous = id
      if (t.time < least) least = t.time
      if (t.time > most) most = t.time
      i += 1
    }
    val bits = 32 - Integer.numberOfLeadingZeros(n)
    val span = most - least // negative if it overflowed
    if (span < 0 || span >= (1L << (63 - bits))) return null
    val keys = new Array[Long](n)
    i = 0
    while (i < n) { keys(i) = ((txns(i)._2.time - least) << bits) | i; i += 1 }
    Arrays.sort(keys)
    val mask = (1L << bits) - 1
    val order = new Array[Int](n)
    i = 0
    while (i < n) { order(i) = (keys(i) & mask).toInt; i += 1 }
    order
  }

  /** A part's accesses as pass 1 finds them: each one's chain and its ChainOp.access, in rank order. */
  private final class Found {
    var n = 0
    var chains = new Array[Int](256)
    var accesses = new Array[Long](256)

    def add(chain: Int, access: Long): Unit = {
      if (n == chains.length) { chains = Arrays.copyOf(chains, n * 2); accesses = Arrays.copyOf(accesses, n * 2) }
      chains(n) = chain; accesses(n) = access; n += 1
    }
  }

  /**
   * The round's chains as they are found: each one's State, key, plain updates or replayed pairs, access
   * count. Found by (State, key) in an open-addressing index of chain numbers (linear probing, load at
   * most 1/2), not a HashMap of boxed numbers: a part looks up each of its accesses here before any
   * chain runs, so this is on the path every chain waits for.
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
