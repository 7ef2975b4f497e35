package io.sharedstate.spark.durable

import io.delta.kernel.defaults.engine.DefaultEngine
import io.delta.kernel.types.{IntegerType, StructField, StructType}
import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path

/**
 * For tests: a durable State's tables under `dir`, opened as DurableStates opens them, and its owner
 * lease taken. `legacySnapshots`: the snapshots table is first created with that older schema.
 */
final class OwnedTables(dir: Path, conf: Configuration, app: String, legacySnapshots: Option[StructType] = None) {
  val log: DeltaChangelog = DeltaChangelog.openOrCreate(new Path(dir, "changelog").toString, conf)
  legacySnapshots.foreach { schema =>
    KernelTables.create(
      DefaultEngine.create(conf),
      new Path(dir, "snapshots").toString,
      schema.add(new StructField(SnapshotTable.Partition, IntegerType.INTEGER, false)),
      Seq(SnapshotTable.Partition)
    )
  }
  val snapshots: SnapshotTable = SnapshotTable.openOrCreate(new Path(dir, "snapshots").toString, conf)
  val rejected: RejectedTable = RejectedTable.openOrCreate(new Path(dir, "rejected").toString, conf)
  val lease = new OwnerLease(new Path(dir, "owner"), conf, "app-1", app, 60000L)
  assert(lease.acquire(0L).isEmpty, s"the owner lease under $dir is free")
}
