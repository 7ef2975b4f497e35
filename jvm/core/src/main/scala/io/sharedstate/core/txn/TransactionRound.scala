package io.sharedstate.core.txn

import io.sharedstate.core.{Change, Key, State, StatePartition}
import java.util.Arrays
import scala.collection.mutable
import scala.collection.mutable.ArrayBuffer

/**
 * One advance of a group's U to `newU` when transactions are ready: takes every member's staged plain
 * updates below `newU` and the given transactions (all below `newU`), builds one chain per (State,
 * key) they touch, runs the chains, routes rule failures to each State's rejected log, hands the
 * change feeds their new pairs and returns the outcomes in (time, id) order. Publishing U is the
 * caller's, after this returns (everything below it is applied by then).
 */
private[sharedstate] final class TransactionRound(states: IndexedSeq[State], scheduler: ChainScheduler) {
  private val stateIndex: Map[String, Int] = states.iterator.map(_.name).zipWithIndex.toMap

  def run(newU: Long, txns: IndexedSeq[(TransactionId, Transaction)]): IndexedSeq[TransactionOutcome] = {
    val sorted = txns.sortBy { case (id, t) => (t.time, id) }
    val runs = sorted.iterator.zipWithIndex.map { case ((id, t), rank) => new TransactionRun(id, t, rank) }.toIndexedSeq
    val chains = mutable.LinkedHashMap.empty[(Int, Key), ArrayBuffer[ChainOp]]
    def chainOf(s: Int, key: Key): ArrayBuffer[ChainOp] = chains.getOrElseUpdate((s, key), ArrayBuffer.empty)
    var arrival = 0L
    states.indices.foreach { s =>
      states(s).partitionsInternal.foreach { p =>
        val ready = p.takeStagedBefore(newU)
        if (ready != null) {
          var i = 0
          while (i < ready.size) {
            chainOf(s, ready.keys(i)) += new ChainOp.Plain(ready.times(i), arrival, ready.values(i), ready.origins(i))
            arrival += 1; i += 1
          }
        }
      }
    }
    runs.foreach { r =>
      r.txn.reads.iterator.zipWithIndex.foreach { case (k, i) =>
        chainOf(stateIndex(k.state), k.key) += new ChainOp.Read(r, i)
      }
      r.txn.writes.iterator.zipWithIndex.foreach { case (k, j) =>
        chainOf(stateIndex(k.state), k.key) += new ChainOp.Write(r, j)
      }
      r.decideWithoutReads()
    }
    val horizons = states.map(s => math.min(s.fetchProgress, newU))
    val built = chains.iterator.map { case ((s, key), ops) =>
      val arr = ops.toArray
      Arrays.sort(arr, ChainOp.Order)
      new OperationChain(states(s).partitionOf(key), key, arr, horizons(s))
    }.toArray
    // New keys are published by their chains: room for them first (one chain per key, at most).
    built.groupBy(_.partition).foreach { case (p, cs) => p.reserveKeys(cs.length) }
    scheduler.run(built)
    val partitionOwner = new java.util.IdentityHashMap[StatePartition, Int]()
    states.indices.foreach(s => states(s).partitionsInternal.foreach(p => partitionOwner.put(p, s)))
    built.foreach(c => c.rejected.foreach(states(partitionOwner.get(c.partition)).rejectApplied))
    feedChanges(newU, built)
    runs.map(_.outcome)
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
