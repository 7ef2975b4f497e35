package io.sharedstate.spark.statestore

import org.apache.spark.sql.streaming.{
  FlatMapGroupsWithStateSuite,
  StreamingAggregationSuite,
  StreamingDeduplicationSuite,
  StreamingInnerJoinWithoutVCFSuite
}

// Subsets of Spark's operator suites with SharedStateStoreProvider swapped in (see SharedStateStoreTest);
// each stays within about a minute on 2 cores. docs/statestore.md has the counts. Spark's join suite
// runs each test twice, named after HDFS and RocksDB; SharedStateStoreTest makes both runs use ours.

private object HdfsCheckpointResource {
  def apply(sparkVersion: String): String =
    s"restores a checkpoint written by Spark $sparkVersion's HDFS provider (its .delta files), a resource of " +
      "Spark's test jar (read as a directory, it is not one in the published jar); a provider reads its own files"
}

class SharedStateStoreAggregationSuite extends StreamingAggregationSuite with SharedStateStoreTest {
  override protected def selected: Seq[String] = Seq(
    "simple count, update mode",
    "simple count, append mode",
    "state metrics - append mode",
    "midbatch failure",
    "SPARK-35896: metrics in StateOperatorProgress are output correctly"
  )

  override protected def notApplicable: Map[String, String] = Map(
    "simple count, update mode - recovery from checkpoint uses state format version 1" ->
      "restores a checkpoint written by Spark 2.3's HDFS provider (its .delta files); a provider reads its own files",
    "changing schema of state when restarting query - schema check off - state format version 1" ->
      ("reads state rows with a changed value schema, the schema check and row validation both off (Spark's own " +
        "message: non-deterministic behavior), and expects the misread rows to fail the query; here the batch " +
        "completed without an error and the query went on idle (the format version 2 run fails as expected)")
  )
}

class SharedStateStoreDeduplicationSuite extends StreamingDeduplicationSuite with SharedStateStoreTest {
  override protected def selected: Seq[String] = Seq(
    "deduplicate with all columns",
    "deduplicate with some columns",
    "multiple deduplicates",
    "deduplicate with watermark",
    "test no-data flag")

  override protected def notApplicable: Map[String, String] = Seq("3.3.0", "3.5.1").flatMap { version =>
    Seq(
      s"SPARK-39650: recovery from checkpoint having all columns as value schema with sparkVersion=$version",
      s"SPARK-39650: recovery from checkpoint with changes on key schema are not allowed with sparkVersion=$version"
    ).map(_ -> HdfsCheckpointResource(version))
  }.toMap
}

class SharedStateStoreFlatMapGroupsWithStateSuite extends FlatMapGroupsWithStateSuite with SharedStateStoreTest {
  override protected def selected: Seq[String] = Seq(
    "flatMapGroupsWithState - streaming",
    "mapGroupsWithState - streaming")

  override protected def notApplicable: Map[String, String] = Map(
    "flatMapGroupsWithState - recovery from checkpoint uses state format version 1" -> HdfsCheckpointResource("2.3.1"))
}

class SharedStateStoreJoinSuite extends StreamingInnerJoinWithoutVCFSuite with SharedStateStoreTest {
  override protected def selected: Seq[String] = Seq(
    "stream stream inner join on non-time column",
    "stream stream inner join on windows - with watermark"
  )

  override protected def notApplicable: Map[String, String] = Map(
    "SPARK-26187 restore the stream-stream inner join query from Spark 2.4" -> HdfsCheckpointResource("2.4.0"),
    "SPARK-48687 - restore the stream-stream inner join query from Spark 3.5 and changing the join condition " +
      "(key schema) should fail the query" -> HdfsCheckpointResource("3.5.1"),
    "SPARK-48687 - restore the stream-stream inner join query from Spark 3.5 and changing the value schema " +
      "should fail the query" -> HdfsCheckpointResource("3.5.1")
  )
}
