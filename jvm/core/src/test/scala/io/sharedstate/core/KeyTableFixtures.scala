package io.sharedstate.core

/**
 * Keys and sets for the key table's tests: sets are real packed [[ValueSet]] arrays (a look-up reads the
 * key a set keeps), each set's one pair's time its version; keys of every kind a look-up compares
 * differently (short keys compared inline, keys longer than 16 bytes, keys whose sets keep no key, two
 * keys that share a hash).
 */
object KeyTableFixtures {

  /** Two distinct keys of equal hash, found by a deterministic search. */
  lazy val sameHash: (Key, Key) = {
    val seen = new java.util.HashMap[Integer, Key]()
    var i = 0
    var found: (Key, Key) = null
    while (found == null) {
      val k = new Key(s"h$i".getBytes)
      val other = seen.putIfAbsent(k.hashCode, k)
      if (other != null) found = (other, k)
      i += 1
    }
    found
  }

  def longKey(i: Int): Key = new Key(s"a key longer than sixteen bytes, number $i".getBytes)

  // A key whose sets keep no key (their look-up asks the stored key object): marked by its first bytes.
  private val Unkeyed = "u:".getBytes
  def unkeyed(k: Key): Key = new Key(Unkeyed ++ k.bytes)
  private def isUnkeyed(k: Key): Boolean = k.bytes.startsWith(Unkeyed)

  /** Every kind in turn, the first two sharing a hash. */
  def mixedKeys(n: Int): Array[Key] = Array.tabulate(n) { i =>
    if (i == 0) sameHash._1
    else if (i == 1) sameHash._2
    else
      i % 4 match {
        case 0 => new Key(s"k$i".getBytes)
        case 1 => longKey(i)
        case 2 => unkeyed(new Key(s"k$i".getBytes))
        case _ => unkeyed(longKey(i))
      }
  }

  /** `key`'s set of version `v` (one pair at time v, of a value of 1 + `pad` bytes). */
  def set(key: Key, v: Int, pad: Int): Array[Byte] =
    ValueSet.of(if (isUnkeyed(key)) null else key.bytes, Array(v.toLong), Array(new Array[Byte](1 + pad))).packed

  def version(set: Array[Byte]): Int = if (set == null) -1 else new ValueSet(set).timeAt(0).toInt
}
