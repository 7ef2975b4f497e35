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
 * provider's live map and keeps, per key it touched, the value before its first change: abort puts
 * those back, and commit writes the touched keys with their new values as the version's changelog.
 * So a batch costs its changes only (no copy of the map), and the changelog is the undo log's keys.
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
  // Key -> its value before this store first changed it (null: it was absent).
  private val before = new java.util.HashMap[UnsafeRow, UnsafeRow]()
  private var changelogBytes = 0L
  private var commitMs = 0L

  Option(TaskContext.get()).foreach(_.addTaskCompletionListener[Unit] { _ =>
    if (phase == Updating) abort()
  })

  override def put(key: UnsafeRow, value: UnsafeRow, colFamilyName: String): Unit = {
    provider.checkColumnFamily(colFamilyName)
    require(value != null, "Cannot put a null value")
    checkUpdating("put")
    val k = key.copy()
    val prev = map.put(k, value.copy())
    if (!before.containsKey(k)) before.put(k, prev)
  }

  override def remove(key: UnsafeRow, colFamilyName: String): Unit = {
    provider.checkColumnFamily(colFamilyName)
    checkUpdating("remove")
    val prev = map.remove(key)
    if (prev != null && !before.containsKey(key)) before.put(key.copy(), prev)
  }

  override def commit(): Long = {
    try {
      checkUpdating("commit")
      val started = System.nanoTime()
      val newVersion = version + 1
      changelogBytes = provider.files.write(provider.files.changelog(newVersion), StoreFiles.ChangelogMagic) { out =>
        val keys = before.keySet.iterator
        while (keys.hasNext) {
          val k = keys.next()
          out.write(k, map.get(k))
        }
      }
      if (forceSnapshotOnCommit) provider.writeSnapshot(newVersion, map)
      commitMs = (System.nanoTime() - started) / 1000000L
      map.version = newVersion
      phase = Committed
      provider.committed(this, map)
      if (StoreCommitHook.active) {
        val changes = new Array[(UnsafeRow, UnsafeRow)](before.size)
        var i = 0
        before.keySet.forEach { k => changes(i) = (k, map.get(k)); i += 1 }
        StoreCommitHook.committed(id, newVersion, changes.toSeq, provider.keySchema, provider.valueSchema,
          provider.storeConf, provider.hadoopConf)
      }
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
      before.forEach { (k, prev) =>
        if (prev == null) map.remove(k) else map.put(k, prev)
        ()
      }
      before.clear()
      provider.closed(this)
    }
  }

  override def metrics: StateStoreMetrics = {
    val custom = Map(
      SharedStateStoreMetrics.ChangelogBytes -> changelogBytes,
      SharedStateStoreMetrics.ChangedKeys -> before.size.toLong,
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
