package io.sharedstate.core.txn

import io.sharedstate.core.{Change, GroupAdvance, Key, State, StatePartition}
import java.util.Arrays
import scala.collection.mutable
import scala.collection.mutable.ArrayBuffer

/**
 * One advance of a group's U to `newU` when transactions are ready: takes every member's staged plain
 * updates below `newU` and the given transactions (all below `newU`), builds one chain per (State,
 * key) they touch, runs the chains, routes rule failures to each State's rejected log, journals in
 * each durable member the pairs the transactions put there, hands the change feeds their new pairs and
 * returns the outcomes in (time, id) order. Publishing U is the caller's, after this returns
 * (everything below it is applied, and journaled, by then).
 */
private[sharedstate] final class TransactionRound(states: IndexedSeq[State], scheduler: ChainScheduler) {
  private val stateIndex: Map[String, Int] = states.iterator.map(_.name).zipWithIndex.toMap

  def run(newU: Long, txns: IndexedSeq[(TransactionId, Transaction)],
      decided: IndexedSeq[TransactionOutcome] => Unit,
      journal: IndexedSeq[(State, GroupAdvance)] => Unit): Unit = {
    val sorted = txns.sortBy { case (id, t) => (t.time, id) }
    val runs = sorted.iterator.zipWithIndex.map { case ((id, t), rank) => new TransactionRun(id, t, rank) }.toIndexedSeq
    val chains = plainChains(newU)
    def chainOf(s: Int, key: Key): ArrayBuffer[ChainOp] = chains.getOrElseUpdate((s, key), ArrayBuffer.empty)
    runs.foreach { r =>
      r.txn.reads.iterator.zipWithIndex.foreach { case (k, i) =>
        chainOf(stateIndex(k.state), k.key) += new ChainOp.Read(r, i)
      }
      r.txn.writes.iterator.zipWithIndex.foreach { case (k, j) =>
        chainOf(stateIndex(k.state), k.key) += new ChainOp.Write(r, j)
      }
      r.decideWithoutReads()
    }
    val built = execute(newU, chains)
    decided(runs.map(_.outcome))
    journal(advances(newU, built))
    feedChanges(newU, built)
  }

  /** Replays one journaled round of the only member State: its plain updates below U and the journaled pairs. */
  private def replayRound(advance: GroupAdvance): Unit = {
    val chains = plainChains(advance.updateProgress)
    advance.pairs.iterator.zipWithIndex.foreach { case (p, i) =>
      chains.getOrElseUpdate((0, new Key(p.key)), ArrayBuffer.empty) += new ChainOp.Put(p.time, i.toLong, p.value)
    }
    feedChanges(advance.updateProgress, execute(advance.updateProgress, chains))
  }

  // One chain per (State, key) with a staged plain update below `newU`, in arrival order.
  private def plainChains(newU: Long): mutable.LinkedHashMap[(Int, Key), ArrayBuffer[ChainOp]] = {
    val chains = mutable.LinkedHashMap.empty[(Int, Key), ArrayBuffer[ChainOp]]
    var arrival = 0L
    states.indices.foreach { s =>
      states(s).partitionsInternal.foreach { p =>
        val ready = p.takeStagedBefore(newU)
        if (ready != null) {
          var i = 0
          while (i < ready.size) {
            chains.getOrElseUpdate((s, ready.keys(i)), ArrayBuffer.empty) +=
              new ChainOp.Plain(ready.times(i), arrival, ready.values(i), ready.origins(i))
            arrival += 1; i += 1
          }
        }
      }
    }
    chains
  }

  // Sorts and runs the chains, and routes the rule failures to their States' rejected logs.
  private def execute(
      newU: Long, chains: mutable.LinkedHashMap[(Int, Key), ArrayBuffer[ChainOp]]): Array[OperationChain] = {
    val horizons = states.map(s => math.min(s.fetchProgress, newU))
    val journaled = states.map(_.journaled)
    val built = chains.iterator.map { case ((s, key), ops) =>
      val arr = ops.toArray
      Arrays.sort(arr, ChainOp.Order)
      new OperationChain(states(s).partitionOf(key), key, arr, horizons(s), journaled(s))
    }.toArray
    // New keys are published by their chains: room for them first (one chain per key, at most).
    built.groupBy(_.partition).foreach { case (p, cs) => p.reserveKeys(cs.length) }
    scheduler.run(built)
    val partitionOwner = new java.util.IdentityHashMap[StatePartition, Int]()
    states.indices.foreach(s => states(s).partitionsInternal.foreach(p => partitionOwner.put(p, s)))
    built.foreach(c => c.rejected.foreach(states(partitionOwner.get(c.partition)).rejectApplied))
    built
  }

  // Per durable member, the advance its journal records: U and the pairs the round's transactions put in it.
  private def advances(newU: Long, built: Array[OperationChain]): IndexedSeq[(State, GroupAdvance)] =
    states.filter(_.journaled).map { state =>
      val own = state.partitionsInternal.toSet
      val pairs = built.iterator.filter(c => own(c.partition) && c.transactionPuts.nonEmpty).flatMap { c =>
        c.transactionPuts.iterator.map { case (t, v) => GroupAdvance.Pair(c.key.bytes, t, v) }
      }.toIndexedSeq
      state -> GroupAdvance(newU, pairs)
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
}
