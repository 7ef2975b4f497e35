package io.sharedstate.spark.cluster

/** A JVM that hosts State partitions: its executor id and the address of its sharedstate endpoint. */
private[sharedstate] final case class HostId(executorId: String, host: String, port: Int) {
  override def toString: String = s"executor $executorId ($host:$port)"
}
