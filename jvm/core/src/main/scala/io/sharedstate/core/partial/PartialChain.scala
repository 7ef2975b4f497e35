package io.sharedstate.core.partial

import io.sharedstate.core.SharedStateException
import io.sharedstate.core.row.Bytes
import io.sharedstate.core.rules.UpdateRule
import java.util.concurrent.{Callable, ForkJoinPool}

/**
 * One key's chain of a partial State's updates, applied with the work split by instance. An update
 * of instance i is combined with instance i's value only (see [[PartialRule]]), so each instance's
 * values are a fold of its own updates, independent of the others: the folds run in parallel, one
 * per instance, and then the versions' instance sets (every instance's value as of each update)
 * are encoded in parallel slices of the chain. A hot key written by P writer tasks (DGS's global
 * aggregate) thus applies on up to P threads instead of one. The result equals [[PartialRule]]
 * applied update by update in the chain's order, failures included.
 */
private[sharedstate] object PartialChain {

  /** Chains shorter than this are applied update by update: splitting them costs more than it saves. */
  val Threshold = 4096

  /**
   * The instance set after each update of the chain (`sets(p)`), or, for an update the State's
   * rule failed on, null with the reason in `failures(p)` (the instance keeps its value).
   */
  final class Result(val sets: Array[Array[Byte]], val failures: Array[String])

  /**
   * Applies `incoming` (the chain's values in (timestamp, arrival) order, each one instance's value
   * as the sink tags it) after `base` (the instance set the first update combines with, or null).
   * Null when the chain does not fit this path (an update carrying several instances, a malformed
   * base): the caller applies it update by update, which reports those the usual way.
   */
  def apply(inner: UpdateRule, base: Array[Byte], incoming: Array[Array[Byte]]): Result = {
    val n = incoming.length
    val of = new Array[Int](n) // each update's instance
    var p = 0
    while (p < n) {
      val v = incoming(p)
      if (v == null || v.length < 16 || Bytes.getInt(v, 0) != PartialValues.Magic || Bytes.getInt(v, 4) != 1)
        return null
      of(p) = Bytes.getInt(v, 8)
      p += 1
    }
    val baseInstances =
      try { if (base == null) Array.emptyIntArray else PartialValues.instances(base) }
      catch { case _: SharedStateException => return null }
    // Every instance that has a value somewhere in the chain, ascending (the stored order).
    val all = (baseInstances ++ of.distinct).distinct.sorted
    val slot = new Array[Int](n) // each update's index in `all`
    p = 0
    while (p < n) { slot(p) = java.util.Arrays.binarySearch(all, of(p)); p += 1 }
    val baseValues = all.map(i => if (base == null) null else PartialValues.valueOf(base, i))

    val after = new Array[Array[Byte]](n) // instance `of(p)`'s value after update p
    val failures = new Array[String](n)
    val positions = Array.fill(all.length)(Array.newBuilder[Int])
    p = 0
    while (p < n) { positions(slot(p)) += p; p += 1 }
    val folds = positions.indices.map(s => (s, positions(s).result())).filter(_._2.nonEmpty)
    inParallel(folds.map { case (s, ps) => () => fold(inner, baseValues(s), all(s), ps, incoming, after, failures) })

    // The instance sets, in slices that each start from every instance's value before the slice.
    val sets = new Array[Array[Byte]](n)
    val slices = math.max(1, math.min(ForkJoinPool.getCommonPoolParallelism + 1, n / Threshold))
    val starts = (0 until slices).map(k => (n.toLong * k / slices).toInt) :+ n
    val lastBefore = new Array[Array[Int]](slices) // per slice: each instance's last update before it (-1: base)
    val current = Array.fill(all.length)(-1)
    var k = 0
    p = 0
    while (k < slices) {
      while (p < starts(k)) { if (failures(p) == null) current(slot(p)) = p; p += 1 }
      lastBefore(k) = current.clone()
      k += 1
    }
    inParallel((0 until slices).map { k => () =>
      val cur = lastBefore(k)
      val values = new Array[Array[Byte]](all.length)
      var s = 0
      while (s < all.length) { values(s) = if (cur(s) < 0) baseValues(s) else after(cur(s)); s += 1 }
      var q = starts(k)
      while (q < starts(k + 1)) {
        if (failures(q) == null) {
          values(slot(q)) = after(q)
          sets(q) = encode(all, values)
        }
        q += 1
      }
    })
    new Result(sets, failures)
  }

  // Instance `ps`'s updates in order, each combined with the instance's value so far (a copy: a rule may change it).
  private def fold(inner: UpdateRule, start: Array[Byte], instance: Int, ps: Array[Int],
      incoming: Array[Array[Byte]], after: Array[Array[Byte]], failures: Array[String]): Unit = {
    var value = start
    var i = 0
    while (i < ps.length) {
      val p = ps(i)
      try {
        val v = inner.apply(if (value == null) null else value.clone(), PartialValues.valueOf(incoming(p), instance))
        if (v == null) throw new SharedStateException(s"update rule '${inner.name}' returned null")
        value = v
        after(p) = v
      } catch { case e: Exception => failures(p) = e.getMessage }
      i += 1
    }
  }

  // The instance set of the instances with a value (null: none yet), in `instances` order.
  private def encode(instances: Array[Int], values: Array[Array[Byte]]): Array[Byte] = {
    var count = 0
    var bytes = 0
    var s = 0
    while (s < values.length) {
      if (values(s) != null) { count += 1; bytes += values(s).length }
      s += 1
    }
    val header = 8 + 8 * count
    val out = new Array[Byte](header + bytes)
    Bytes.putInt(out, 0, PartialValues.Magic)
    Bytes.putInt(out, 4, count)
    var i = 0
    var end = 0
    s = 0
    while (s < values.length) {
      val v = values(s)
      if (v != null) {
        Bytes.putInt(out, 8 + 4 * i, instances(s))
        System.arraycopy(v, 0, out, header + end, v.length)
        end += v.length
        Bytes.putInt(out, 8 + 4 * count + 4 * i, end)
        i += 1
      }
      s += 1
    }
    out
  }

  // Runs the tasks on the common pool and the calling thread; rethrows the first failure.
  private def inParallel(tasks: Seq[() => Unit]): Unit =
    if (tasks.length == 1) tasks.head()
    else {
      val callables = new java.util.ArrayList[Callable[Unit]]()
      tasks.foreach(t => callables.add(() => t()))
      ForkJoinPool.commonPool().invokeAll(callables).forEach(_.get())
    }
}
