package io.sharedstate.spark.txn

import io.sharedstate.core.SharedStateException
import org.apache.spark.sql.catalyst.QueryPlanningTracker
import org.apache.spark.sql.catalyst.analysis.SimpleAnalyzer
import org.apache.spark.sql.catalyst.expressions.{Alias, Attribute, Cast, CreateStruct, Expression, If, IsNull, Literal}
import org.apache.spark.sql.catalyst.parser.CatalystSqlParser
import org.apache.spark.sql.catalyst.plans.logical.{LocalRelation, Project}
import org.apache.spark.sql.types.{BooleanType, DataType, StructType}
import scala.util.control.NonFatal

/**
 * Spark SQL expressions of a declarative transaction, parsed and resolved with Catalyst against the
 * columns they may use (the event's columns; for the condition and the new values also one struct
 * column per value read), with Spark's built-in functions only and no SparkSession, so they resolve
 * the same on the driver, where the query is checked, and on the executors, where they run.
 */
private[sharedstate] object TransactionExpressions {

  /** `sql` resolved against `columns`; `what` names it in errors ("the condition", "the key of read 'src'"). */
  def analyse(what: String, sql: String, columns: Seq[Attribute]): Expression = {
    def fail(why: String, cause: Throwable = null) = throw new SharedStateException(
      s"Transaction: $what '$sql' $why. It may use ${columns.map(c => s"`${c.name}`").mkString(", ")} " +
        "(the event's columns, and for conditions and new values the values read, as structs).",
      cause
    )
    if (sql == null || sql.trim.isEmpty) throw new SharedStateException(s"Transaction: $what is empty.")
    val parsed =
      try CatalystSqlParser.parseExpression(sql)
      catch { case NonFatal(e) => fail(s"cannot be parsed: ${e.getMessage}", e) }
    val analysed =
      try SimpleAnalyzer.executeAndCheck(Project(Seq(Alias(parsed, "result")()), LocalRelation(columns)),
          new QueryPlanningTracker(None))
      catch { case NonFatal(e) => fail(s"cannot be resolved: ${e.getMessage}", e) }
    val expr = analysed match {
      case Project(Seq(Alias(e, _)), _: LocalRelation) => e
      case _ => fail("is not a scalar expression (aggregate and window functions are not allowed)")
    }
    if (!expr.deterministic) fail("is not deterministic (a transaction must decide the same on every re-run)")
    expr
  }

  /**
   * Each `(what, sql)` resolved against `columns`, as [[analyse]] does, with one run of the analyzer for
   * all of them (a program has tens); when that fails, each on its own, so the error names the one at fault.
   */
  def analyseAll(items: Seq[(String, String)], columns: Seq[Attribute]): IndexedSeq[Expression] = {
    val parsed =
      try Some(items.map { case (_, sql) => CatalystSqlParser.parseExpression(sql) })
      catch { case NonFatal(_) => None }
    val together =
      parsed.filter(_ => items.forall { case (_, sql) => sql != null && sql.trim.nonEmpty }).flatMap { ps =>
        try {
          val plan = SimpleAnalyzer.executeAndCheck(
            Project(ps.zipWithIndex.map { case (e, i) => Alias(e, s"result$i")() }, LocalRelation(columns)),
            new QueryPlanningTracker(None))
          plan match {
            case Project(list, _: LocalRelation) if list.size == ps.size =>
              val exprs = list.map { case Alias(e, _) => e; case other => other }
              Option.when(list.forall(_.isInstanceOf[Alias]) && exprs.forall(_.deterministic))(exprs.toIndexedSeq)
            case _ => None
          }
        } catch { case NonFatal(_) => None }
      }
    together.getOrElse(items.map { case (what, sql) => analyse(what, sql, columns) }.toIndexedSeq)
  }

  /**
   * A key expression: it must have the State's key type exactly (equal keys must be equal bytes), the
   * key column's type for a one-column key, else a struct of the key's columns in order (names not
   * checked).
   */
  def key(what: String, sql: String, columns: Seq[Attribute], state: String, keySchema: StructType): Expression =
    key(what, sql, analyse(what, sql, columns), state, keySchema)

  /** [[key]] of `expr`, `sql` analysed. */
  def key(what: String, sql: String, expr: Expression, state: String, keySchema: StructType): Expression = {
    val expected: DataType = if (keySchema.length == 1) keySchema.head.dataType else keySchema
    if (!DataType.equalsStructurally(expr.dataType, expected, ignoreNullability = true)) {
      throw new SharedStateException(
        s"Transaction: $what '$sql' has type ${expr.dataType.sql}, but State '$state' has keys of type " +
          s"${expected.sql} (${keySchema.toDDL}); cast it, e.g. CAST(... AS ${expected.sql})" +
          (if (keySchema.length > 1) " or struct(<key columns in order>)." else "."))
    }
    expr
  }

  /** The condition: BOOLEAN (null aborts, as a WHERE drops a null). */
  def condition(sql: String, columns: Seq[Attribute]): Expression =
    condition(sql, analyse("the condition", sql, columns))

  /** [[condition]] of `expr`, `sql` analysed. */
  def condition(sql: String, expr: Expression): Expression = {
    if (expr.dataType != BooleanType) throw new SharedStateException(
      s"Transaction: the condition '$sql' has type ${expr.dataType.sql}; it must be BOOLEAN " +
        "(true commits the transaction, false or null aborts it).")
    expr
  }

  /**
   * A new value, as the stored struct of the State's value columns. A one-column value may be given
   * as that column's value; a struct is matched by position (names not checked). A type that does
   * not widen safely (Spark's up-cast: INT into BIGINT, never BIGINT into INT) is refused here, so
   * no write can fail on a value once the query runs.
   */
  def value(what: String, sql: String, columns: Seq[Attribute], state: String, valueSchema: StructType): Expression =
    value(what, sql, analyse(what, sql, columns), state, valueSchema)

  /** [[value]] of `expr`, `sql` analysed. */
  def value(what: String, sql: String, expr: Expression, state: String, valueSchema: StructType): Expression = {
    val single = valueSchema.length == 1
    val target = nullableStruct(valueSchema)
    // A one-column value given bare is wrapped, null staying null (no write), not a struct of null.
    val fitted: Option[Expression] =
      if (single && Cast.canUpCast(expr.dataType, target.head.dataType)) {
        val column = CreateStruct(Seq(Cast(expr, target.head.dataType, Some("UTC"))))
        Some(If(IsNull(expr), Literal(null, target), Cast(column, target, Some("UTC"))))
      } else if (Cast.canUpCast(expr.dataType, target)) Some(Cast(expr, target, Some("UTC")))
      else None
    fitted.getOrElse(
      throw new SharedStateException(
        s"Transaction: $what '$sql' has type ${expr.dataType.sql}, which cannot be stored in State '$state' " +
          s"(values ${valueSchema.toDDL}" + (if (single) s": give a ${valueSchema.head.dataType.sql}" else "") +
          " or named_struct(<value columns in order>); only safe widening casts are applied, cast it explicitly)."))
  }

  /** The value struct as the columns read from a State: every field nullable (a State stores nulls). */
  def nullableStruct(schema: StructType): StructType = StructType(schema.fields.map(_.copy(nullable = true)))
}
