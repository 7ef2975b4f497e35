package io.sharedstate.spark.cluster

import io.sharedstate.core.SharedStateException
import org.apache.spark.sharedstate.RpcBridge

/**
 * What task-side code (writers, fetch joins, scans, change streams) in this JVM reaches States
 * through, decided once per JVM: the local coordinator's States in local mode, this JVM's
 * [[ClusterNode]] in a cluster (the driver's, or an executor's).
 */
private[sharedstate] trait StateAccess {

  /** The client of State `name`; an unknown name fails, listing the existing States. */
  def client(state: String): StateClient

  /** Runs `request` on the driver: in place there, over RPC from an executor. */
  def askDriver[T](request: DriverRequest[T]): T

  /** This JVM's node of a cluster application; None in local mode. */
  def clusterNode: Option[ClusterNode]
}

private[sharedstate] object StateAccess {
  def get: StateAccess = if (RpcBridge.isDriver) Coordinator.get.access else ExecutorNode.get

  /** This JVM's node, for code that runs only when States are hosted on a cluster. */
  def clusterNode: ClusterNode = get.clusterNode.getOrElse(throw new SharedStateException(
      "sharedstate: this application runs in local mode; its States have no cluster hosts."))
}
