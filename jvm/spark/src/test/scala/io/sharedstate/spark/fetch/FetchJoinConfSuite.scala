package io.sharedstate.spark.fetch

import org.apache.spark.sql.classic.SparkSession
import org.scalatest.BeforeAndAfterAll
import org.scalatest.funsuite.AnyFunSuite

/**
 * A streaming fetch join's tasks get the Hadoop configuration of the session that plans the query's
 * micro-batches: broadcast once per session (a query's session is cloned when it starts, so its
 * settings stay put), not once per micro-batch; another session gets its own, with its own settings.
 */
class FetchJoinConfSuite extends AnyFunSuite with BeforeAndAfterAll {
  private lazy val spark = SparkSession.builder().master("local[1]").appName("fetch-join-conf")
    .config("spark.ui.enabled", "false").getOrCreate()

  override def afterAll(): Unit = spark.stop()

  test("one broadcast per session, with that session's Hadoop settings") {
    spark.conf.set("fs.sharedstate.test.setting", "a")
    val first = FetchJoinExec.hadoopConf(spark)
    assert((1 to 20).map(_ => FetchJoinExec.hadoopConf(spark).id).toSet == Set(first.id))
    assert(first.value.value.get("fs.sharedstate.test.setting") == "a")
    val clone = spark.newSession()
    clone.conf.set("fs.sharedstate.test.setting", "b")
    val other = FetchJoinExec.hadoopConf(clone)
    assert(other.id != first.id)
    assert(other.value.value.get("fs.sharedstate.test.setting") == "b")
    assert(FetchJoinExec.hadoopConf(spark).id == first.id)
  }
}
