package io.sharedstate.spark.statestore

import java.util.UUID

import scala.util.Random

import org.apache.hadoop.conf.Configuration
import org.apache.spark.sql.execution.streaming.runtime.StreamExecution
import org.apache.spark.sql.execution.streaming.state._
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.test.SharedSparkSession
import org.apache.spark.sql.types.StructType
import org.scalactic.source.Position
import org.scalatest.{BeforeAndAfter, Tag}

/**
 * Spark's own provider suite (`StateStoreSuiteBase`, from the published spark-sql test jar) run
 * against [[SharedStateStoreProvider]]. The tests that do not apply are ignored with their reason in
 * [[SharedStateStoreSuite.Excluded]].
 */
class SharedStateStoreSuite
    extends StateStoreSuiteBase[SharedStateStoreProvider] with SharedSparkSession with BeforeAndAfter {
  import StateStoreTestsHelper._

  before {
    StateStore.stop()
    require(!StateStore.isMaintenanceRunning)
  }

  after {
    StateStore.stop()
    require(!StateStore.isMaintenanceRunning)
  }

  override protected def test(testName: String, testTags: Tag*)(testFun: => Any)(implicit pos: Position): Unit =
    if (SharedStateStoreSuite.Excluded.contains(testName)) super.ignore(testName, testTags: _*)(testFun)
    else super.test(testName, testTags: _*)(testFun)

  override protected def testQuietly(name: String)(f: => Unit): Unit =
    super[StateStoreSuiteBase].testQuietly(name)(f)

  override def newStoreProvider(): SharedStateStoreProvider =
    newProvider(StateStoreId(newDir(), Random.nextInt(), 0))

  override def newStoreProvider(storeId: StateStoreId): SharedStateStoreProvider = newProvider(storeId)

  override def newStoreProvider(storeId: StateStoreId, useColumnFamilies: Boolean): SharedStateStoreProvider =
    newProvider(storeId, useColumnFamilies = useColumnFamilies)

  override def newStoreProvider(storeId: StateStoreId, conf: Configuration): SharedStateStoreProvider =
    newProvider(storeId, hadoopConf = conf)

  override def newStoreProvider(minDeltasForSnapshot: Int, numOfVersToRetainInMemory: Int): SharedStateStoreProvider =
    newProvider(StateStoreId(newDir(), Random.nextInt(), 0),
      sqlConf = getDefaultSQLConf(minDeltasForSnapshot, numOfVersToRetainInMemory))

  override def newStoreProvider(
      keySchema: StructType,
      keyStateEncoderSpec: KeyStateEncoderSpec,
      useColumnFamilies: Boolean): SharedStateStoreProvider =
    newProvider(StateStoreId(newDir(), Random.nextInt(), 0), keySchema = keySchema,
      keyStateEncoderSpec = keyStateEncoderSpec, useColumnFamilies = useColumnFamilies)

  override def newStoreProvider(useColumnFamilies: Boolean): SharedStateStoreProvider =
    newProvider(StateStoreId(newDir(), Random.nextInt(), 0), useColumnFamilies = useColumnFamilies)

  override def newStoreProviderWithClonedConf(storeId: StateStoreId): SharedStateStoreProvider =
    newProvider(storeId, sqlConf = cloneSQLConf())

  override def newStoreProviderNoInit(): SharedStateStoreProvider = new SharedStateStoreProvider

  override def getLatestData(
      provider: SharedStateStoreProvider, useColumnFamilies: Boolean): Set[((String, Int), Int)] = {
    val (changelogs, snapshots) = provider.files.versions()
    val latest = (changelogs ++ snapshots).maxOption.getOrElse(0L)
    getData(provider, latest.toInt, useColumnFamilies)
  }

  override def getData(
      provider: SharedStateStoreProvider, version: Int, useColumnFamilies: Boolean): Set[((String, Int), Int)] =
    tryWithProviderResource(newStoreProvider(provider.stateStoreId, useColumnFamilies)) { reloaded =>
      val store = reloaded.getReadStore(version.toLong, None)
      rowPairsToDataSet(store.iterator())
    }

  override def getDefaultSQLConf(minDeltasForSnapshot: Int, numOfVersToRetainInMemory: Int): SQLConf = {
    val sqlConf = SQLConf.get.clone()
    sqlConf.setConf(SQLConf.STATE_STORE_MIN_DELTAS_FOR_SNAPSHOT, minDeltasForSnapshot)
    sqlConf.setConf(SQLConf.MAX_BATCHES_TO_RETAIN_IN_MEMORY, numOfVersToRetainInMemory)
    sqlConf.setConf(SQLConf.MIN_BATCHES_TO_RETAIN, 2)
    sqlConf.setConf(SQLConf.STATE_STORE_PROVIDER_CLASS, classOf[SharedStateStoreProvider].getName)
    sqlConf
  }

  private def newProvider(
      storeId: StateStoreId,
      keySchema: StructType = keySchema,
      keyStateEncoderSpec: KeyStateEncoderSpec = null,
      useColumnFamilies: Boolean = false,
      sqlConf: SQLConf = getDefaultSQLConf(SQLConf.STATE_STORE_MIN_DELTAS_FOR_SNAPSHOT.defaultValue.get, 1),
      hadoopConf: Configuration = new Configuration): SharedStateStoreProvider = {
    hadoopConf.set(StreamExecution.RUN_ID_KEY, UUID.randomUUID().toString)
    val provider = new SharedStateStoreProvider
    provider.init(
      storeId,
      keySchema,
      valueSchema,
      Option(keyStateEncoderSpec).getOrElse(NoPrefixKeyStateEncoderSpec(keySchema)),
      useColumnFamilies,
      new StateStoreConf(sqlConf),
      hadoopConf,
      useMultipleValuesPerKey = false,
      None
    )
    provider
  }
}

object SharedStateStoreSuite {

  /** Spark's tests that do not apply to this provider, with the reason. */
  val Excluded: Map[String, String] = Map(
    "SPARK-18342: commit fails when rename fails" -> (
      "asserts the HDFS provider's store name (\"HDFSStateStore\") in the message; ours fails the same way " +
        "(CANNOT_WRITE_STATE_STORE.CANNOT_COMMIT caused by the failed rename), with its own name"))
}
