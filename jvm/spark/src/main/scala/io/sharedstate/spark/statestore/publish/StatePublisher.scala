package io.sharedstate.spark.statestore.publish

import io.sharedstate.spark.cluster.{Incarnations, StateAccess, StateClient}
import io.sharedstate.spark.statestore.StoreCommitListener

import io.sharedstate.core.{EventTime, RejectedUpdate, UpdateBatch}
import java.util.concurrent.ConcurrentHashMap
import org.apache.hadoop.conf.Configuration
import org.apache.spark.TaskContext
import org.apache.spark.sql.catalyst.expressions.UnsafeRow
import org.apache.spark.sql.execution.streaming.state.{StateStoreConf, StateStoreId}
import org.apache.spark.sql.types.StructType
import org.apache.spark.unsafe.Platform

/**
 * Publishes each version a stateful operator's store commits into the State its query is mapped to
 * (`spark.sharedstate.statestore.publish.<query name>`, see [[PublishCheck]]), as that query's
 * writer: the task stages the version's written keys (with their new values) under epoch = version
 * and task = partition, then reports to the driver, which commits the epoch once every partition has
 * ([[PublishTargets]]). Only the primary store is published: operator 0 (the query's first stateful
 * operator), store `default` (a stream-stream join's four named stores are not).
 *
 * Removed keys (evictions after the watermark) publish nothing: the value stays valid in the State's
 * as-of history, which is what the window's or key's last value was. A key with a null column is a
 * rejected update (`null_key`), as in the sink.
 */
private[sharedstate] object StatePublisher extends StoreCommitListener {
  private val QueryIdKey = "sql.streaming.queryId"
  private val RunIdKey = "sql.streaming.runId"

  private final class Resolved(val target: PublishTarget, val shape: PublishedShape)

  // Per executor and query run: where it publishes (None: it does not), asked from the driver once.
  private val targets = new ConcurrentHashMap[(String, String), Option[Resolved]]()

  override def committed(
      id: StateStoreId,
      version: Long,
      changes: Iterable[(UnsafeRow, UnsafeRow)],
      keySchema: StructType,
      valueSchema: StructType,
      storeConf: StateStoreConf,
      hadoopConf: Configuration): Unit = {
    val ctx = TaskContext.get()
    if (ctx != null && id.operatorId == 0 && id.storeName == StateStoreId.DEFAULT_STORE_NAME) {
      Option(ctx.getLocalProperty(QueryIdKey)).foreach { query =>
        publish(query, Option(ctx.getLocalProperty(RunIdKey)).getOrElse(""), id, version, changes, keySchema,
          valueSchema, hadoopConf)
      }
    }
  }

  /** Publishes `version` of the store `id` of query `query` (run `run`), if the query is mapped to a State. */
  def publish(
      query: String,
      run: String,
      id: StateStoreId,
      version: Long,
      changes: Iterable[(UnsafeRow, UnsafeRow)],
      keySchema: StructType,
      valueSchema: StructType,
      hadoopConf: Configuration): Unit =
    resolved(query, run, keySchema, valueSchema).foreach { r =>
      val t = r.target
      val batch = OffsetLogBatch.read(id.checkpointRootLocation, version - 1, hadoopConf)
      val updates = toUpdates(r.shape, t.writer, version, changes, batch.watermarkMicros)
      val files = t.changelog.map(_.writeTask(t.writer, version, id.partitionId, updates)).getOrElse(Nil)
      val client = StateClient.of(t.state)
      Incarnations.check(t.state, t.incarnation, client.incarnation, "published state store")
      client.stage(t.writer, version, id.partitionId, updates)
      StateAccess.get.askDriver(PublishTargets.Published(t.state, t.writer, version, id.partitionId,
          batch.statePartitions, batch.watermarkMicros,
          files.map(f => (f.partition, f.path, f.size, f.modificationTime))))
    }

  private def resolved(query: String, run: String, keySchema: StructType, valueSchema: StructType): Option[Resolved] =
    targets.computeIfAbsent(
      (query, run),
      _ =>
        StateAccess.get.askDriver(PublishTargets.Resolve(query)).map { target =>
          val shape = new PublishedShape(keySchema, valueSchema)
          shape.check(target.spec)
          new Resolved(target, shape)
        }
    )

  /** The version's written keys as updates; removals publish nothing. */
  private[publish] def toUpdates(shape: PublishedShape, writer: String, version: Long,
      changes: Iterable[(UnsafeRow, UnsafeRow)], watermarkMicros: Long): UpdateBatch = {
    val encoder = shape.encoder
    val updates = new UpdateBatch
    changes.foreach { case (key, value) =>
      if (value != null) {
        val time = shape.time(key, watermarkMicros)
        if (shape.hasNullKey(key))
          updates.reject(RejectedUpdate(null, time, copy(value), RejectedUpdate.NullKey, writer, version,
              EventTime.MinusInfinity))
        else updates.add(encoder.bytes(key), time, copy(value))
      }
    }
    updates
  }

  private def copy(row: UnsafeRow): Array[Byte] = {
    val out = new Array[Byte](row.getSizeInBytes)
    row.writeToMemory(out, Platform.BYTE_ARRAY_OFFSET)
    out
  }
}
