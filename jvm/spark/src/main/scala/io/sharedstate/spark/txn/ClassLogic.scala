package io.sharedstate.spark.txn

import io.sharedstate.spark.rows.KeyEncoder

import io.sharedstate.core.{Key, SharedStateException}
import io.sharedstate.core.txn.{Transaction, TransactionDecision, TransactionLogic}
import org.apache.spark.sql.Row
import org.apache.spark.sql.catalyst.{CatalystTypeConverters, InternalRow}
import org.apache.spark.sql.catalyst.expressions.{UnsafeProjection, UnsafeRow}

/**
 * The core logic of one class-form transaction: the event from the transaction's payload, the values
 * read put back in the places of the reads that were made (`present`, reads then writes, as
 * [[DeclarativeLogic]] does), the user's [[RowTransactionLogic]] deciding over Rows on this thread's
 * instance ([[ClassLogic.Runner]]).
 */
private[sharedstate] final case class ClassLogic(program: TransactionProgram, present: Array[Boolean])
    extends TransactionLogic {
  override def decide(txn: Transaction, reads: IndexedSeq[Option[Array[Byte]]]): TransactionDecision = {
    val (event, all) = program.inputs(txn, reads, present)
    program.decideByClass(event, all)
  }
}

private[sharedstate] object ClassLogic {

  /** The reason of a transaction that wrote a key outside its declared write set. */
  val UndeclaredWrite = "undeclared_write"

  // Classes by name, resolved once per JVM where a class loader sees them: the driver's or a task's
  // context loader sees spark.jars; the engine's chain threads, where logic runs, may not.
  private val resolved = new java.util.concurrent.ConcurrentHashMap[String, Class[_]]()

  /**
   * The user's class `name`, checked to be a [[RowTransactionLogic]] (before it is initialised) with a
   * public no-argument constructor.
   */
  def resolve(name: String): Class[_] = resolved.computeIfAbsent(name, _ => load(name))

  private def load(name: String): Class[_] = {
    val loaders = (Option(Thread.currentThread.getContextClassLoader).toSeq :+ getClass.getClassLoader).distinct
    val cls = loaders.iterator.map(l =>
      try Some(Class.forName(name, false, l))
      catch { case _: ClassNotFoundException => None }).collectFirst { case Some(c) => c }.getOrElse(
      throw new SharedStateException(
        s"Transaction: logic class '$name' is not on the classpath; add its jar (spark.jars, --jars) " +
          s"or check the name (a fully qualified class implementing ${classOf[RowTransactionLogic].getName})."))
    if (!classOf[RowTransactionLogic].isAssignableFrom(cls)) throw new SharedStateException(
      s"Transaction: logic class '$name' does not implement ${classOf[RowTransactionLogic].getName} " +
        "(def decide(txn: RowTransaction): Unit).")
    try cls.getConstructor()
    catch {
      case e: NoSuchMethodException => throw new SharedStateException(
          s"Transaction: logic class '$name' has no public no-argument constructor (one instance is made per thread).",
          e)
    }
    cls
  }

  /** A new instance of the user's class `name` (resolved, and so checked, first). */
  def instantiate(name: String): RowTransactionLogic =
    resolve(name).getConstructor().newInstance().asInstanceOf[RowTransactionLogic]

  /** The user's logic and the Row conversions of one program, for one thread. */
  final class Runner(p: TransactionProgram, keysOf: InternalRow => Array[Key]) {
    private val logic = instantiate(p.logic)
    private val toEvent = CatalystTypeConverters.createToScalaConverter(p.eventSchema)
    private val readWidths = p.reads.map(r => p.schemas(r.state).value.length).toArray
    private val toRead = p.reads.map(r => CatalystTypeConverters.createToScalaConverter(p.schemas(r.state).value))
    private val readStates = p.reads.map(r => r.name -> r.state).toMap
    private val written = p.writes.map(_.state).distinct
    private val keyOf: Map[String, Row => Key] = written.map(s => s -> KeyEncoder.externalRows(p.schemas(s).key)).toMap
    private val valueOf: Map[String, Row => Array[Byte]] = written.map { s =>
      val schema = p.schemas(s).value
      val toInternal = CatalystTypeConverters.createToCatalystConverter(schema)
      val project = UnsafeProjection.create(schema)
      s -> ((row: Row) => project(toInternal(row).asInstanceOf[InternalRow]).copy().getBytes)
    }.toMap

    def decide(event: UnsafeRow, values: Array[Array[Byte]]): TransactionDecision = {
      val keys = keysOf(event)
      val made = p.writes.indices.filter(j => keys(p.reads.length + j) != null)
      val declared = made.map(j => (p.writes(j).state, keys(p.reads.length + j)))
      val reads = p.reads.indices.map { i =>
        val bytes = values(i)
        p.reads(i).name -> (if (bytes == null) null
                            else {
                              val row = new UnsafeRow(readWidths(i))
                              row.pointTo(bytes, bytes.length)
                              toRead(i)(row).asInstanceOf[Row]
                            })
      }.toMap
      def declaredAt(state: String, key: Key): Int = declared.indexWhere { case (s, k) => s == state && k == key }
      val target = new RowTransaction.Target {
        def declared: Int = made.length
        def position(state: String, key: Any): Int = {
          val encoded = keyOf.get(state).map(_(asRow(key)))
          val at = encoded.map(k => declaredAt(state, k)).getOrElse(-1)
          if (at < 0) throw new RowTransaction.UndeclaredWrite(
            s"$UndeclaredWrite: State '$state' key $key is not in the declared write set of this transaction " +
              s"(${made.map(j => s"'${p.writes(j).state}' at ${p.writes(j).key}").mkString(", ")})")
          at
        }
        def value(state: String, value: Any): Array[Byte] = valueOf(state)(asRow(value))
      }
      val txn = new RowTransaction(toEvent(event).asInstanceOf[Row], reads, readStates, target)
      try {
        logic.decide(txn)
        txn.decision
      } catch { case e: RowTransaction.UndeclaredWrite => TransactionDecision.Abort(e.getMessage) }
    }

    // A one-column key or value may be given bare.
    private def asRow(v: Any): Row = v match {
      case r: Row => r
      case other => Row(other)
    }
  }
}
