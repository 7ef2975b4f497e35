package io.sharedstate.spark.rules

import io.sharedstate.core.SharedStateException
import io.sharedstate.core.row.{BinaryRowWriter, ValueType}
import io.sharedstate.core.rules.UpdateRule
import org.apache.spark.sql.catalyst.QueryPlanningTracker
import org.apache.spark.sql.catalyst.analysis.SimpleAnalyzer
import org.apache.spark.sql.catalyst.expressions.{
  Alias,
  AttributeReference,
  Cast,
  EvalMode,
  Expression,
  GenericInternalRow,
  UnsafeProjection,
  UnsafeRow
}
import org.apache.spark.sql.catalyst.parser.CatalystSqlParser
import org.apache.spark.sql.catalyst.plans.logical.{LocalRelation, Project}
import org.apache.spark.sql.types.{DataType, StructType}
import scala.util.control.NonFatal

/**
 * The update rule `expr:<Spark SQL expression>` over `old` (the previous value, null on a key's first
 * update) and `new` (the incoming one). For a one-column value `old` and `new` are that column and the
 * expression returns its new value; for several columns they are structs (`old.clicks`) and the
 * expression returns a struct of the value's columns, in order (`struct(...)`, names not checked). A
 * result of another type is cast as Spark's ANSI store assignment (an INSERT into a column of the
 * value's type) casts it: BIGINT into INT fails on overflow (that update is rejected, `rule_failed`),
 * STRING into BIGINT is refused when the State is defined. A null struct stores every column null.
 *
 * Values are UnsafeRow bytes, so the rule reads them in place and writes the result with an
 * UnsafeProjection (generated code, or interpreted where code generation fails). The expression is
 * analysed with Spark's built-in functions only, no SparkSession, so it resolves the same on the
 * driver and on every executor that hosts partitions of the State.
 */
private[sharedstate] final class SqlExpressionRule(val expression: String, valueType: ValueType,
    sides: SqlExpressionRule.Sides = SqlExpressionRule.OldAndNew)
    extends UpdateRule {
  import SqlExpressionRule._

  val name: String = Prefix + expression
  private val value: StructType = valueStruct(name, valueType)
  private val single = value.length == 1
  private val sideType: DataType = if (single) value.head.dataType else value
  private val oldAndNew = Seq(AttributeReference(sides.first, sideType)(), AttributeReference(sides.second, sideType)())
  private val bound: Expression = analyse(name, expression, oldAndNew, sideType, sides)
  private val allNull: Array[Byte] = {
    val w = new BinaryRowWriter(value.length)
    value.indices.foreach(w.setNull)
    w.toBytes
  }

  // A projection is not thread-safe (it reuses its output row), and partitions apply in parallel.
  @transient private lazy val projections: ThreadLocal[UnsafeProjection] =
    ThreadLocal.withInitial(() => UnsafeProjection.create(Seq(bound), oldAndNew))

  def apply(previous: Array[Byte], incoming: Array[Byte]): Array[Byte] = {
    val out = projections.get.apply(new GenericInternalRow(Array[Any](side(previous), side(incoming))))
    // copy(): the projection's buffer is reused by the next call.
    if (single) out.copy().getBytes
    else if (out.isNullAt(0)) allNull.clone()
    else out.getStruct(0, value.length).copy().getBytes
  }

  private def side(bytes: Array[Byte]): Any =
    if (bytes == null) null
    else {
      val row = new UnsafeRow(value.length)
      row.pointTo(bytes, bytes.length)
      if (single) row.get(0, sideType) else row
    }
}

private[sharedstate] object SqlExpressionRule {
  val Prefix = "expr:"

  /** What the expression's two inputs are called and how an error explains them. */
  final case class Sides(what: String, first: String, second: String, hint: String)
  val OldAndNew: Sides = Sides(
    "Update rule",
    "old",
    "new",
    "Write a Spark SQL expression over `old` (the previous value, null on a key's first update) and `new` " +
      "(the incoming value), e.g. 'expr:greatest(old, new)'; with several value columns they are structs " +
      "(old.<column>) and the expression returns struct(<columns in order>)."
  )
  val MergeSides: Sides = Sides(
    "Partial merge",
    "a",
    "b",
    "Write a Spark SQL expression over `a` and `b` (two instances' values, never null), e.g. " +
      "'expr:greatest(a, b)'; with several value columns they are structs (a.<column>) and the expression " +
      "returns struct(<columns in order>)."
  )

  private def valueStruct(rule: String, t: ValueType): StructType = {
    val ddl = t.fields.map(f => s"`${f.name.replace("`", "``")}` ${f.dataType.sql}").mkString(", ")
    try StructType.fromDDL(ddl)
    catch {
      case NonFatal(e) => throw new SharedStateException(
          s"Update rule '$rule': Spark cannot read the value schema <$ddl>: ${e.getMessage}", e)
    }
  }

  /** The expression parsed, resolved against (old, new), type-checked, cast to the value's type. */
  private def analyse(rule: String, body: String, oldAndNew: Seq[AttributeReference], result: DataType,
      sides: Sides): Expression = {
    def fail(what: String, cause: Throwable = null) = throw new SharedStateException(
      s"${sides.what} '$rule' for values of type ${result.sql}: $what. ${sides.hint}", cause)
    if (body.isEmpty) fail("the expression is empty")
    val parsed =
      try CatalystSqlParser.parseExpression(body)
      catch { case NonFatal(e) => fail(s"Spark cannot parse it: ${e.getMessage}", e) }
    val analysed =
      try SimpleAnalyzer.executeAndCheck(Project(Seq(Alias(parsed, "result")()), LocalRelation(oldAndNew)),
          new QueryPlanningTracker(None))
      catch { case NonFatal(e) => fail(s"Spark cannot resolve it: ${e.getMessage}", e) }
    val expr = analysed match {
      case Project(Seq(Alias(e, _)), _: LocalRelation) => e
      case _ => fail("it is not a scalar expression (aggregate and window functions are not allowed)")
    }
    if (!expr.deterministic) fail("it is not deterministic (rules are replayed and must give the same value)")
    if (DataType.equalsIgnoreCaseAndNullability(expr.dataType, result)) expr
    else if (Cast.canANSIStoreAssign(expr.dataType, result)) Cast(expr, result, Some("UTC"), EvalMode.ANSI)
    else fail(s"it returns ${expr.dataType.sql}, which cannot be stored as ${result.sql}")
  }
}
