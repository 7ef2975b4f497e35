package io.sharedstate.spark.fetch

import io.sharedstate.spark.cluster.{Incarnations, StateClient}
import io.sharedstate.spark.config.{Intervals, SharedStateConf}
import io.sharedstate.spark.rows.{KeyEncoder, StateSchemas}
import io.sharedstate.spark.write.RealtimeLanes

import io.sharedstate.core.{EventTime, FetchAnswer, SharedStateException}
import io.sharedstate.core.fetch.{FetchRequest, ReadMode}
import java.util.concurrent.{ExecutionException, TimeUnit, TimeoutException}
import org.apache.spark.TaskContext
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.encoders.ExpressionEncoder
import org.apache.spark.sql.catalyst.expressions.{BinaryExpression, Expression}
import org.apache.spark.sql.catalyst.expressions.codegen.CodegenFallback
import org.apache.spark.sql.catalyst.util.DateTimeUtils
import org.apache.spark.sql.execution.streaming.runtime.StreamExecution
import org.apache.spark.sql.types.{DataType, StructType, TimestampType}

/**
 * `sharedstate_fetch(state, key, time [, rule [, window [, staleness]]])`: what a State answers for
 * `key` at `time`, as a struct of the columns a fetch join with the same rule adds (`latest`, the
 * default: the value columns and `<state>_time`; `range`: `<state>_range`; aggregates: their result
 * columns); null when the key had nothing. Read-committed unless a staleness is given. A time whose
 * answer is not final yet is never answered with a value that could still change: in a streaming
 * task (a real-time query's projection above all) the row waits until U passes its time, at most
 * `waitMs` (`spark.sharedstate.realtime.fetchTimeout`, read when the query is planned), then fails
 * naming the State, the time and U; in a batch query it fails at once. A composite key is passed as
 * a struct of the key columns, in the State's key order.
 */
private[sharedstate] final case class SharedStateFetchExpression(stateName: String, key: Expression, time: Expression,
    rule: FetchJoinRule = FetchJoinRule.Latest, mode: ReadMode = ReadMode.Committed, incarnation: Long = -1L,
    waitMs: Long = 0L, deliveryLanes: Boolean = false)
    extends BinaryExpression with CodegenFallback {

  @transient private lazy val client = StateClient.of(stateName)
  @transient private lazy val schemas = StateSchemas.of(client.spec)
  @transient private lazy val resultType = StructType(rule.addedColumns(schemas))
  @transient private lazy val cells = new FetchAnswerCells(
    FetchJoinSpec(stateName, schemas, client.spec.valueType, new StructType(), Array.empty, -1, inner = false, mode,
      rule, incarnation, local = false))
  @transient private lazy val toInternal = ExpressionEncoder(resultType).createSerializer()

  override def left: Expression = key
  override def right: Expression = time
  override def nullable: Boolean = true
  override def prettyName: String = SharedStateFetchExpression.Name

  override def dataType: DataType = resultType

  override def checkInputDataTypes(): org.apache.spark.sql.catalyst.analysis.TypeCheckResult = {
    import org.apache.spark.sql.catalyst.analysis.TypeCheckResult._
    val expectedKey: DataType = if (schemas.key.length == 1) schemas.key.head.dataType else schemas.key
    if (!DataType.equalsStructurally(key.dataType, expectedKey, ignoreNullability = true)) {
      TypeCheckFailure(s"sharedstate_fetch: the key of State '$stateName' is ${schemas.key.toDDL}; got " +
        s"${key.dataType.sql}" + (if (schemas.key.length > 1) " (pass a struct of the key columns, in order)" else ""))
    } else if (time.dataType != TimestampType) {
      TypeCheckFailure(s"sharedstate_fetch: the time argument must be TIMESTAMP; got ${time.dataType.sql}")
    } else TypeCheckSuccess
  }

  // The key as the binary row the sink stores: one column, or the struct's fields.
  @transient private lazy val keys = KeyEncoder.expression(key, schemas.key)

  // Checked once per task (the client is resolved once per expression instance there).
  @transient private lazy val checked: Boolean = {
    if (incarnation >= 0) Incarnations.check(stateName, incarnation, client.incarnation, "query")
    true
  }

  override def eval(input: InternalRow): Any = {
    checked
    if (key.eval(input) == null) return null
    val t = time.eval(input)
    if (t == null) return null
    val micros = t.asInstanceOf[Long]
    val k = keys.key(input)
    val request = rule.request(k, micros, mode, client.spec.valueType)
    client.fetch(request) match {
      case FetchAnswer.NotYet if waitMs > 0 && inStreamingTask => answerWhenFinal(request, micros)
      case FetchAnswer.NotYet =>
        throw new SharedStateException(s"sharedstate_fetch('$stateName', ..., ${EventTime.show(micros)}): " +
          s"that time is not yet below the update progress of the State (U=${EventTime.show(client.updateProgress)}), " +
          "so the answer is not final. Ask for an earlier time, or use fetch_join on a stream, whose rows wait for U.")
      case answer => cellsOf(answer, micros)
    }
  }

  @transient private lazy val inStreamingTask: Boolean =
    Option(TaskContext.get()).exists(_.getLocalProperty(StreamExecution.QUERY_ID_KEY) != null)

  // The owner answers an asynchronous fetch when U passes its time (as for a continuous fetch join).
  private def answerWhenFinal(request: FetchRequest, micros: Long): Any = {
    val pending = if (deliveryLanes) RealtimeLanes.of(stateName).fetchAsync(request) else client.fetchAsync(request)
    val answer =
      try pending.get(waitMs, TimeUnit.MILLISECONDS)
      catch {
        case _: TimeoutException =>
          pending.cancel(false)
          throw new SharedStateException(s"sharedstate_fetch('$stateName', ..., ${EventTime.show(micros)}): U of " +
            s"State '$stateName' did not pass that time within ${SharedStateConf.RealtimeFetchTimeout.key}=$waitMs ms " +
            s"(U=${EventTime.show(client.updateProgress)}), so the row has no final answer. Are the State's writers " +
            "running? Raise the timeout, or give a staleness for a read-uncommitted answer.")
        case e: ExecutionException => throw e.getCause
      }
    cellsOf(answer, micros)
  }

  private def cellsOf(answer: FetchAnswer, micros: Long): Any = {
    val c = cells(answer, DateTimeUtils.toJavaTimestamp(micros))
    if (!c.matched && answer == FetchAnswer.Absent) null
    else toInternal(org.apache.spark.sql.Row.fromSeq(c.values)).copy()
  }

  override protected def withNewChildrenInternal(newLeft: Expression, newRight: Expression): Expression =
    copy(key = newLeft, time = newRight)
}

private[sharedstate] object SharedStateFetchExpression {
  val Name = "sharedstate_fetch"

  /** Builds the expression from SQL arguments: a State name literal, a key, a time, then optional literals. */
  def build(args: Seq[Expression]): Expression = {
    if (args.length < 3 || args.length > 6) {
      throw new SharedStateException(
        s"$Name takes 3 to 6 arguments (state name, key, time[, rule[, window[, staleness]]]); " +
          s"got ${args.length}.")
    }
    val name = literal(args.head, "the first argument (State name)").getOrElse(
      throw new SharedStateException(s"$Name: the first argument must be a State name literal; got null."))
    val client = StateClient.of(name) // unknown States fail at analysis
    val spec = client.spec
    val schemas = StateSchemas.of(spec)
    val ruleName = args.lift(3).flatMap(literal(_, "the rule")).getOrElse("latest")
    val window = args.lift(4).flatMap(literal(_, "the window")).orNull
    val rule = FetchJoinRule.parse(ruleName, window, schemas, spec.valueType, spec.fetchRules)
    val mode = args.lift(5).flatMap(literal(_, "the staleness"))
      .map(s => ReadMode.Uncommitted(Intervals.parseMicros("staleness", s))).getOrElse(ReadMode.Committed)
    val waitMs = SparkSession.getActiveSession.map(SharedStateConf.RealtimeFetchTimeout.read)
      .getOrElse(SharedStateConf.RealtimeFetchTimeout.fromText(SharedStateConf.RealtimeFetchTimeout.default))
    val lanes = SparkSession.getActiveSession.exists(SharedStateConf.RealtimeDeliveryLanes.read)
    SharedStateFetchExpression(name, args(1), args(2), rule, mode, client.incarnation, waitMs, lanes)
  }

  private def literal(e: Expression, what: String): Option[String] =
    if (e.foldable && (e.dataType.typeName == "string" || e.dataType.typeName == "void"))
      Option(e.eval()).map(_.toString)
    else throw new SharedStateException(s"$Name: $what must be a string literal; got ${e.sql}.")
}
