package io.sharedstate.core.embedded

import io.sharedstate.core._
import io.sharedstate.core.fetch.{FetchRequest, ReadMode}
import io.sharedstate.core.partial.{PartialValues, QueryInstance}
import io.sharedstate.core.row.{BinaryRow, ValueType}

/**
 * A State used in-process without Spark (tests, notebooks, serving look-ups), with a Java-friendly
 * surface: keys and values are Object[] rows encoded with the same binary row codec the Spark side
 * uses, so answers match the Spark path. Updates go to the writer's open epoch; [[commit]] closes it
 * with the writer's progress, which is how U advances. On a partial State the writer is one instance
 * (numbered like a Spark writer query's, from its name): its updates go to that instance, and fetches
 * read every instance merged.
 */
final class EmbeddedState(val state: State, writer: String) {
  private val keyType: ValueType = state.spec.keyType
  private val valueType: ValueType = state.valueType
  private var batch = new UpdateBatch
  private var epoch = state.lastCommittedEpoch(writer) + 1
  state.registerWriter(writer)

  /** This writer's instance of a partial State (-1 when the State is not partial). */
  val instance: Int = {
    val spec = state.spec
    if (!spec.isPartial) -1
    else if (spec.instances != StateSpec.QueryInstances) throw new SharedStateException(
      s"State '${spec.name}' keeps one instance per writer task (instances='${spec.instances}'): an embedded " +
        "writer has no task. Write it from Spark (its sink tags each task's instance), or create the State " +
        "with instances='query', whose instances the embedded writers are.")
    else QueryInstance.of(writer)
  }

  def name: String = state.name
  def writerName: String = writer

  def encodeKey(key: Array[AnyRef]): Array[Byte] = BinaryRow.encode(keyType, key)
  def encodeValue(value: Array[AnyRef]): Array[Byte] = BinaryRow.encode(valueType, value)
  def decodeValue(bytes: Array[Byte]): Array[AnyRef] = BinaryRow.decode(valueType, bytes)
  def keyColumns: Array[String] = keyType.fields.map(_.name).toArray
  def valueColumns: Array[String] = valueType.fields.map(_.name).toArray

  /** Adds an update to the open epoch. */
  def update(key: Array[AnyRef], time: Long, value: Array[AnyRef]): Unit = synchronized {
    val v = encodeValue(value)
    batch.add(encodeKey(key), time, if (instance < 0) v else PartialValues.single(instance, v))
  }

  /** Commits the open epoch with the writer's new progress; returns {accepted, rejected, U}. */
  def commit(progress: Long): Array[Long] = synchronized {
    state.stage(writer, epoch, 0, batch)
    val out = state.commitEpoch(writer, epoch, progress)
    epoch += 1
    batch = new UpdateBatch
    Array(out.accepted.toLong, out.rejected.toLong, out.updateProgress)
  }

  /** The writer stops for good: it no longer holds U back. */
  def finish(): Unit = state.finishWriter(writer)

  def updateProgress: Long = state.updateProgress
  def fetchProgress: Long = state.fetchProgress

  def registerReader(reader: String): Unit = state.registerReader(reader)
  def reportFetchProgress(reader: String, progress: Long): Unit = state.reportFetchProgress(reader, progress)

  /**
   * Fetches `key` at `time` with fetch rule `rule` (latest, range, sum, count, min, max, avg, collect)
   * over [from, time]; mode "committed" or "uncommitted" with `staleness` microseconds.
   */
  def fetch(key: Array[AnyRef], time: Long, rule: String, from: Long, mode: String, staleness: Long): EmbeddedAnswer = {
    val r = state.fetchRule(rule, from)
    toAnswer(state.fetch(FetchRequest(new Key(encodeKey(key)), time, r, ReadMode.parse(mode, staleness))))
  }

  /** Waits up to `timeoutMs` for U to pass `time` (a pending fetch), then answers. */
  def fetchWaiting(key: Array[AnyRef], time: Long, rule: String, from: Long, mode: String, staleness: Long,
      timeoutMs: Long): EmbeddedAnswer = {
    val r = state.fetchRule(rule, from)
    val f = state.fetchAsync(FetchRequest(new Key(encodeKey(key)), time, r, ReadMode.parse(mode, staleness)))
    try toAnswer(f.get(timeoutMs, java.util.concurrent.TimeUnit.MILLISECONDS))
    catch {
      case _: java.util.concurrent.TimeoutException => new EmbeddedAnswer("not_yet", 0L, null, null, null, valueColumns)
      case e: java.util.concurrent.ExecutionException => throw e.getCause
    }
  }

  def metrics: StateMetrics = state.metrics

  private def toAnswer(a: FetchAnswer): EmbeddedAnswer = a match {
    case FetchAnswer.NotYet => new EmbeddedAnswer("not_yet", 0L, null, null, null, valueColumns)
    case FetchAnswer.Absent => new EmbeddedAnswer("absent", 0L, null, null, null, valueColumns)
    case FetchAnswer.Found(t, v) => new EmbeddedAnswer("found", t, decodeValue(v), null, null, valueColumns)
    case p: FetchAnswer.Pairs => new EmbeddedAnswer("pairs", 0L, null, p.times, p.values.map(decodeValue), valueColumns)
    case FetchAnswer.Aggregate(row, t, _) =>
      new EmbeddedAnswer("aggregate", 0L, BinaryRow.decode(t, row), null, null, t.fields.map(_.name).toArray)
  }
}
