package io.sharedstate.spark

import io.sharedstate.spark.cluster.{Coordinator, ExecutorNode}
import io.sharedstate.spark.config.SharedStateConf
import io.sharedstate.spark.statestore.StoreCommitHook
import io.sharedstate.spark.statestore.publish.StatePublisher

import java.util
import org.apache.spark.SparkContext
import org.apache.spark.api.plugin.{DriverPlugin, ExecutorPlugin, PluginContext, SparkPlugin}
import org.apache.spark.internal.Logging
import org.apache.spark.sharedstate.RpcBridge
import scala.util.control.NonFatal

/**
 * `spark.plugins=SharedStatePlugin` (ss.session and ss.configure set
 * it): starts the coordinator with the driver and a State host with every executor, so new States
 * are spread over the executors. Without it everything still works: the coordinator starts with the
 * first State, and executors start their host at their first State access. With
 * `spark.sharedstate.statestore.publish=true` every JVM that runs tasks publishes mapped queries'
 * state store commits into States (statestore.publish).
 */
final class SharedStatePlugin extends SparkPlugin {
  override def driverPlugin(): DriverPlugin = new DriverPlugin {
    override def init(sc: SparkContext, ctx: PluginContext): util.Map[String, String] = {
      Coordinator.start(sc)
      // Tasks of a local master run in the driver's JVM: they publish from here.
      if (SharedStateConf.StateStorePublish.read(sc.getConf)) StoreCommitHook.register(StatePublisher)
      util.Collections.emptyMap()
    }
  }

  override def executorPlugin(): ExecutorPlugin = new ExecutorPlugin with Logging {
    override def init(ctx: PluginContext, extraConf: util.Map[String, String]): Unit =
      if (!RpcBridge.isDriver) {
        if (SharedStateConf.StateStorePublish.read(ctx.conf())) StoreCommitHook.register(StatePublisher)
        // (ctx.hostname() needs the executor's SparkEnv RpcEnv to have an address, which a client-mode one has not)
        try ExecutorNode.start(RpcBridge.executorHost)
        catch { case NonFatal(e) => logWarning("sharedstate host did not start; this executor will host no State", e) }
      }

    override def shutdown(): Unit = ExecutorNode.stop()
  }
}
