package io.sharedstate.spark.txn

import io.sharedstate.spark.rows.StateSchemas

import io.sharedstate.core.{Key, SharedStateException}
import io.sharedstate.core.txn.{StateKey, Transaction, TransactionDecision, TransactionLogic, WriteValue}
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{
  Attribute,
  AttributeReference,
  BindReferences,
  BoundReference,
  Expression,
  GenericInternalRow,
  GetStructField,
  InterpretedUnsafeProjection,
  JoinedRow,
  UnsafeProjection,
  UnsafeRow
}
import org.apache.spark.sql.types.StructType
import org.apache.spark.unsafe.Platform

/**
 * One access of a declarative transaction: a read (`name` is what the condition and the new values
 * call the value read, `expr` is null) or a write (`expr` is the new value), of the State `state`
 * at the key `key`, a Spark SQL expression over the event's columns.
 */
private[sharedstate] final case class TransactionAccess(name: String, state: String, key: String, expr: String)

/**
 * A declarative transaction compiled against its event schema and its States' schemas: what it
 * reads (keys from the event's columns, known before anything is read), its condition, and the new
 * values it writes (over the event's columns and the values read, one struct column per read, null
 * when the key holds nothing). It is checked when it is built ([[TransactionProgram.compile]]) and
 * compiled again where it runs: the definition travels as text, the generated code is built per
 * JVM and thread (a projection reuses its output row).
 *
 * A read or write whose key is null is not made (the read gives null); a write whose new value is
 * null writes nothing. The condition false or null aborts the whole transaction: nothing is written.
 */
private[sharedstate] final case class TransactionProgram(eventSchema: StructType, reads: IndexedSeq[TransactionAccess],
    condition: String, writes: IndexedSeq[TransactionAccess], schemas: Map[String, StateSchemas],
    logic: String = null) {

  /**
   * A transaction's event (over its payload) and its values read, each in its declared place (`present`:
   * which reads, then writes, were made; the engine passes only those); null where not made or absent.
   */
  def inputs(txn: Transaction, reads: IndexedSeq[Option[Array[Byte]]], present: Array[Boolean])
      : (UnsafeRow, Array[Array[Byte]]) = {
    val event = new UnsafeRow(eventSchema.length)
    event.pointTo(txn.payload, txn.payload.length)
    val all = new Array[Array[Byte]](this.reads.length)
    var made = 0
    all.indices.foreach { i =>
      if (present(i)) { all(i) = reads(made).orNull; made += 1 }
    }
    (event, all)
  }
  import TransactionProgram.{compiledFor, Compiled}

  /** The States the transaction writes, in the order of their first write. */
  def writtenStates: Seq[String] = writes.map(_.state).distinct

  /** Every State the transaction reads or writes. */
  def states: Seq[String] = (reads ++ writes).map(_.state).distinct

  /** The schema the condition and new values see: the event's columns, then one struct per read. */
  def inputSchema: StructType = StructType(eventSchema.fields ++ reads.map(r =>
    org.apache.spark.sql.types.StructField(r.name, TransactionExpressions.nullableStruct(schemas(r.state).value))))

  // Looked up once per instance (a program arrives deserialized in every task), shared per JVM.
  @transient private lazy val local: ThreadLocal[Compiled] = compiledFor(this)

  /** Keys of the reads, then of the writes; null where a key is null (that access is not made). */
  def keys(event: InternalRow): Array[Key] = local.get.keys(event)

  /** Which reads the event makes (its key is not null): what its outcome lists reads for. */
  def readsMade(event: InternalRow): Array[Boolean] = local.get.readsMade(event)

  /**
   * Decides the transaction from the values read (UnsafeRow bytes of each read's value struct, null
   * when absent): null when it aborts, else the new value of each write (null: that write writes nothing).
   */
  def decide(event: InternalRow, values: Array[Array[Byte]]): Array[Array[Byte]] =
    local.get.decide(event, values)

  /** The class form's decision ([[ClassLogic]]): the user's logic over the event and the values read. */
  def decideByClass(event: UnsafeRow, values: Array[Array[Byte]]): TransactionDecision =
    local.get.byClass.decide(event, values)

  /**
   * The engine's transaction for `event` (an UnsafeRow of the event's columns) at `time`: the reads
   * and writes whose keys are not null, the event's bytes as payload (handed back in its outcome).
   */
  def transaction(event: UnsafeRow, time: Long): Transaction = {
    val keys = this.keys(event)
    val present = keys.map(_ != null)
    val readKeys = reads.indices.filter(present).map(i => StateKey(reads(i).state, keys(i)))
    val writeKeys = writes.indices.filter(j => present(reads.length + j))
      .map(j => StateKey(writes(j).state, keys(reads.length + j)))
    val logic = if (this.logic == null) DeclarativeLogic(this, present)
    else { ClassLogic.resolve(this.logic); ClassLogic(this, present) } // resolved where the task's loader sees it
    new Transaction(time, readKeys, writeKeys, logic, event.getBytes)
  }
}

/**
 * The core logic of one declarative transaction: the event from the transaction's payload, the
 * values read put back in the places of the reads that were made (`present`, reads then writes), the
 * program's decision as the engine's (a null new value keeps the key as it is).
 */
private[sharedstate] final case class DeclarativeLogic(program: TransactionProgram, present: Array[Boolean])
    extends TransactionLogic {
  override def decide(txn: Transaction, reads: IndexedSeq[Option[Array[Byte]]]): TransactionDecision = {
    val (event, all) = program.inputs(txn, reads, present)
    val values = program.decide(event, all)
    if (values == null) TransactionDecision.Abort(TransactionProgram.ConditionFailed)
    else TransactionDecision.Commit(program.writes.indices.filter(j => present(program.reads.length + j)).map { j =>
      if (values(j) == null) WriteValue.Keep else WriteValue.Put(values(j))
    })
  }
}

private[sharedstate] object TransactionProgram {

  /** The reason of a transaction whose condition was false or null. */
  val ConditionFailed = "condition"

  // Per program (equal programs share it: each task deserializes its own copy), once per JVM: the
  // analysed expressions; per thread from them, the generated projections (a projection reuses its
  // output row; rounds and tasks run on several threads).
  private val compiled = new java.util.concurrent.ConcurrentHashMap[TransactionProgram, ThreadLocal[Compiled]]()

  private def compiledFor(p: TransactionProgram): ThreadLocal[Compiled] =
    compiled.computeIfAbsent(p,
      _ => {
        val analysed = new Analysed(p)
        ThreadLocal.withInitial(() => new Compiled(analysed))
      })

  /**
   * Checks and compiles a transaction: every State known, read names unique and distinct from the
   * event's columns, key types equal to the States' key types, a BOOLEAN condition, new values of
   * the States' value types. Each failure names what is wrong. With `logic` (the class form, a
   * [[RowTransactionLogic]] class name) there is no condition and the writes have no new value
   * expression: the class decides.
   */
  def compile(eventSchema: StructType, reads: Seq[TransactionAccess], condition: String,
      writes: Seq[TransactionAccess], schemaOf: String => StateSchemas, logic: String = null): TransactionProgram = {
    if (writes.isEmpty) throw new SharedStateException(
      "Transaction: it writes nothing; give at least one write (State, key expression, new value expression).")
    if (logic != null) {
      if (condition != null) throw new SharedStateException(
        s"Transaction: a condition ('$condition') and a logic class ('$logic') were both given; the class decides, " +
          "give one or the other.")
      writes.find(_.expr != null).foreach(w =>
        throw new SharedStateException(
          s"Transaction: with a logic class ('$logic') a write is (State, key expression); the write into " +
            s"'${w.state}' at ${w.key} has a new value expression ('${w.expr}'): the class gives the values."))
    }
    val names = reads.map(_.name)
    names.foreach { n =>
      if (n == null || !n.matches("[A-Za-z_][A-Za-z0-9_]*")) throw new SharedStateException(
        s"Transaction: read name '$n' is not an identifier ([A-Za-z_][A-Za-z0-9_]*); the condition and new values use it as a column.")
    }
    names.groupBy(_.toLowerCase).collect { case (n, s) if s.size > 1 => n }.headOption.foreach { n =>
      throw new SharedStateException(s"Transaction: two reads are named '$n'; give each read its own name.")
    }
    names.find(n => eventSchema.fieldNames.exists(_.equalsIgnoreCase(n))).foreach { n =>
      throw new SharedStateException(
        s"Transaction: read name '$n' is also a column of the events; rename the read (the condition and new values use both).")
    }
    val schemas = (reads ++ writes).map(_.state).distinct.map(s => s -> schemaOf(s)).toMap
    val program = TransactionProgram(eventSchema, reads.toIndexedSeq, Option(condition).getOrElse("true"),
      writes.toIndexedSeq, schemas, logic)
    // Every expression resolved and type-checked here, on the driver, once for the JVM (local mode's
    // tasks find it analysed).
    compiledFor(program).get()
    program
  }

  private def attributes(schema: StructType): Seq[Attribute] =
    schema.fields.toSeq.map(f => AttributeReference(f.name, f.dataType, f.nullable)())

  /**
   * A program's expressions resolved, type-checked and bound to the rows they read (what takes Catalyst's
   * analyzer: done once per program and JVM, then shared by the threads; expressions are immutable).
   */
  final class Analysed(val p: TransactionProgram) {
    private val eventColumns = attributes(p.eventSchema)
    private val inputColumns = attributes(p.inputSchema)

    /** Per read, then per write: the key as the State stores it (its column, or its columns in order). */
    val keys: IndexedSeq[Seq[Expression]] = {
      val accesses = p.reads.map(r => (r, s"the key of read '${r.name}'")) ++
        p.writes.zipWithIndex.map { case (w, i) => (w, s"the key of write ${i + 1} (into '${w.state}')") }
      val analysed = TransactionExpressions.analyseAll(accesses.map { case (a, what) => (what, a.key) }, eventColumns)
      accesses.zip(analysed).map { case ((access, what), expr) =>
        val keySchema = p.schemas(access.state).key
        val key = BindReferences.bindReference(
          TransactionExpressions.key(what, access.key, expr, access.state, keySchema), eventColumns)
        if (keySchema.length == 1) Seq(key) else keySchema.indices.map(i => GetStructField(key, i))
      }
    }

    /** The condition, then each new value as its stored struct, over the event and the values read. */
    val decision: Seq[Expression] = if (p.logic != null) Nil
    else {
      val what =
        "the condition" +: p.writes.indices.map(i => s"the new value of write ${i + 1} (into '${p.writes(i).state}')")
      val analysed = TransactionExpressions.analyseAll(what.zip(p.condition +: p.writes.map(_.expr)), inputColumns)
      val condition = TransactionExpressions.condition(p.condition, analysed.head)
      val values = p.writes.zipWithIndex.map { case (w, i) =>
        TransactionExpressions.value(what(i + 1), w.expr, analysed(i + 1), w.state, p.schemas(w.state).value)
      }
      (condition +: values).map(e => BindReferences.bindReference(e, inputColumns))
    }
  }

  /**
   * The generated code of one program, for one thread: two generated projections (every key's columns
   * in one row, and the decision), whatever the number of accesses (each generated class costs a
   * compilation per new program, on the first batch), and per key an interpreted slice of that row.
   */
  final class Compiled(a: Analysed) {
    private val p = a.p
    // Every key's columns in one row; key i's are columns first(i) until first(i + 1).
    private val allKeys: UnsafeProjection = UnsafeProjection.create(a.keys.flatten)
    private val first: Array[Int] = a.keys.scanLeft(0)(_ + _.size).toArray
    // Key i's row, as the State stores it, from the row of all keys (a column null means no key).
    private val keySlices: Array[UnsafeProjection] = a.keys.indices.map { i =>
      InterpretedUnsafeProjection.createProjection(a.keys(i).zipWithIndex.map { case (e, c) =>
        BoundReference(first(i) + c, e.dataType, nullable = true): Expression
      })
    }.toArray
    private val decision: UnsafeProjection = if (p.logic != null) null else UnsafeProjection.create(a.decision)
    private val widths = p.writes.map(w => p.schemas(w.state).value.length).toArray
    private val readWidths = p.reads.map(r => p.schemas(r.state).value.length).toArray

    /** The class form's logic on this thread (made, and so checked, when the program is compiled). */
    val byClass: ClassLogic.Runner = if (p.logic == null) null else new ClassLogic.Runner(p, keys)

    private def isNull(row: UnsafeRow, i: Int): Boolean = {
      var c = first(i)
      while (c < first(i + 1)) { if (row.isNullAt(c)) return true; c += 1 }
      false
    }

    def keys(event: InternalRow): Array[Key] = {
      val row = allKeys(event)
      val out = new Array[Key](keySlices.length)
      var i = 0
      while (i < out.length) {
        if (!isNull(row, i)) { // a copy: the projection reuses its row (getBytes may hand out its buffer itself)
          val k = keySlices(i)(row)
          val bytes = new Array[Byte](k.getSizeInBytes)
          k.writeToMemory(bytes, Platform.BYTE_ARRAY_OFFSET)
          out(i) = new Key(bytes)
        }
        i += 1
      }
      out
    }

    def readsMade(event: InternalRow): Array[Boolean] = {
      val row = allKeys(event)
      Array.tabulate(p.reads.length)(i => !isNull(row, i))
    }

    def decide(event: InternalRow, values: Array[Array[Byte]]): Array[Array[Byte]] = {
      val read = new GenericInternalRow(values.indices.map { i =>
        val bytes = values(i)
        if (bytes == null) null
        else {
          val row = new UnsafeRow(readWidths(i))
          row.pointTo(bytes, bytes.length)
          row
        }
      }.toArray[Any])
      val out = decision(new JoinedRow(event, read))
      if (out.isNullAt(0) || !out.getBoolean(0)) null
      else Array.tabulate(widths.length) { i =>
        // copy(): the projection reuses its buffer.
        if (out.isNullAt(i + 1)) null else out.getStruct(i + 1, widths(i)).copy().getBytes
      }
    }
  }
}
