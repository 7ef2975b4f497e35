package io.sharedstate.spark.statestore

import org.apache.spark.sql.execution.streaming.state.StateStore

/** A read-only view of one version: the provider's live map when it holds that version, else a map loaded for it. */
private[sharedstate] final class SharedReadStateStore(
    protected val provider: SharedStateStoreProvider,
    val version: Long,
    protected val rows: StoreRowMap)
    extends StoreRowReads {

  override def abort(): Unit = ()
  override def release(): Unit = ()
  override def allColumnFamilyNames: Set[String] = Set(StateStore.DEFAULT_COL_FAMILY_NAME)

  override def toString: String = s"SharedReadStateStore[id=${provider.stateStoreId}, version=$version]"
}
