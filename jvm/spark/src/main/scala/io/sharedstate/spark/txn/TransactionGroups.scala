package io.sharedstate.spark.txn

import io.sharedstate.spark.cluster.{Coordinator, LocalCoordinator}

import io.sharedstate.core.SharedStateException
import io.sharedstate.core.txn.TransactionGroup
import org.apache.spark.internal.Logging
import scala.collection.mutable

/**
 * The transaction groups of this application (driver, local mode): the States a transactional query
 * touches must become final together, so they form one core [[TransactionGroup]] (one commit lock,
 * one U). A State is in at most one group; the first query over a set of States creates its group,
 * and a later query uses it when its States are all in it. A group whose States were dropped or
 * created again is closed and made anew.
 */
private[sharedstate] object TransactionGroups extends Logging {
  private val groups = mutable.Map.empty[String, TransactionGroup]

  /**
   * The group of `states` (each must exist), created on first use. Its outcomes go to
   * [[TransactionRuns.Decisions]]. `steps`: where a group with a durable member records its steps (by
   * the group's name); a group created with it first completes the last recorded step on the members a
   * kill left one step behind ([[TransactionGroup.completeStep]]). `staged`: the group's staged log (by
   * its name); a group created with it holds U until the writers with transactions logged at or above
   * it are resumed ([[StagedTransactionLog.holdForResume]]).
   */
  def of(states: Seq[String], steps: String => Option[GroupStepLog] = _ => None,
      staged: String => Option[StagedTransactionLog] = _ => None): TransactionGroup = synchronized {
    states.foreach(Coordinator.get.state) // an unknown State fails here, naming the existing ones
    Coordinator.get match {
      case _: LocalCoordinator =>
      case _ => throw new SharedStateException(
          s"Transactions over ${states.mkString(", ")}: transactional queries need the States in the driver's JVM " +
            "(local mode, master local[N]); with States on executors (a cluster) they are not supported yet.")
    }
    val live = states.map(n => n -> LocalCoordinator.registry.get(n)).toMap
    groups.filter { case (_, g) => g.states.exists(s => !LocalCoordinator.registry.find(s.name).contains(s)) }
      .foreach { case (name, g) => g.close(); groups.remove(name) }
    val touching = groups.values.filter(g => g.states.exists(s => live.contains(s.name))).toSeq
    touching match {
      case Seq() =>
        val name = states.sorted.mkString("+")
        val g = new TransactionGroup(name, states.sorted.map(live))
        try {
          g.onDecided(TransactionRuns.Decisions)
          steps(name).foreach { log =>
            val completed = g.completeStep(log.last)
            if (completed.nonEmpty) logInfo(s"Transaction group $name: completed the last step of a previous " +
              s"driver on ${completed.mkString(", ")} (a kill came between the members' journal commits)")
            g.recordSteps(log)
          }
          staged(name).foreach { log =>
            val held = StagedTransactionLog.holdForResume(log, g)
            if (held.nonEmpty) logInfo(s"Transaction group $name: U held until ${held.mkString(", ")} resume " +
              "(transactions a previous driver's members committed wait in the staged log)")
          }
        } catch { case e: Throwable => g.close(); throw e }
        groups(name) = g
        g
      case Seq(g) if states.forall(n => g.states.exists(_.name == n)) => g
      case gs => throw new SharedStateException(
          s"Transactions over ${states.mkString(", ")}: ${gs.map(g =>
              s"State(s) " +
                g.states.map(_.name).filter(live.contains).mkString(", ") + s" already belong to transaction group " +
                s"'${g.name}' (${g.states.map(_.name).mkString(", ")})").mkString("; ")}, and a State is in at most " +
            "one group. Use transactions over the States of one group, or run them in another application.")
    }
  }

  /** The group called `name`, made by [[of]]. */
  def named(name: String): TransactionGroup = synchronized {
    groups.getOrElse(name,
      throw new SharedStateException(
        s"Transaction group '$name' is gone (its States were dropped or created again); restart the query."))
  }
}
