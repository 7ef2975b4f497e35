package io.sharedstate.spark.statestore

import java.io.FileNotFoundException

import scala.util.control.NonFatal

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
import org.apache.spark.SparkThrowable
import org.apache.spark.sql.sharedstate.StateStoreErrorsBridge
import org.apache.spark.sql.execution.streaming.state._
import org.apache.spark.sql.types.StructType

/**
 * Spark's state store on sharedstate: set `spark.sql.streaming.stateStore.providerClass` to
 * `io.sharedstate.spark.statestore.SharedStateStoreProvider`.
 *
 * One instance per (operator, partition, store name) on an executor. It keeps one live map, the
 * latest version it loaded or committed; a version's changes go to `<version>.changelog` under the
 * store's checkpoint directory at commit, and maintenance writes `<version>.snapshot` every
 * `minDeltasForSnapshot` versions and deletes files no retained version needs. Any retained
 * version is rebuilt from the newest snapshot at or below it plus the changelogs after it (a new
 * executor, a restarted driver, or a task retry asking for an older version). See docs/statestore.md.
 */
class SharedStateStoreProvider extends StateStoreProvider {
  import SharedStateStoreProvider.ProviderName

  @volatile private var id_ : StateStoreId = _
  @volatile private[sharedstate] var keySchema: StructType = _
  @volatile private[sharedstate] var valueSchema: StructType = _
  @volatile private[sharedstate] var storeConf: StateStoreConf = _
  @volatile private[sharedstate] var hadoopConf: Configuration = _
  @volatile private var numColsPrefixKey = 0
  @volatile private[sharedstate] var files: StoreFiles = _

  // Guarded by `this`: the live map and the store updating it (null when none).
  private var live: StoreRowMap = _
  private var writer: SharedStateStore = _
  private var lastSnapshotVersion = -1L
  private var snapshotting = false

  /** Runs in maintenance between freezing the map and writing its snapshot (tests pause it there). */
  @volatile private[sharedstate] var beforeSnapshotWrite: () => Unit = () => ()

  override def init(
      stateStoreId: StateStoreId,
      keySchema: StructType,
      valueSchema: StructType,
      keyStateEncoderSpec: KeyStateEncoderSpec,
      useColumnFamilies: Boolean,
      storeConf: StateStoreConf,
      hadoopConf: Configuration,
      useMultipleValuesPerKey: Boolean,
      stateSchemaProvider: Option[StateSchemaProvider]): Unit = {
    if (storeConf.enableStateStoreCheckpointIds) throw StateStoreErrors.stateStoreCheckpointIdsNotSupported(
      s"$ProviderName does not support checkpointFormatVersion > 1")
    if (useMultipleValuesPerKey) throw unsupported("multipleValuesPerKey")
    if (storeConf.rowChecksumEnabled) throw unsupported("rowChecksum")
    numColsPrefixKey = keyStateEncoderSpec match {
      case NoPrefixKeyStateEncoderSpec(_) => 0
      case PrefixKeyScanStateEncoderSpec(_, n) => n
      case _: RangeKeyScanStateEncoderSpec => throw unsupported("Range scan")
      case other => throw unsupported(s"key state encoder ${other.getClass.getSimpleName}")
    }
    this.id_ = stateStoreId
    this.keySchema = keySchema
    this.valueSchema = valueSchema
    this.storeConf = storeConf
    this.hadoopConf = hadoopConf
    this.files = new StoreFiles(baseDir, hadoopConf)
    files.mkdirs()
  }

  override def stateStoreId: StateStoreId = id_

  /** The store's checkpoint directory (Spark's own suites read the files under it by this name). */
  private[sharedstate] def baseDir: Path = id_.storeCheckpointLocation()

  override def getStore(
      version: Long,
      stateStoreCkptId: Option[String],
      forceSnapshotOnCommit: Boolean,
      loadEmpty: Boolean): StateStore = {
    if (stateStoreCkptId.isDefined) throw StateStoreErrors.stateStoreCheckpointIdsNotSupported(
      s"$ProviderName does not support checkpointFormatVersion > 1 but a state store checkpointID is passed in")
    if (loadEmpty) throw StateStoreErrors.unsupportedOperationException("getStore",
      s"$ProviderName doesn't support loadEmpty")
    synchronized {
      val (map, fromFiles) =
        if (live != null && live.version == version && writer == null) (live, false)
        else {
          // Another store still updates the live map (a concurrent attempt): this one gets its own.
          val loaded = load(version)
          live = loaded
          (loaded, true)
        }
      val store = new SharedStateStore(this, version, map, forceSnapshotOnCommit, fromFiles)
      writer = store
      store
    }
  }

  override def getReadStore(version: Long, stateStoreCkptId: Option[String]): ReadStateStore = {
    if (stateStoreCkptId.isDefined) throw StateStoreErrors.stateStoreCheckpointIdsNotSupported(
      s"$ProviderName does not support checkpointFormatVersion > 1 but a state store checkpointID is passed in")
    synchronized {
      val map =
        if (live != null && live.version == version && writer == null) live
        else {
          val loaded = load(version)
          if (writer == null) live = loaded
          loaded
        }
      new SharedReadStateStore(this, version, map)
    }
  }

  override def upgradeReadStoreToWriteStore(
      readStore: ReadStateStore,
      version: Long,
      uniqueId: Option[String],
      forceSnapshotOnCommit: Boolean): StateStore = {
    readStore.release()
    getStore(version, uniqueId, forceSnapshotOnCommit, loadEmpty = false)
  }

  /**
   * Snapshots the live map when due, then deletes the files no retained version needs. The
   * snapshot is written from a frozen view of the committed map, outside the provider's lock: a
   * task opening the store meanwhile does not wait for it.
   */
  override def doMaintenance(): Unit = {
    val due = synchronized {
      if (lastSnapshotVersion < 0) lastSnapshotVersion = files.versions()._2.maxOption.getOrElse(0L)
      // Only a committed map (no store updating it) is a version.
      if (!snapshotting && live != null && writer == null && live.version > 0 &&
        live.version - lastSnapshotVersion >= storeConf.minDeltasForSnapshot) {
        snapshotting = true
        Some((live.version, live.frozen()))
      } else None
    }
    due.foreach { case (version, rows) =>
      try {
        beforeSnapshotWrite()
        writeSnapshot(version, rows)
      } finally synchronized { snapshotting = false }
    }
    cleanup()
  }

  override def close(): Unit = synchronized {
    live = null
    writer = null
  }

  override def supportedCustomMetrics: Seq[StateStoreCustomMetric] = SharedStateStoreMetrics.All

  override def toString: String = s"SharedStateStoreProvider[id=$id_]"

  private[sharedstate] def writeSnapshot(version: Long, rows: StoreRowMap.Frozen): Unit = {
    files.write(files.snapshot(version), StoreFiles.SnapshotMagic)(out => rows.foreach((k, v) => out.write(k, v)))
    synchronized { if (version > lastSnapshotVersion) lastSnapshotVersion = version }
  }

  /** A store committed: its map is the newest version unless a later one is already live. */
  private[sharedstate] def committed(store: SharedStateStore, map: StoreRowMap): Unit = synchronized {
    if (writer eq store) writer = null
    if (live == null || (map ne live) && map.version >= live.version) live = map
  }

  private[sharedstate] def closed(store: SharedStateStore): Unit = synchronized {
    if (writer eq store) writer = null
  }

  private[sharedstate] def checkColumnFamily(name: String): Unit =
    if (name != StateStore.DEFAULT_COL_FAMILY_NAME)
      throw StateStoreErrors.multipleColumnFamiliesNotSupported(ProviderName)

  private[sharedstate] def unsupported(operation: String): Throwable =
    StateStoreErrors.unsupportedOperationException(operation, ProviderName)

  /** Rebuilds `version` from the newest snapshot at or below it and the changelogs after it. */
  private def load(version: Long): StoreRowMap = {
    if (version < 0) throw StateStoreErrorsBridge.unexpectedVersion(version)
    try {
      val map = new StoreRowMap(keySchema, valueSchema.length, numColsPrefixKey, version)
      if (version > 0) {
        val (changelogs, snapshots) = files.versions()
        def chainFrom(start: Long) = (start + 1 to version).forall(changelogs.contains)
        val start = snapshots.filter(s => s <= version && chainFrom(s)).maxOption.getOrElse {
          if (!chainFrom(0L)) {
            val missing = (1L to version).reverseIterator.find(v => !changelogs.contains(v)).get
            throw StateStoreErrorsBridge.missingStateFile(
              files.changelog(missing),
              new FileNotFoundException(
                s"Cannot load version $version of $id_: ${files.changelog(missing)} does not exist and no snapshot " +
                  s"after it (snapshots: ${snapshots.toSeq.sorted.mkString(",")})")
            )
          }
          0L
        }
        val keyFields = keySchema.length
        val valueFields = valueSchema.length
        if (start > 0)
          files.read(files.snapshot(start), StoreFiles.SnapshotMagic, keyFields, valueFields) { (k, v) =>
            map.put(k, v); ()
          }
        var v = start + 1
        while (v <= version) {
          files.read(files.changelog(v), StoreFiles.ChangelogMagic, keyFields, valueFields) { (k, value) =>
            if (value == null) map.remove(k) else map.put(k, value)
            ()
          }
          v += 1
        }
        map.compactIfWasteful()
      }
      map
    } catch {
      case e: OutOfMemoryError =>
        throw StateStoreErrorsBridge.notEnoughMemoryToLoad(String.valueOf(id_), "SHARED_STATE_STORE_PROVIDER", e)
      case e: SparkThrowable if Option(e.getCondition).exists(_.startsWith("CANNOT_LOAD_STATE_STORE")) => throw e
      case NonFatal(e) => throw StateStoreErrors.cannotLoadStore(e)
    }
  }

  /**
   * Keeps the last `minVersionsToRetain` versions loadable: finds the newest snapshot at or below
   * the oldest of them and deletes every file older than that snapshot.
   */
  private def cleanup(): Unit = {
    val (changelogs, snapshots) = files.versions()
    val all = changelogs ++ snapshots
    if (all.isEmpty) return
    val oldestToKeep = all.max - storeConf.minVersionsToRetain
    snapshots.filter(_ <= oldestToKeep).maxOption.foreach { base =>
      changelogs.filter(_ < base).foreach(v => files.delete(files.changelog(v)))
      snapshots.filter(_ < base).foreach(v => files.delete(files.snapshot(v)))
    }
  }
}

private[sharedstate] object SharedStateStoreProvider {
  val ProviderName = "SharedStateStoreProvider"
}
