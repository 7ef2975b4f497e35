package io.sharedstate.spark.fetch

import io.sharedstate.spark.cluster.{Incarnations, StateClient}
import io.sharedstate.spark.config.Intervals
import io.sharedstate.spark.rows.{KeyEncoder, StateSchemas}

import io.sharedstate.core.{EventTime, FetchAnswer, SharedStateException}
import io.sharedstate.core.fetch.ReadMode
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.encoders.ExpressionEncoder
import org.apache.spark.sql.catalyst.expressions.{BinaryExpression, Expression}
import org.apache.spark.sql.catalyst.expressions.codegen.CodegenFallback
import org.apache.spark.sql.catalyst.util.DateTimeUtils
import org.apache.spark.sql.types.{DataType, StructType, TimestampType}

/**
 * `sharedstate_fetch(state, key, time [, rule [, window [, staleness]]])`: what a State answers for
 * `key` at `time`, as a struct of the columns a fetch join with the same rule adds (`latest`, the
 * default: the value columns and `<state>_time`; `range`: `<state>_range`; aggregates: their result
 * columns); null when the key had nothing. Read-committed unless a staleness is given. A time whose
 * answer is not final yet is an error: SQL has no way to wait, so it never returns a value that
 * could still change (streams that must wait use fetch_join). A composite key is passed as a struct
 * of the key columns, in the State's key order.
 */
private[sharedstate] final case class SharedStateFetchExpression(stateName: String, key: Expression, time: Expression,
    rule: FetchJoinRule = FetchJoinRule.Latest, mode: ReadMode = ReadMode.Committed, incarnation: Long = -1L)
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
    client.fetch(rule.request(k, micros, mode, client.spec.valueType)) match {
      case FetchAnswer.NotYet =>
        throw new SharedStateException(s"sharedstate_fetch('$stateName', ..., ${EventTime.show(micros)}): " +
          s"that time is not yet below the update progress of the State (U=${EventTime.show(client.updateProgress)}), " +
          "so the answer is not final. Ask for an earlier time, or use fetch_join on a stream, whose rows wait for U.")
      case answer =>
        val c = cells(answer, DateTimeUtils.toJavaTimestamp(micros))
        if (!c.matched && answer == FetchAnswer.Absent) null
        else toInternal(org.apache.spark.sql.Row.fromSeq(c.values)).copy()
    }
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
    SharedStateFetchExpression(name, args(1), args(2), rule, mode, client.incarnation)
  }

  private def literal(e: Expression, what: String): Option[String] =
    if (e.foldable && (e.dataType.typeName == "string" || e.dataType.typeName == "void"))
      Option(e.eval()).map(_.toString)
    else throw new SharedStateException(s"$Name: $what must be a string literal; got ${e.sql}.")
}
