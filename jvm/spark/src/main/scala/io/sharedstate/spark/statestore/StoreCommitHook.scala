package io.sharedstate.spark.statestore

import java.util.concurrent.atomic.AtomicReference

import org.apache.hadoop.conf.Configuration
import org.apache.spark.sql.catalyst.expressions.UnsafeRow
import org.apache.spark.sql.execution.streaming.state.{StateStoreConf, StateStoreId}
import org.apache.spark.sql.types.StructType

/**
 * The JVM-wide registry of [[StoreCommitListener]]s. Reads (one per commit) take an immutable
 * snapshot without a lock; registration is rare (plugin start) and copies the list. A store asks
 * [[active]] before building the changes of a version, so nothing is built when no one listens.
 */
private[sharedstate] object StoreCommitHook {
  private val listeners = new AtomicReference[Vector[StoreCommitListener]](Vector.empty)

  def register(listener: StoreCommitListener): Unit = {
    listeners.updateAndGet(l => if (l.contains(listener)) l else l :+ listener)
    ()
  }

  def unregister(listener: StoreCommitListener): Unit = {
    listeners.updateAndGet(_.filterNot(_ eq listener))
    ()
  }

  /** True when at least one listener is registered. */
  def active: Boolean = listeners.get.nonEmpty

  def committed(
      id: StateStoreId,
      version: Long,
      changes: Iterable[(UnsafeRow, UnsafeRow)],
      keySchema: StructType,
      valueSchema: StructType,
      storeConf: StateStoreConf,
      hadoopConf: Configuration): Unit = {
    val current = listeners.get
    var i = 0
    while (i < current.length) {
      current(i).committed(id, version, changes, keySchema, valueSchema, storeConf, hadoopConf)
      i += 1
    }
  }
}
