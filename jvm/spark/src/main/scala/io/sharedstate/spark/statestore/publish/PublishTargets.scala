package io.sharedstate.spark.statestore.publish

import io.sharedstate.spark.cluster.{Coordinator, DriverRequest}
import io.sharedstate.spark.config.UpdateOptions
import io.sharedstate.spark.durable.{ChangelogFile, DurableStates}
import io.sharedstate.spark.write.WriterLifecycle

import io.sharedstate.core.{EventTime, SharedStateException}
import java.util.concurrent.ConcurrentHashMap
import org.apache.spark.internal.Logging
import scala.collection.mutable
import scala.jdk.CollectionConverters._
import scala.util.control.NonFatal

/**
 * The driver's side of publishing (see [[StatePublisher]]): which State each running query
 * publishes to, and the epoch commits. A query publishes as one writer of its State,
 * `statestore:<query id>`, stable across restarts from its checkpoint (the query id is), registered
 * when the query starts, so it holds U from before its first batch, and paused when it stops.
 *
 * Epoch = the store version. Every partition's task stages its changes of a version and reports it
 * here; the last one to report commits the epoch, with the watermark of the batch that committed the
 * version as the writer's progress. So U never passes what a partition has not published, and the
 * State commits before the batch completes, before Spark records the batch in its commit log: a
 * batch Spark runs again (after a failure, a driver kill, a restart) commits the same version again,
 * which the State ignores (an epoch at or below the writer's last committed one changes nothing).
 */
private[sharedstate] object PublishTargets extends Logging {

  def writerOf(query: String): String = s"statestore:$query"

  // query id -> the State it publishes to; set when the query starts, removed when it stops.
  private val queries = new ConcurrentHashMap[String, String]()

  // query id -> why its writer could not be registered when it started (its tasks fail with it).
  private val failures = new ConcurrentHashMap[String, String]()

  // (writer, epoch) -> the changelog files each partition reported (none for an in-memory State).
  private final class Reported {
    val files = mutable.HashMap.empty[Int, Seq[ChangelogFile]]
  }
  private val reported = new ConcurrentHashMap[(String, Long), Reported]()

  /** A query that publishes to `state` started: its writer holds U back from now on. */
  def started(query: String, state: String): Unit = {
    failures.remove(query)
    try WriterLifecycle.started(state, writerOf(query), UpdateOptions.NoIdleTimeout)
    catch {
      case NonFatal(e) =>
        failures.put(query, s"State '$state' could not register query $query as its writer: ${e.getMessage}")
        throw e
    }
    queries.put(query, state)
    logInfo(s"Query $query publishes its state store to State '$state' as writer ${writerOf(query)}")
  }

  /** The query stopped: its writer is paused (a restart resumes it). */
  def stopped(query: String): Unit = {
    failures.remove(query)
    if (queries.remove(query) != null) WriterLifecycle.stopped(writerOf(query))
  }

  /** On the driver: where `query` publishes, or None when it does not. */
  def resolve(query: String): Option[PublishTarget] = {
    Option(failures.get(query)).foreach(why => throw new SharedStateException(s"Publishing the state store: $why"))
    Option(queries.get(query)).map(target(query, _))
  }

  private def target(query: String, state: String): PublishTarget = {
    val controller = Coordinator.get.state(state)
    PublishTarget(state, writerOf(query), controller.incarnation, controller.spec, DurableStates.target(state))
  }

  /**
   * On the driver: `partition` of `partitions` staged `epoch`; commits it once every partition has.
   * Returns whether this report committed the epoch.
   */
  def published(state: String, writer: String, epoch: Long, partition: Int, partitions: Int, progress: Long,
      files: Seq[ChangelogFile]): Boolean = {
    val controller = Coordinator.get.state(state)
    if (epoch <= controller.lastCommittedEpoch(writer)) false // a version committed again: already in the State
    else {
      val r = reported.computeIfAbsent((writer, epoch), _ => new Reported)
      r.synchronized {
        r.files(partition) = files
        if (r.files.size < partitions || epoch <= controller.lastCommittedEpoch(writer)) false
        else {
          val outcome = controller.commitEpoch(writer, epoch, progress,
            payload = r.files.toSeq.sortBy(_._1)
              .flatMap(_._2))
          // Reports of this epoch and of older ones that never completed (aborted batches) are done.
          reported.keySet.asScala.filter { case (w, e) => w == writer && e <= epoch }.foreach(reported.remove)
          logInfo(s"State $state: published version $epoch of writer $writer (accepted ${outcome.accepted}, " +
            s"rejected ${outcome.rejected}, U=${EventTime.show(outcome.updateProgress)})")
          !outcome.alreadyCommitted
        }
      }
    }
  }

  /** A task asks where its query publishes. */
  final case class Resolve(query: String) extends DriverRequest[Option[PublishTarget]] {
    override def onDriver(): Option[PublishTarget] = resolve(query)
  }

  /**
   * A task reports that its partition staged a version. The files travel as tuples (partition, path,
   * size, modification time): the coordinator decodes only plain types.
   */
  final case class Published(state: String, writer: String, epoch: Long, partition: Int, partitions: Int,
      progress: Long, files: Seq[(Int, String, Long, Long)])
      extends DriverRequest[java.lang.Boolean] {
    override def onDriver(): java.lang.Boolean = {
      if (partitions < 1) throw new SharedStateException(s"State '$state': $partitions state partitions reported.")
      Boolean.box(PublishTargets.published(state, writer, epoch, partition, partitions, progress,
          files.map { case (p, path, size, time) => ChangelogFile(p, path, size, time) }))
    }
  }
}
