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
      "restores a checkpoint written by Spark 2.3's HDFS provider (its .delta files); a provider reads its own files")
}

class SharedStateStoreDeduplicationSuite extends StreamingDeduplicationSuite with SharedStateStoreTest {
  override protected def selected: Seq[String] = Seq(
    "deduplicate with all columns",
    "deduplicate with some columns",
    "multiple deduplicates",
    "deduplicate with watermark",
    "test no-data flag")
}

class SharedStateStoreFlatMapGroupsWithStateSuite extends FlatMapGroupsWithStateSuite with SharedStateStoreTest {
  override protected def selected: Seq[String] = Seq(
    "flatMapGroupsWithState - streaming",
    "mapGroupsWithState - streaming")
}

class SharedStateStoreJoinSuite extends StreamingInnerJoinWithoutVCFSuite with SharedStateStoreTest {
  override protected def selected: Seq[String] = Seq(
    "stream stream inner join on non-time column",
    "stream stream inner join on windows - with watermark"
  )
}
