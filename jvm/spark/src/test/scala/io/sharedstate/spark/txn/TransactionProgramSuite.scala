package io.sharedstate.spark.txn

import io.sharedstate.spark.rows.{KeyEncoder, StateSchemas}

import io.sharedstate.core.SharedStateException
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.UnsafeRow
import org.apache.spark.sql.types.StructType
import org.apache.spark.unsafe.types.UTF8String
import org.scalatest.funsuite.AnyFunSuite
import scala.util.Random

/**
 * The declarative transaction compiler (Catalyst over the event's columns and the values read):
 * keys equal the bytes the sink stores, the decision equals the same transfer written in Scala on
 * random inputs, and each kind of bad input fails when compiled, naming what is wrong.
 */
class TransactionProgramSuite extends AnyFunSuite {
  private val events = StructType.fromDDL("from_id STRING, to_id STRING, amount BIGINT, kind STRING, ts TIMESTAMP")
  private val schemas = Map(
    "accounts" -> StateSchemas("accounts", StructType.fromDDL("id STRING"), StructType.fromDDL("balance BIGINT")),
    "pairs" -> StateSchemas("pairs", StructType.fromDDL("a STRING, b INT"), StructType.fromDDL("n BIGINT, note STRING"))
  )
  private def schemaOf(state: String): StateSchemas = schemas.getOrElse(state,
    throw new SharedStateException(s"No State '$state'."))

  private val transfer = Seq(
    TransactionAccess("src", "accounts", "from_id", null), TransactionAccess("dst", "accounts", "to_id", null))
  // A deposit has no from_id (its source read and write are not made); a transfer needs the funds.
  private val transferCondition = "from_id IS NULL OR src.balance >= amount"
  private val transferWrites = Seq(
    TransactionAccess(null, "accounts", "from_id", "named_struct('balance', src.balance - amount)"),
    TransactionAccess(null, "accounts", "to_id", "coalesce(dst.balance, 0) + amount")
  )

  private def compile(reads: Seq[TransactionAccess] = transfer, condition: String = transferCondition,
      writes: Seq[TransactionAccess] = transferWrites): TransactionProgram =
    TransactionProgram.compile(events, reads, condition, writes, schemaOf)

  private def event(from: String, to: String, amount: Long): InternalRow =
    InternalRow(Option(from).map(UTF8String.fromString).orNull, Option(to).map(UTF8String.fromString).orNull,
      amount, UTF8String.fromString("t"), 0L)

  private def balance(v: Long): Array[Byte] = {
    val p = org.apache.spark.sql.catalyst.expressions.UnsafeProjection.create(StructType.fromDDL("balance BIGINT"))
    p(InternalRow(v)).copy().getBytes
  }

  private def decoded(bytes: Array[Byte]): Option[Long] = Option(bytes).map { b =>
    val r = new UnsafeRow(1); r.pointTo(b, b.length); r.getLong(0)
  }

  test("keys are the bytes the sink stores; a null key is an access not made") {
    val p = compile()
    val sink = KeyEncoder.columns(events, Array(0))
    val keys = p.keys(event("a", null, 5))
    assert(keys.length == 4)
    assert(keys(0).bytes.sameElements(sink.bytes(event("a", null, 5))))
    assert(keys(1) == null && keys(3) == null)
    assert(keys(2) == keys(0))
  }

  test("multi-column keys: a struct of the key's columns in order; null when one column is") {
    val p = TransactionProgram.compile(
      events,
      Seq(TransactionAccess("p", "pairs", "struct(from_id, 7)", null)),
      "true",
      Seq(TransactionAccess(null, "pairs", "struct(to_id, CAST(amount AS INT))",
          "named_struct('n', coalesce(p.n, 0) + 1, 'note', kind)")),
      schemaOf
    )
    val k = p.keys(event("x", null, 1))
    assert(k(0) != null && k(1) == null)
  }

  test("decisions equal the transfer written in Scala, on random balances and amounts") {
    val p = compile()
    val r = new Random(24)
    (1 to 500).foreach { _ =>
      val deposit = r.nextInt(4) == 0
      val (src, dst, amount) = (Option.when(r.nextBoolean())(r.nextLong(100)),
        Option.when(r.nextBoolean())(
          r.nextLong(100)), r.nextLong(60))
      val e = event(if (deposit) null else "a", "b", amount)
      val got = p.decide(e, Array(if (deposit) null else src.map(balance).orNull, dst.map(balance).orNull))
      val commits = deposit || src.exists(_ >= amount)
      if (!commits) assert(got == null)
      else {
        if (!deposit) assert(decoded(got(0)) == src.map(_ - amount)) // a deposit's source key is null: not written
        assert(decoded(got(1)).contains(dst.getOrElse(0L) + amount))
      }
    }
  }

  test("a null condition aborts; a null new value writes nothing") {
    val p = compile(condition = "src.balance > 0",
      writes = Seq(TransactionAccess(null, "accounts", "to_id", "CASE WHEN amount > 10 THEN amount END")))
    assert(p.decide(event("a", "b", 50), Array(null, null)) == null)
    assert(p.decide(event("a", "b", 5), Array(balance(1), null)).toSeq == Seq(null))
    assert(decoded(p.decide(event("a", "b", 50), Array(balance(1), null))(0)).contains(50L))
  }

  private def failure(f: => Any): String = intercept[SharedStateException](f).getMessage

  test("bad input fails at compile time, naming it") {
    assert(failure(compile(reads = Seq(TransactionAccess("src", "nope", "from_id", null)))).contains("No State 'nope'"))
    val key = failure(compile(reads = Seq(TransactionAccess("src", "accounts", "amount", null))))
    assert(key.contains("the key of read 'src' 'amount' has type BIGINT") && key.contains("keys of type STRING"), key)
    val pairKey = failure(TransactionProgram.compile(events, Nil, "true",
        Seq(TransactionAccess(null, "pairs", "struct(to_id, amount)", "named_struct('n', 1L, 'note', 'x')")), schemaOf))
    assert(pairKey.contains("STRUCT<a: STRING, b: INT>"), pairKey)
    val cond = failure(compile(condition = "amount + 1"))
    assert(cond.contains("the condition 'amount + 1' has type BIGINT; it must be BOOLEAN"), cond)
    val value = failure(compile(writes = Seq(TransactionAccess(null, "accounts", "to_id", "concat('x', kind)"))))
    assert(value.contains("the new value of write 1 (into 'accounts')") && value.contains("type STRING"), value)
    val narrowing = failure(compile(writes =
        Seq(TransactionAccess(null, "accounts", "to_id", "CAST(amount AS DOUBLE)"))))
    assert(narrowing.contains("cannot be stored in State 'accounts'"), narrowing)
    val unknown = failure(compile(condition = "src.balanse >= amount"))
    assert(unknown.contains("cannot be resolved") && unknown.contains("`src`"), unknown)
    assert(failure(compile(condition = "rand() > 0.5")).contains("not deterministic"))
    assert(failure(compile(condition = "sum(amount) > 0")).contains("the condition"))
    assert(failure(compile(reads = transfer :+ TransactionAccess("SRC", "accounts", "to_id", null)))
        .contains("two reads are named 'src'"))
    assert(failure(compile(reads = Seq(TransactionAccess("amount", "accounts", "to_id", null))))
        .contains("also a column of the events"))
    assert(failure(compile(writes = Nil)).contains("writes nothing"))
  }
}
