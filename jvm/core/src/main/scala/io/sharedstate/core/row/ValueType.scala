package io.sharedstate.core.row

import io.sharedstate.core.SharedStateException

/** The type of one column of a binary row, as far as the engine needs to read or write it. */
sealed trait FieldType {
  def sql: String
  def isNumeric: Boolean = false
}

object FieldType {
  sealed abstract class Fixed(val sql: String) extends FieldType
  sealed abstract class Numeric(sql: String) extends Fixed(sql) { override def isNumeric = true }
  case object LongType extends Numeric("BIGINT")
  case object IntType extends Numeric("INT")
  case object DoubleType extends Numeric("DOUBLE")
  case object FloatType extends Numeric("FLOAT")
  case object BooleanType extends Fixed("BOOLEAN")

  /** Microseconds since the epoch, stored like a BIGINT. */
  case object TimestampType extends Fixed("TIMESTAMP")
  case object StringType extends FieldType { val sql = "STRING" }
  final case class ArrayType(element: FieldType) extends FieldType {
    def sql = s"ARRAY<${element.sql}>"
    def isNumericArray: Boolean = element.isNumeric
  }

  /** A type the engine stores but never looks inside (replace and user rules still work). */
  final case class Opaque(sql: String) extends FieldType

  private val byName: Map[String, FieldType] = Map(
    "BIGINT" -> LongType,
    "LONG" -> LongType,
    "INT" -> IntType,
    "INTEGER" -> IntType,
    "DOUBLE" -> DoubleType,
    "FLOAT" -> FloatType,
    "REAL" -> FloatType,
    "BOOLEAN" -> BooleanType,
    "TIMESTAMP" -> TimestampType,
    "STRING" -> StringType
  )

  /** Parses one type of the DDL subset; anything else is kept as [[Opaque]]. */
  def parse(text: String): FieldType = {
    val t = text.trim
    val upper = t.toUpperCase
    if (upper.startsWith("ARRAY<") && upper.endsWith(">")) ArrayType(parse(t.substring(6, t.length - 1)))
    else byName.getOrElse(upper, Opaque(t))
  }
}

final case class Field(name: String, dataType: FieldType)

/**
 * The columns of a value (or key) row, parsed from the State's DDL ("clicks BIGINT, w ARRAY<DOUBLE>").
 * Only the types the built-in rules read are understood; others parse as opaque columns.
 */
final case class ValueType(fields: IndexedSeq[Field]) {
  def size: Int = fields.length
  def apply(i: Int): FieldType = fields(i).dataType
  def ddl: String = fields.map(f => s"${f.name} ${f.dataType.sql}").mkString(", ")
  def indexOf(name: String): Int = fields.indexWhere(_.name.equalsIgnoreCase(name))
}

object ValueType {
  def of(fields: (String, FieldType)*): ValueType = ValueType(fields.map { case (n, t) => Field(n, t) }.toIndexedSeq)

  /** Parses "name TYPE, name TYPE"; NOT NULL and COMMENT clauses are ignored. */
  def parse(ddl: String): ValueType = {
    if (ddl == null || ddl.trim.isEmpty)
      throw new SharedStateException("A schema must name at least one column, e.g. 'v BIGINT'.")
    val columns = splitTopLevel(ddl).map(_.trim).filter(_.nonEmpty)
    ValueType(columns.map { col =>
      val (name, rest) =
        if (col.startsWith("`")) {
          val end = col.indexOf('`', 1)
          if (end < 0) throw new SharedStateException(s"Unclosed backtick in column '$col' of schema '$ddl'.")
          (col.substring(1, end), col.substring(end + 1).trim)
        } else {
          val sp = col.indexWhere(_.isWhitespace)
          if (sp < 0) throw new SharedStateException(
            s"Column '$col' of schema '$ddl' has no type: write 'name TYPE', e.g. '$col BIGINT'.")
          (col.substring(0, sp), col.substring(sp + 1).trim)
        }
      Field(name, FieldType.parse(stripClauses(rest)))
    }.toIndexedSeq)
  }

  private def stripClauses(t: String): String = {
    val upper = t.toUpperCase
    val cut = Seq(" NOT NULL", " COMMENT ").map(upper.indexOf).filter(_ >= 0).minOption
    cut.fold(t)(t.substring(0, _)).trim
  }

  private def splitTopLevel(s: String): Seq[String] = {
    val out = Seq.newBuilder[String]
    var depth = 0
    var start = 0
    var quote: Char = 0
    var i = 0
    while (i < s.length) {
      val c = s.charAt(i)
      if (quote != 0) { if (c == quote) quote = 0 }
      else if (c == '`' || c == '\'' || c == '"') quote = c
      else if (c == '<' || c == '(') depth += 1
      else if (c == '>' || c == ')') depth -= 1
      else if (c == ',' && depth == 0) { out += s.substring(start, i); start = i + 1 }
      i += 1
    }
    out += s.substring(start)
    out.result()
  }
}
