package io.sharedstate.spark.cluster

import io.sharedstate.core.SharedStateException
import org.apache.spark.SparkConf
import org.apache.spark.sharedstate.RpcBridge
import scala.util.{Failure, Success, Try}

/**
 * An outside client of the executors' State endpoints, for it/test_cluster_security.py (called through
 * py4j on the driver): where a State's hosts listen, as its route publishes them, and what a client with
 * a given secret gets from one of them.
 */
private[sharedstate] object HostProbe {

  /** "host:port" of each host of State `state`. */
  def hostAddresses(state: String): Array[String] = Coordinator.get match {
    case c: ClusterCoordinator => c.route(state).hosts.map(h => s"${h.host}:${h.port}").toArray
    case _ =>
      throw new SharedStateException("HostProbe: this application runs in local mode; no State has a host port.")
  }

  /**
   * Pings the host endpoint at `host`:`port` from a fresh RPC environment of this JVM that
   * authenticates with `secret` (null or empty: without spark.authenticate). "answered", or
   * "refused: " and why.
   */
  def ping(host: String, port: Int, secret: String): String = {
    val conf = RpcBridge.env.map(_.conf.clone).getOrElse(new SparkConf(false))
      .set("spark.rpc.askTimeout", "10s").set("spark.rpc.lookupTimeout", "10s")
    if (secret == null || secret.isEmpty) conf.set("spark.authenticate", "false").remove("spark.authenticate.secret")
    else conf.set("spark.authenticate", "true").set("spark.authenticate.secret", secret)
    val client = RpcBridge.newStandaloneServer("sharedstate-probe", RpcBridge.executorHost, conf)
    try Try(client.connect(host, port, HostService.Endpoint).askSync(Messages.Ping)) match {
        case Success(_) => "answered"
        case Failure(e) =>
          "refused: " + Iterator.iterate(e)(_.getCause).takeWhile(_ != null).take(5)
            .map(c => s"${c.getClass.getName}: ${c.getMessage}").mkString(" <- ")
      }
    finally client.shutdown()
  }
}
