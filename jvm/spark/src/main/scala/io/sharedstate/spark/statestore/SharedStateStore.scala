package io.sharedstate.spark.statestore

import org.apache.spark.TaskContext
import org.apache.spark.sql.catalyst.expressions.UnsafeRow
import org.apache.spark.sql.sharedstate.StateStoreErrorsBridge
import org.apache.spark.sql.execution.streaming.state.{
  KeyStateEncoderSpec,
  StateStore,
  StateStoreCheckpointInfo,
  StateStoreMetrics
}
import org.apache.spark.sql.types.StructType

/**
 * The store a task updates to turn `version` into `version + 1`. It writes straight into the
 * provider's live map, which keeps, per key it touched, the address of the value before its first
 * change: abort puts those back, and commit writes the touched keys with their new values as the
 * version's changelog. So a batch costs its changes only (no copy of the map), and the changelog is
 * the undo log's keys.
 */
private[sharedstate] final class SharedStateStore(
    protected val provider: SharedStateStoreProvider,
    val version: Long,
    map: StoreRowMap,
    forceSnapshotOnCommit: Boolean,
    loadedFromFiles: Boolean)
    extends StateStore with StoreRowReads {
  protected def rows: StoreRowMap = map

  private sealed trait Phase
  private case object Updating extends Phase
  private case object Committed extends Phase
  private case object Aborted extends Phase

  @volatile private var phase: Phase = Updating
  private var changelogBytes = 0L
  private var commitMs = 0L
  private var changedKeys = 0L

  // The map keeps this store's undo log (addresses of the values before its changes).
  map.beginBatch()

  Option(TaskContext.get()).foreach(_.addTaskCompletionListener[Unit] { _ =>
    if (phase == Updating) abort()
  })

  override def put(key: UnsafeRow, value: UnsafeRow, colFamilyName: String): Unit = {
    provider.checkColumnFamily(colFamilyName)
    require(value != null, "Cannot put a null value")
    checkUpdating("put")
    map.put(key, value)
  }

  override def remove(key: UnsafeRow, colFamilyName: String): Unit = {
    provider.checkColumnFamily(colFamilyName)
    checkUpdating("remove")
    map.remove(key)
  }

  override def commit(): Long = {
    try {
      checkUpdating("commit")
      val started = System.nanoTime()
      val newVersion = version + 1
      changelogBytes = provider.files.write(provider.files.changelog(newVersion), StoreFiles.ChangelogMagic) { out =>
        map.foreachChange((k, v) => out.write(k, v))
      }
      if (forceSnapshotOnCommit) provider.writeSnapshot(newVersion, map.frozen())
      changedKeys = map.changedKeys.toLong
      // The rows point into pages that never change: the listeners may keep them.
      val changes =
        if (!StoreCommitHook.active) null
        else {
          val buf = new scala.collection.mutable.ArrayBuffer[(UnsafeRow, UnsafeRow)](map.changedKeys)
          map.foreachChange((k, v) => buf += ((k, v)))
          buf.toSeq
        }
      map.endBatch()
      commitMs = (System.nanoTime() - started) / 1000000L
      map.version = newVersion
      phase = Committed
      provider.committed(this, map)
      if (changes != null)
        StoreCommitHook.committed(id, newVersion, changes, provider.keySchema, provider.valueSchema,
          provider.storeConf, provider.hadoopConf)
      if (provider.storeConf.commitValidationEnabled)
        StateStore.reportCommitToCoordinator(newVersion, id, provider.hadoopConf)
      newVersion
    } catch {
      case e: Throwable => throw StateStoreErrorsBridge.failedToCommit(this.toString, e)
    }
  }

  override def abort(): Unit = {
    if (phase == Updating) {
      phase = Aborted
      map.rollback()
      provider.closed(this)
    }
  }

  override def metrics: StateStoreMetrics = {
    val custom = Map(
      SharedStateStoreMetrics.ChangelogBytes -> changelogBytes,
      SharedStateStoreMetrics.ChangedKeys -> (if (phase == Updating) map.changedKeys.toLong else changedKeys),
      SharedStateStoreMetrics.CommitDurationMs -> commitMs,
      SharedStateStoreMetrics.LoadedFromFiles -> (if (loadedFromFiles) 1L else 0L),
      SharedStateStoreMetrics.ForceSnapshot -> (if (forceSnapshotOnCommit) 1L else 0L)
    )
    StateStoreMetrics(map.size, map.estimatedBytes, custom, Map.empty)
  }

  override def getStateStoreCheckpointInfo(): StateStoreCheckpointInfo =
    StateStoreCheckpointInfo(id.partitionId, version + 1, None, None)

  override def hasCommitted: Boolean = phase == Committed

  override def allColumnFamilyNames: Set[String] = Set(StateStore.DEFAULT_COL_FAMILY_NAME)

  override def createColFamilyIfAbsent(
      colFamilyName: String,
      keySchema: StructType,
      valueSchema: StructType,
      keyStateEncoderSpec: KeyStateEncoderSpec,
      useMultipleValuesPerKey: Boolean,
      isInternal: Boolean): Unit = provider.checkColumnFamily(colFamilyName)

  override def removeColFamilyIfExists(colFamilyName: String): Boolean = {
    provider.checkColumnFamily(colFamilyName)
    false
  }

  override def putList(key: UnsafeRow, values: Array[UnsafeRow], colFamilyName: String): Unit =
    throw provider.unsupported("putList")
  override def merge(key: UnsafeRow, value: UnsafeRow, colFamilyName: String): Unit =
    throw provider.unsupported("merge")
  override def mergeList(key: UnsafeRow, values: Array[UnsafeRow], colFamilyName: String): Unit =
    throw provider.unsupported("mergeList")

  override def toString: String = s"SharedStateStore[id=${provider.stateStoreId}, version=$version]"

  private def checkUpdating(op: String): Unit =
    if (phase != Updating) throw new IllegalStateException(s"Cannot $op after already committed or aborted")
}
