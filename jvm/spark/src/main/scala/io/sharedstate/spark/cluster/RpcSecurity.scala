package io.sharedstate.spark.cluster

import io.sharedstate.spark.config.SharedStateConf

import io.sharedstate.core.SharedStateException
import org.apache.spark.SparkConf
import org.apache.spark.internal.Logging

/**
 * Whether the State service may serve on a cluster. Its endpoints read, write and drop States, so
 * without `spark.authenticate` any process that reaches an executor's port could do so: the service
 * then refuses to start (executors open no port, the driver creates and opens no State) unless the
 * user opts in with [[SharedStateConf.AllowUnauthenticated]], which is logged as a warning.
 * Local mode uses no RPC and is not concerned.
 */
private[sharedstate] object RpcSecurity extends Logging {
  private val Authenticate = "spark.authenticate"

  def authenticated(conf: SparkConf): Boolean = conf.getBoolean(Authenticate, false)

  /** May this application serve States over RPC? */
  def allowed(conf: SparkConf): Boolean =
    authenticated(conf) || SharedStateConf.AllowUnauthenticated.read(conf)

  /** Fails with [[error]] unless the service may serve; warns when it serves unauthenticated. `where`: who asks. */
  def requireAllowed(conf: SparkConf, where: String): Unit =
    if (!allowed(conf)) throw error(where)
    else if (!authenticated(conf)) logWarning(s"sharedstate $where serves States over RPC with $Authenticate off " +
      s"(${SharedStateConf.AllowUnauthenticated.key}=true): any process that reaches its port can read, write and " +
      s"drop States. Set $Authenticate=true (with spark.authenticate.secret where the cluster manager needs it).")

  def error(where: String): SharedStateException = new SharedStateException(
    s"sharedstate $where: this cluster application runs with $Authenticate off, so the State service's RPC ports " +
      "would accept messages from any process that reaches them (reading, writing and dropping States). Set " +
      s"$Authenticate=true (the better fix: Spark then refuses peers without the application's secret), or " +
      s"accept the risk with ${SharedStateConf.AllowUnauthenticated.key}=true.")
}
