package io.sharedstate.spark.statestore

import java.nio.file.Files

import scala.collection.mutable

import org.apache.hadoop.conf.Configuration
import org.apache.spark.sql.catalyst.expressions.{UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.execution.streaming.state.{StateStoreConf, StateStoreId}
import org.apache.spark.sql.types.{IntegerType, StructType}
import org.scalatest.funsuite.AnyFunSuite

/**
 * What the publishing side relies on: a listener sees each committed version's changes (value null
 * for a removal), only while registered; a re-committed version replaces the earlier attempt for
 * every later reader. The oracle is a plain map the same operations are applied to.
 */
class StoreCommitHookSuite extends AnyFunSuite {
  private val valueSchema = new StructType().add("v", IntegerType)
  private val valueProj = UnsafeProjection.create(valueSchema)

  private def key(k: String): UnsafeRow = StoreTestRows.key(k)
  private def value(v: Int): UnsafeRow = valueProj(org.apache.spark.sql.catalyst.InternalRow(v)).copy()

  private def provider(dir: String): SharedStateStoreProvider = StoreTestRows.provider(dir, valueSchema = valueSchema)

  private def contents(p: SharedStateStoreProvider, version: Long): Map[String, Int] =
    p.getReadStore(version, None).iterator().map(pair => pair.key.getString(0) -> pair.value.getInt(0)).toMap

  test("listeners see each version's changes while registered; a re-commit replaces the earlier attempt") {
    val dir = Files.createTempDirectory("statestore-hook").toString
    val seen = mutable.Buffer.empty[(Long, Map[String, Option[Int]])]
    val listener = new StoreCommitListener {
      override def committed(id: StateStoreId, version: Long, changes: Iterable[(UnsafeRow, UnsafeRow)],
          keySchema: StructType, valueSchema: StructType, storeConf: StateStoreConf, hadoopConf: Configuration): Unit =
        seen += version -> changes.map { case (k, v) => k.getString(0) -> Option(v).map(_.getInt(0)) }.toMap
    }
    val p = provider(dir)
    StoreCommitHook.register(listener)
    try {
      val s0 = p.getStore(0)
      s0.put(key("a"), value(1)); s0.put(key("b"), value(2)); s0.put(key("a"), value(5))
      assert(s0.commit() == 1)
      val s1 = p.getStore(1)
      s1.remove(key("a")); s1.put(key("b"), value(3)); s1.put(key("c"), value(4))
      assert(s1.commit() == 2)
    } finally StoreCommitHook.unregister(listener)
    assert(!StoreCommitHook.active)
    assert(seen.toSeq == Seq(
      1L -> Map("a" -> Some(5), "b" -> Some(2)),
      2L -> Map("a" -> None, "b" -> Some(3), "c" -> Some(4))))

    // A retried attempt at version 1 (another batch content) replaces the first attempt's version 2.
    val retry = p.getStore(1)
    retry.put(key("d"), value(9))
    assert(retry.commit() == 2)
    assert(seen.size == 2, "an unregistered listener is not called")
    val oracle = Map("a" -> 5, "b" -> 2, "d" -> 9)
    assert(contents(p, 2) == oracle)
    // A new provider (new executor / restarted driver) rebuilds both versions from the files.
    val reloaded = provider(dir)
    assert(contents(reloaded, 1) == Map("a" -> 5, "b" -> 2))
    assert(contents(reloaded, 2) == oracle)
    p.close(); reloaded.close()
  }

  test("an aborted batch leaves the version as it was") {
    val p = provider(Files.createTempDirectory("statestore-abort").toString)
    val s0 = p.getStore(0)
    s0.put(key("a"), value(1))
    s0.commit()
    val s1 = p.getStore(1)
    s1.put(key("a"), value(2)); s1.put(key("b"), value(3)); s1.remove(key("a"))
    s1.abort()
    assert(contents(p, 1) == Map("a" -> 1))
    val again = p.getStore(1)
    assert(again.get(key("a")).getInt(0) == 1 && again.get(key("b")) == null)
    again.abort()
    p.close()
  }
}
