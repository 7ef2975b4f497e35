package io.sharedstate.spark

import io.sharedstate.core.StateRegistry

/**
 * The States hosted by this JVM. In local mode the driver and executors share one JVM, so this is
 * the whole system (the embedded default); distribution across executors builds on it.
 */
object SharedStateRuntime {
  val registry: StateRegistry = new StateRegistry
}
