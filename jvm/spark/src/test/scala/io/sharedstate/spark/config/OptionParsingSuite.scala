package io.sharedstate.spark.config

import io.sharedstate.spark.rows.StateSchemas

import io.sharedstate.core.{SharedStateException, StateSpec}
import org.apache.spark.sql.types._
import org.scalatest.funsuite.AnyFunSuite

class OptionParsingSuite extends AnyFunSuite {
  test("lateness intervals become microseconds") {
    assert(Intervals.parseMicros("lateness", "5 seconds") == 5000000L)
    assert(Intervals.parseMicros("lateness", "1 minute 30 seconds") == 90000000L)
    assert(Intervals.parseMicros("lateness", "2 days") == 2L * 86400 * 1000000)
    assert(Intervals.parseMicros("lateness", "0 seconds") == 0L)
  }

  test("bad lateness names the option and what is allowed") {
    val months = intercept[SharedStateException](Intervals.parseMicros("lateness", "1 month"))
    assert(months.getMessage.contains("months or years"))
    val junk = intercept[SharedStateException](Intervals.parseMicros("lateness", "soon"))
    assert(junk.getMessage.contains("Option 'lateness': 'soon' is not an interval"))
    val negative = intercept[SharedStateException](Intervals.parseMicros("lateness", "-5 seconds"))
    assert(negative.getMessage.contains("negative"))
  }

  test("columns bind by name, case-insensitively when unambiguous, with types checked") {
    val schema = StructType(Seq(StructField("Ad_Id", StringType), StructField("ts", TimestampType)))
    val key = StructType(Seq(StructField("ad_id", StringType)))
    assert(StateSchemas.bindColumns(schema, Seq("ad_id"), key, "key", "s").toSeq == Seq(0))
    val wrongType = StructType(Seq(StructField("ad_id", LongType)))
    val e = intercept[SharedStateException](StateSchemas.bindColumns(schema, Seq("Ad_Id"), wrongType, "key", "s"))
    assert(e.getMessage.contains("Column 'Ad_Id' has type STRING, but State 's' expects ad_id BIGINT"))
    val count = intercept[SharedStateException](StateSchemas.bindColumns(schema, Seq("Ad_Id", "ts"), key, "key", "s"))
    assert(count.getMessage.contains("names 2 column(s)"))
    assert(StateSchemas.checkTimestamp(schema, "ts", "time") == 1)
  }

  test("a State's read schema: key, value, then <state>_time") {
    val s = StateSchemas.of(StateSpec("campaigns", "ad_id STRING", "campaign STRING, budget DOUBLE", 2, "replace"))
    assert(s.asOfSchema.fieldNames.toSeq == Seq("ad_id", "campaign", "budget", "campaigns_time"))
    val bad = intercept[SharedStateException](StateSchemas.parse("s", "value", "x NOTATYPE"))
    assert(bad.getMessage.contains("the value schema 'x NOTATYPE' is not a valid DDL"))
  }
}
