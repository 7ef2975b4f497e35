package io.sharedstate.spark.config

import io.sharedstate.core.SharedStateException
import java.nio.file.{Files, Paths}
import org.apache.spark.SparkConf
import org.scalatest.funsuite.AnyFunSuite

class SharedStateConfSuite extends AnyFunSuite {
  test("every setting's default parses, to the documented value") {
    val conf = new SparkConf(false)
    assert(SharedStateConf.Root.read(conf).isEmpty)
    assert(SharedStateConf.SnapshotInterval.read(conf) == 10L * 60 * 1000)
    assert(SharedStateConf.SnapshotsRetained.read(conf) == 2)
    assert(SharedStateConf.SnapshotFullEvery.read(conf) == 8)
    assert(SharedStateConf.SnapshotAfterUpdates.read(conf) == 1000000L)
    assert(SharedStateConf.OwnerLease.read(conf) == 30000L)
    assert(SharedStateConf.FollowInterval.read(conf) == 1000L)
    assert(SharedStateConf.Executors.read(conf).isEmpty)
    assert(SharedStateConf.HostWaitTimeout.read(conf) == 60000L)
    assert(!SharedStateConf.StateStorePublish.read(conf))
    assert(SharedStateConf.RebalanceOnExecutorAdded.read(conf))
    assert(SharedStateConf.ElasticityPreCopy.read(conf))
    assert(SharedStateConf.RealtimeFlushInterval.read(conf) == 5L)
    assert(!SharedStateConf.RealtimeDeliveryLanes.read(conf))
  }

  test("set values are read; 0 turns the periodic work off") {
    val conf = new SparkConf(false).set(SharedStateConf.SnapshotInterval.key, "0")
      .set(SharedStateConf.FollowInterval.key, "250 milliseconds").set(SharedStateConf.Executors.key, "3")
      .set(SharedStateConf.HostWaitTimeout.key, "2min").set(SharedStateConf.Root.key, " /tmp/states ")
    assert(SharedStateConf.SnapshotInterval.read(conf) == 0L)
    assert(SharedStateConf.FollowInterval.read(conf) == 250L)
    assert(SharedStateConf.Executors.read(conf).contains(3))
    assert(SharedStateConf.HostWaitTimeout.read(conf) == 120000L)
    assert(SharedStateConf.Root.read(conf).contains("/tmp/states"))
  }

  test("a bad value names the key and what is allowed") {
    for ((entry, bad, says) <- Seq[(SharedStateConf.Entry[_], String, String)](
        (SharedStateConf.SnapshotsRetained, "0", ">= 1"),
        (SharedStateConf.SnapshotFullEvery, "many", ">= 1"),
        (SharedStateConf.SnapshotAfterUpdates, "-1", ">= 0"),
        (SharedStateConf.OwnerLease, "soon", "interval"),
        (SharedStateConf.Executors, "-2", ">= 1"),
        (SharedStateConf.HostWaitTimeout, "a while", "duration"),
        (SharedStateConf.StateStorePublish, "yes", "true or false"),
        (SharedStateConf.RealtimeDeliveryLanes, "on", "true or false"),
        (SharedStateConf.ElasticityPreCopy, "always", "true or false")
      )) {
      val e = intercept[SharedStateException](entry.fromText(bad))
      assert(e.getMessage.contains(entry.key) && e.getMessage.contains(says), e.getMessage)
    }
  }

  test("the README's configuration table lists exactly these settings") {
    val readme = new String(Files.readAllBytes(Paths.get(sys.props("user.dir")).resolve("../../README.md").normalize()))
    val documented = "`(spark\\.sharedstate\\.[A-Za-z.]+)`".r.findAllMatchIn(readme).map(_.group(1)).toSet
    assert(documented == SharedStateConf.All.map(_.key).toSet)
  }
}
