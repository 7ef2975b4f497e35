package io.sharedstate.core

import java.util.concurrent.ConcurrentHashMap
import scala.jdk.CollectionConverters._

/** The States of one process, by name. */
final class StateRegistry {
  private val states = new ConcurrentHashMap[String, State]()

  /** Creates a State; an existing one with the same spec is returned, a different one is an error. */
  def create(spec: StateSpec): State = create(spec, _ => ())

  /**
   * Like create(spec), running `init` on a new State before any other thread can see it (recovery
   * from a durable log); if `init` fails, nothing is registered.
   */
  def create(spec: StateSpec, init: State => Unit): State = {
    val state = states.computeIfAbsent(spec.name,
      _ => {
        val s = new State(spec)
        try init(s)
        catch { case e: Throwable => s.close(); throw e }
        s
      })
    if (state.spec != spec) {
      throw new SharedStateException(s"State '${spec.name}' already exists with a different definition: " +
        s"${describe(state.spec)}; asked for ${describe(spec)}. Drop it first or use State.get.")
    }
    state
  }

  def get(name: String): State = {
    val s = states.get(name)
    if (s == null) {
      val known = names
      throw new SharedStateException(s"Unknown State '$name'. " +
        (if (known.isEmpty) "No State exists yet: create it with State.create."
         else s"Existing States: ${known.mkString(", ")}."))
    }
    s
  }

  def find(name: String): Option[State] = Option(states.get(name))

  /** Removes the State, stopping its sweep and failing its waiting fetches. */
  def drop(name: String): Boolean = {
    val s = states.remove(name)
    if (s != null) s.close()
    s != null
  }

  def names: Seq[String] = states.keySet.asScala.toSeq.sorted

  private def describe(s: StateSpec): String =
    s"key <${s.keySchema}>, value <${s.valueSchema}>, ${s.partitions} partitions, rule ${s.updateRule}, " +
      s"compaction ${s.compaction}, lateness ${s.lateness}"
}
