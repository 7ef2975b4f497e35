package io.sharedstate.spark.statestore.publish

import io.sharedstate.spark.cluster.Coordinator
import io.sharedstate.spark.config.SharedStateConf
import io.sharedstate.spark.statestore.StoreCommitHook

import io.sharedstate.core.SharedStateException
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan
import org.apache.spark.sql.catalyst.streaming.WriteToStream

/**
 * When a streaming query starts whose name is mapped to a State
 * (`spark.sharedstate.statestore.publish.<query name>=<State>`, with
 * `spark.sharedstate.statestore.publish=true`): checks, at `start()`, that the State exists, replaces
 * values (each version's value replaces the previous one at its time) and that the session uses the
 * shared state store, and installs the listener that registers the query as the State's writer.
 */
private[sharedstate] final class PublishCheck(session: SparkSession) extends (LogicalPlan => Unit) {
  override def apply(plan: LogicalPlan): Unit = plan match {
    case w: WriteToStream if w.name != null && SharedStateConf.StateStorePublish.read(session) =>
      PublishCheck.stateOf(session, w.name).foreach { state =>
        PublishCheck.validate(session, w.name, state)
        PublishQueryListener.ensure(session)
      }
    case _ =>
  }
}

private[sharedstate] object PublishCheck {
  val ProviderClass = "io.sharedstate.spark.statestore.SharedStateStoreProvider"
  private val ProviderKey = "spark.sql.streaming.stateStore.providerClass"

  /** The State query `name` publishes to, if the session maps it to one. */
  def stateOf(session: SparkSession, name: String): Option[String] =
    session.conf.getOption(SharedStateConf.StateStorePublishPrefix + name).map(_.trim).filter(_.nonEmpty)

  def validate(session: SparkSession, query: String, state: String): Unit = {
    val key = SharedStateConf.StateStorePublishPrefix + query
    if (!StoreCommitHook.active) throw new SharedStateException(
      s"$key=$state: publishing is not running in this application: set ${SharedStateConf.StateStorePublish.key}=true " +
        "in the Spark conf before the application starts, with spark.plugins=io.sharedstate.spark.SharedStatePlugin " +
        "(ss.session and ss.configure set the plugin).")
    val spec = Coordinator.get.state(state).spec
    if (spec.updateRule != "replace") throw new SharedStateException(
      s"$key=$state: State '$state' has update rule '${spec.updateRule}'; a published state store needs " +
        "'replace' (each version's value replaces the one before it at its time).")
    session.conf.getOption(ProviderKey).filter(_ != ProviderClass).foreach { other =>
      throw new SharedStateException(
        s"$key=$state: the query's state store is $other ($ProviderKey); only $ProviderClass publishes. " +
          s"Set $ProviderKey=$ProviderClass (a query restarted from a checkpoint keeps the provider it started with).")
    }
  }
}
