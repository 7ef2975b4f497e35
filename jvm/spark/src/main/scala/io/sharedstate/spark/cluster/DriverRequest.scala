package io.sharedstate.spark.cluster

/**
 * A question only the driver can answer, asked by code of a higher layer (e.g. a fetch join's batch
 * bound) without this package knowing it: on the driver it runs in place, on an executor it travels
 * to the coordinator as [[Messages.AskDriver]] and runs there.
 */
private[sharedstate] trait DriverRequest[T] extends Serializable {
  def onDriver(): T
}
