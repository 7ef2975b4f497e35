package io.sharedstate.spark.cluster

import io.sharedstate.core.StateRegistry

/**
 * The States of local mode, where the driver JVM is the only host (the embedded default): the
 * coordinator and every task use this registry directly, with no RPC. In a cluster it stays empty:
 * States live on the hosts (see distributed.Coordinator), and code reaches them through
 * distributed.StateClient (tasks) or distributed.Coordinator (driver).
 */
object SharedStateRuntime {
  val registry: StateRegistry = new StateRegistry
}
