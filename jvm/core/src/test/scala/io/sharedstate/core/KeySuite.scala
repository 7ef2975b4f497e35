package io.sharedstate.core

import java.io.{ByteArrayInputStream, ByteArrayOutputStream, ObjectInputStream, ObjectOutputStream}
import org.scalatest.funsuite.AnyFunSuite
import scala.util.Random

/** Key equality is byte equality, whatever the inline head words make fast. */
class KeySuite extends AnyFunSuite {
  private def bytes(r: Random, n: Int): Array[Byte] =
    Array.fill(n)((r.nextInt(3) - 1).toByte) // few values: near misses

  test("keys are equal exactly when their bytes are, for every length around the inline 16 bytes") {
    val r = new Random(11)
    for (_ <- 1 to 20000) {
      val a = bytes(r, r.nextInt(40))
      val b = r.nextInt(4) match {
        case 0 => a.clone()
        case 1 => a ++ Array[Byte](0) // a trailing zero: the same head words, a longer key
        case 2 => val c = a.clone(); if (c.nonEmpty) { val i = r.nextInt(c.length); c(i) = (c(i) + 1).toByte }; c
        case _ => bytes(r, r.nextInt(40))
      }
      val same = java.util.Arrays.equals(a, b)
      assert((new Key(a) == new Key(b)) == same, s"${a.toSeq} vs ${b.toSeq}")
      if (same) assert(new Key(a).hashCode == new Key(b).hashCode)
    }
  }

  test("a key survives Java serialization with its equality and partition") {
    val key = new Key(Array.tabulate[Byte](21)(_.toByte))
    val out = new ByteArrayOutputStream()
    new ObjectOutputStream(out).writeObject(key)
    val back = new ObjectInputStream(new ByteArrayInputStream(out.toByteArray)).readObject().asInstanceOf[Key]
    assert(back == key && back.hashCode == key.hashCode && back.partition(7) == key.partition(7))
  }

  test("a key's partition is floorMod of its routing hash, for powers of two and other counts") {
    // Routing must stay what it was (keys written by one version are found by the next): the oracle is
    // the definition, MurmurHash3 of the bytes with the routing seed, floorMod the partition count.
    val rnd = new scala.util.Random(5)
    val keys = Seq.fill(2000)(Array.fill(1 + rnd.nextInt(24))(rnd.nextInt(256).toByte))
    for (bytes <- keys; n <- Seq(1, 2, 3, 4, 7, 8, 16, 100, 128, 1024, 1 << 20, Int.MaxValue)) {
      val expected = Math.floorMod(scala.util.hashing.MurmurHash3.bytesHash(bytes, 0x5eed), n)
      assert(new Key(bytes).partition(n) == expected, s"$n partitions")
    }
  }
}
