package io.sharedstate.spark.statestore

import org.apache.hadoop.conf.Configuration
import org.apache.spark.sql.catalyst.expressions.UnsafeRow
import org.apache.spark.sql.execution.streaming.state.{StateStoreConf, StateStoreId}
import org.apache.spark.sql.types.StructType

/**
 * Told of each version a [[SharedStateStoreProvider]] store commits, after the version is durable.
 * Called on the executor thread that commits, inside `commit()`: a listener that is slow makes the
 * batch slow, and one that throws fails the commit's task (Spark retries it; re-committing the same
 * version is idempotent, so a listener must be too).
 */
private[sharedstate] trait StoreCommitListener {

  /**
   * @param version the version just committed (the one `commit()` returns)
   * @param changes the keys written in that version, each with its new value, or null when removed;
   *                the rows are the store's own copies and stay valid after the call
   */
  def committed(
      id: StateStoreId,
      version: Long,
      changes: Iterable[(UnsafeRow, UnsafeRow)],
      keySchema: StructType,
      valueSchema: StructType,
      storeConf: StateStoreConf,
      hadoopConf: Configuration): Unit
}
