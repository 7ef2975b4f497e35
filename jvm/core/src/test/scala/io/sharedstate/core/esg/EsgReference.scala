package io.sharedstate.core.esg

import io.sharedstate.core.SharedStateException

import scala.collection.mutable
import scala.collection.mutable.ArrayBuffer

/** The ESG operations the Lincheck models call, so they run against the ESG or its reference. */
trait EsgApi {
  def add(timestamp: Long, payload: Int, source: Int): Unit
  def heartbeat(timestamp: Long, source: Int): Unit
  def get(reader: Int): EsgTuple[Int]
  def lowerBound(source: Int): Long
  def addSources(newSources: Set[Int], caller: Int): Boolean
  def removeSources(gone: Set[Int]): Boolean
  def addReaders(newReaders: Set[Int], caller: Int): Boolean
  def removeReaders(gone: Set[Int]): Boolean
}

final class RealEsg(esg: ElasticScaleGate[Int]) extends EsgApi {
  def add(timestamp: Long, payload: Int, source: Int): Unit = esg.add(timestamp, payload, source)
  def heartbeat(timestamp: Long, source: Int): Unit = esg.heartbeat(timestamp, source)
  def get(reader: Int): EsgTuple[Int] = esg.get(reader)
  def lowerBound(source: Int): Long = esg.lowerBound(source)
  def addSources(newSources: Set[Int], caller: Int): Boolean = esg.addSources(newSources, caller)
  def removeSources(gone: Set[Int]): Boolean = esg.removeSources(gone)
  def addReaders(newReaders: Set[Int], caller: Int): Boolean = esg.addReaders(newReaders, caller)
  def removeReaders(gone: Set[Int]): Boolean = esg.removeReaders(gone)
}

/**
 * The ESG's specification written as plainly as possible, for Lincheck's sequential specification:
 * all nodes in one sorted buffer, readers as indices into it. A node is delivered once it is not its
 * source's last node (a flush always passes); dummies and flushes are never delivered.
 */
final class EsgReference(sources: Int, readers: Int, startTime: Long) extends EsgApi {
  private sealed trait Kind
  private case object Tuple extends Kind
  private case object Mark extends Kind
  private case object Dummy extends Kind
  private case object Flush extends Kind
  private final class Node(val ts: Long, val source: Int, val kind: Kind, val item: EsgTuple[Int])

  private val nodes = ArrayBuffer.empty[Node]
  private val last = mutable.Map.empty[Int, Node] // active sources' last nodes
  private val retiredLast = mutable.Map.empty[Int, Node] // removed sources' flushes
  private val position = mutable.Map.empty[Int, Int] // active readers: nodes passed

  (0 until sources).foreach(s => insert(new Node(startTime, s, Dummy, null)))
  (0 until readers).foreach(r => position(r) = 0)

  private def insert(n: Node): Unit = {
    val at = nodes.lastIndexWhere(m => m.ts < n.ts || (m.ts == n.ts && m.source <= n.source)) + 1
    nodes.insert(at, n)
    last(n.source) = n
  }

  private def active(source: Int): Node =
    last.getOrElse(source, throw new SharedStateException(s"source $source is not a source"))

  private def append(timestamp: Long, source: Int, kind: Kind, item: EsgTuple[Int]): Unit = {
    if (timestamp < active(source).ts) throw new SharedStateException("out of order")
    insert(new Node(timestamp, source, kind, item))
  }

  def add(timestamp: Long, payload: Int, source: Int): Unit =
    append(timestamp, source, Tuple, new EsgTuple(timestamp, payload, source, false))

  def heartbeat(timestamp: Long, source: Int): Unit =
    append(timestamp, source, Mark, new EsgTuple(timestamp, 0, source, true))

  def get(reader: Int): EsgTuple[Int] = {
    var pos = position.getOrElse(reader, throw new SharedStateException(s"reader $reader is not a reader"))
    var found: EsgTuple[Int] = null
    var stop = false
    while (!stop && pos < nodes.size) {
      val n = nodes(pos)
      if (n.kind != Flush && last.get(n.source).exists(_ eq n)) stop = true
      else {
        pos += 1
        if (n.kind == Tuple || n.kind == Mark) { found = n.item; stop = true }
      }
    }
    position(reader) = pos
    found
  }

  def lowerBound(source: Int): Long = active(source).ts

  def addSources(newSources: Set[Int], caller: Int): Boolean = {
    val start = active(caller).ts + 1
    newSources.foldLeft(true) { (all, s) =>
      if (last.contains(s)) false else { retiredLast -= s; insert(new Node(start, s, Dummy, null)); all }
    }
  }

  def removeSources(gone: Set[Int]): Boolean = {
    if (last.keySet.forall(gone)) throw new SharedStateException("at least one must remain")
    gone.foldLeft(true) { (all, s) =>
      last.get(s) match {
        case None => false
        case Some(l) =>
          val flush = new Node(l.ts, s, Flush, null)
          insert(flush)
          last -= s
          retiredLast(s) = flush
          all
      }
    }
  }

  def addReaders(newReaders: Set[Int], caller: Int): Boolean = {
    val from = position.getOrElse(caller, throw new SharedStateException(s"reader $caller is not a reader"))
    newReaders.foldLeft(true) { (all, r) => if (position.contains(r)) false else { position(r) = from; all } }
  }

  def removeReaders(gone: Set[Int]): Boolean = {
    if (position.keySet.forall(gone)) throw new SharedStateException("at least one must remain")
    gone.foldLeft(true) { (all, r) => if (position.remove(r).isEmpty) false else all }
  }
}
