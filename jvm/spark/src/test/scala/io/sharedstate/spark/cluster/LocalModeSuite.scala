package io.sharedstate.spark.cluster

import io.sharedstate.spark.{SharedState, SharedStatePlugin}

import org.apache.spark.sql.SparkSession
import org.scalatest.BeforeAndAfterAll
import org.scalatest.funsuite.AnyFunSuite

/** Local mode keeps the embedded default: one in-process registry, direct calls, no RPC endpoint. */
class LocalModeSuite extends AnyFunSuite with BeforeAndAfterAll {
  private lazy val spark = SparkSession.builder().master("local[1]").appName("local-mode")
    .config("spark.ui.enabled", "false").config("spark.plugins", classOf[SharedStatePlugin].getName).getOrCreate()

  override def afterAll(): Unit = spark.stop()

  test("with the plugin on local[N], States live in the process registry and clients call them directly") {
    val handle = SharedState.create(spark, "local_mode_state", key = "k STRING", value = "v STRING", partitions = 3)
    val coordinator = Coordinator.get
    assert(coordinator.isInstanceOf[LocalCoordinator] && coordinator.context == spark.sparkContext)
    assert(coordinator.access.clusterNode.isEmpty && StateAccess.get.clusterNode.isEmpty)
    assert(LocalCoordinator.registry.find(handle.name).isDefined)
    assert(StateClient.of(handle.name).isInstanceOf[LocalStateClient])
    assert(StateClient.of(handle.name).preferredHost(0).isEmpty)
    assert(coordinator.state(handle.name).owners.isEmpty)
    // the same State object answers through the client, the driver face and the registry
    val driver = coordinator.state(handle.name)
    driver.registerWriter("w")
    assert(LocalCoordinator.registry.get(handle.name).metrics.writers.keySet == Set("w"))
    assert(handle.drop() && LocalCoordinator.registry.find(handle.name).isEmpty)
  }

  test("the coordinator names the plugin's class right (it cannot see the root package)") {
    assert(Coordinator.PluginClass == classOf[SharedStatePlugin].getName)
  }
}
