package io.sharedstate.spark.cluster

import org.apache.spark.sharedstate.RpcBridge

/** Which node this JVM is: null in local mode (the driver is the only host), else the driver's or an executor's. */
object Cluster {
  def node: ClusterNode = if (RpcBridge.isDriver) Coordinator.get.node else ExecutorNode.get
}
