package io.sharedstate.spark.statestore

import org.apache.spark.SparkConf
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.streaming.StreamTest
import org.scalactic.source.Position
import org.scalatest.Tag

/**
 * Runs a chosen subset of one of Spark's streaming operator suites with [[SharedStateStoreProvider]]
 * in place of Spark's providers (as Spark's own `RocksDBStateStoreTest` does for RocksDB): the
 * session's provider is ours, and a test that asks for a provider (Spark's join suites run each
 * test on HDFS and on RocksDB) gets ours instead. Tests whose name starts with none of `selected`
 * are not registered; those of the others in `notApplicable` are registered as ignored, with the reason.
 * `SHAREDSTATE_SPARK_SUITES=full` in the environment registers every test of the suite (the full
 * run docs/statestore.md reports; too long for CI on 2 cores).
 */
trait SharedStateStoreTest extends StreamTest {

  /** Name prefixes of the tests to run. */
  protected def selected: Seq[String]

  /** Tests matching `selected` that do not apply, with the reason (a def: tests register in the constructor). */
  protected def notApplicable: Map[String, String] = Map.empty

  private def fullRun: Boolean = sys.env.get("SHAREDSTATE_SPARK_SUITES").contains("full")

  private val ProviderKey = SQLConf.STATE_STORE_PROVIDER_CLASS.key
  private val Provider = classOf[SharedStateStoreProvider].getName

  override protected def sparkConf: SparkConf = super.sparkConf.set(ProviderKey, Provider)

  override protected def test(testName: String, testTags: Tag*)(testFun: => Any)(implicit pos: Position): Unit =
    if (!fullRun && !selected.exists(testName.startsWith)) ()
    else if (notApplicable.contains(testName))
      super.ignore(s"$testName (SharedStateStoreProvider)", testTags: _*)(testFun)
    else
      super.test(s"$testName (SharedStateStoreProvider)", testTags: _*) {
        withSQLConf(ProviderKey -> Provider) {
          assert(spark.conf.get(ProviderKey) == Provider)
          testFun
        }
      }

  override def withSQLConf[T](pairs: (String, String)*)(f: => T): T =
    super.withSQLConf(pairs.map { case (k, v) => if (k == ProviderKey) k -> Provider else k -> v }: _*)(f)
}
