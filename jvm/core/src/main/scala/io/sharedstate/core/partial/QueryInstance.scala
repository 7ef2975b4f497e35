package io.sharedstate.core.partial

import io.sharedstate.core.{SharedStateException, StateSpec}
import scala.util.hashing.MurmurHash3

/**
 * The instance of a partial State with `instances="query"` that a writer updates: a 31-bit number of
 * the writer's name (a Spark query id, the same across restarts from the checkpoint, or an embedded
 * writer's name). Two writers whose numbers collide would update one instance; [[checkDistinct]]
 * refuses the second when it registers.
 */
private[sharedstate] object QueryInstance {
  def of(writer: String): Int = MurmurHash3.stringHash(writer) & Int.MaxValue

  /** Fails, naming both writers, when `writer`'s instance is another registered writer's. */
  def checkDistinct(spec: StateSpec, writer: String, registered: Iterable[String]): Unit =
    if (spec.isPartial && spec.instances == StateSpec.QueryInstances) {
      val mine = of(writer)
      registered.find(w => w != writer && of(w) == mine).foreach { other =>
        throw new SharedStateException(
          s"Partial State '${spec.name}' (instances='query'): writer '$writer' would update the same instance " +
            s"($mine, a 31-bit number of the writer's name) as writer '$other'. Start one of them under another " +
            "name (a Spark query from a new checkpoint gets a new id), or create the State with instances='task'.")
      }
    }
}
