package io.sharedstate.spark

import io.sharedstate.core.{EventTime, FetchAnswer, Key, SharedStateException}
import io.sharedstate.core.fetch.FetchRequest
import io.sharedstate.spark.distributed.StateClient
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{BinaryExpression, Expression, GetStructField, UnsafeProjection}
import org.apache.spark.sql.catalyst.expressions.codegen.CodegenFallback
import org.apache.spark.sql.types.{DataType, StructField, StructType, TimestampType}

/**
 * `sharedstate_fetch(state, key, time)`: the read-committed `latest` value of a State at `time`, as
 * a struct of the State's value columns and `<state>_time`; null when the key had no value then.
 * A time not yet below U is an error: SQL has no way to wait, so it never returns a value that
 * could still change (streams that must wait use fetch_join). A composite key is passed as a
 * struct of the key columns, in the State's key order.
 */
final case class SharedStateFetchExpression(stateName: String, key: Expression, time: Expression)
  extends BinaryExpression with CodegenFallback {

  @transient private lazy val client = StateClient.of(stateName)
  @transient private lazy val schemas = StateSchemas.of(client.spec)

  override def left: Expression = key
  override def right: Expression = time
  override def nullable: Boolean = true
  override def prettyName: String = "sharedstate_fetch"

  override def dataType: DataType = StructType(
    schemas.value.fields.map(_.copy(nullable = true)) :+ StructField(schemas.timeColumn, TimestampType))

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
  @transient private lazy val keyProjection: UnsafeProjection =
    if (schemas.key.length == 1) UnsafeProjection.create(Seq(key))
    else UnsafeProjection.create(schemas.key.indices.map(i => GetStructField(key, i)))

  override def eval(input: InternalRow): Any = {
    if (key.eval(input) == null) return null
    val t = time.eval(input)
    if (t == null) return null
    val k = new Key(keyProjection(input).copy().getBytes)
    client.fetch(FetchRequest(k, t.asInstanceOf[Long])) match {
      case FetchAnswer.Absent => null
      case FetchAnswer.Found(at, bytes) =>
        InternalRow.fromSeq(StoredRows.wrap(bytes, schemas.value.length).toSeq(schemas.value) :+ at)
      case FetchAnswer.NotYet =>
        throw new SharedStateException(s"sharedstate_fetch('$stateName', ..., ${EventTime.show(t.asInstanceOf[Long])}): " +
          s"that time is not yet below the update progress of the State (U=${EventTime.show(client.updateProgress)}), " +
          "so the answer is not final. Ask for an earlier time, or use fetch_join on a stream, whose rows wait for U.")
      case other => throw new IllegalStateException(s"a latest fetch answered $other")
    }
  }

  override protected def withNewChildrenInternal(newLeft: Expression, newRight: Expression): Expression =
    copy(key = newLeft, time = newRight)
}

object SharedStateFetchExpression {
  val Name = "sharedstate_fetch"

  /** Builds the expression from SQL arguments: a literal State name, a key, a time. */
  def build(args: Seq[Expression]): Expression = {
    if (args.length != 3) {
      throw new SharedStateException(s"$Name takes 3 arguments (state name, key, time); got ${args.length}.")
    }
    val name = args.head match {
      case e if e.foldable && e.dataType.typeName == "string" && e.eval() != null => e.eval().toString
      case other => throw new SharedStateException(s"$Name: the first argument must be a State name literal; got ${other.sql}.")
    }
    StateClient.of(name) // unknown States fail at analysis
    SharedStateFetchExpression(name, args(1), args(2))
  }
}
