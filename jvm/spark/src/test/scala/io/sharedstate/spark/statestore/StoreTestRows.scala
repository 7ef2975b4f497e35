package io.sharedstate.spark.statestore

import java.nio.file.Files
import java.util.UUID

import org.apache.hadoop.conf.Configuration
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.execution.streaming.runtime.StreamExecution
import org.apache.spark.sql.execution.streaming.state.{NoPrefixKeyStateEncoderSpec, StateStoreConf, StateStoreId}
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.types.{StringType, StructType}
import org.apache.spark.unsafe.types.UTF8String

/**
 * String keys and string values as UnsafeRows, and a provider on a fresh directory (string values unless
 * another value schema is given), for the store's tests.
 */
private[statestore] object StoreTestRows {
  val keySchema: StructType = new StructType().add("k", StringType)
  val valueSchema: StructType = new StructType().add("v", StringType)
  private val keyProj = UnsafeProjection.create(keySchema)
  private val valueProj = UnsafeProjection.create(valueSchema)

  def key(k: String): UnsafeRow = keyProj(InternalRow(UTF8String.fromString(k))).copy()
  def value(v: String): UnsafeRow = valueProj(InternalRow(UTF8String.fromString(v))).copy()

  def provider(
      dir: String, minDeltasForSnapshot: Int = 10, valueSchema: StructType = valueSchema): SharedStateStoreProvider = {
    val hadoopConf = new Configuration
    hadoopConf.set(StreamExecution.RUN_ID_KEY, UUID.randomUUID().toString)
    val sqlConf = new SQLConf
    sqlConf.setConf(SQLConf.STATE_STORE_COMMIT_VALIDATION_ENABLED, false)
    sqlConf.setConf(SQLConf.STATE_STORE_MIN_DELTAS_FOR_SNAPSHOT, minDeltasForSnapshot)
    val p = new SharedStateStoreProvider
    p.init(
      StateStoreId(dir, 0, 0),
      keySchema,
      valueSchema,
      NoPrefixKeyStateEncoderSpec(keySchema),
      useColumnFamilies = false,
      new StateStoreConf(sqlConf),
      hadoopConf,
      useMultipleValuesPerKey = false,
      None
    )
    p
  }

  def newDir(prefix: String): String = Files.createTempDirectory(prefix).toString
}
