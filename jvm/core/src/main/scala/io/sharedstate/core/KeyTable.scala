package io.sharedstate.core

import java.util.concurrent.atomic.{AtomicInteger, AtomicIntegerArray, AtomicReferenceArray}

/**
 * A partition's key map: key -> packed [[ValueSet]] array, open addressing with linear probing. Keys
 * are never removed (only [[clear]] drops them all). It replaces a ConcurrentHashMap, whose look-up
 * is a chain of dependent cache misses in a large State (table slot, node, the node's key, the value
 * set object, its arrays): here a slot's hash, key and set sit at the same index of two arrays
 * (hashes, then key and set side by side), so a look-up costs the table's line(s), then the packed
 * set, which names its key in its first line ([[ValueSet.keyMatch]]): the stored key object is read
 * only for a set that keeps no key.
 *
 * Concurrency, as the engine needs it (docs/engine.md):
 *  - readers never lock and never write;
 *  - many appliers insert and replace at once, each key by exactly one of them at a time (a key's
 *    chain); a slot is claimed with a compare-and-set on its hash, then its key and its set are
 *    published (release writes, read with acquire);
 *  - compaction replaces sets from any thread with a compare-and-set, as appliers do ([[replace]]);
 *  - the table grows only in [[reserve]], which the committer calls before an apply round (sized from
 *    the staged key count) when no applier runs; compactions may run meanwhile. Growing copies every
 *    slot to the new table, then marks the old slot [[KeyTable.Moved]] with a compare-and-set (so a
 *    compaction that got in between is copied, not lost, and a later one fails and retries on the new
 *    table); a reader that finds Moved reads the new table, which already holds the key.
 */
private[core] final class KeyTable(initialKeys: Int = 8) {
  import KeyTable._

  @volatile private var table = new Table(capacityFor(initialKeys))
  private val count = new AtomicInteger()

  def size: Int = count.get()

  /** Slots of the current table (a power of two): where a key goes is `hash & (capacity - 1)`, see [[slotOf]]. */
  def capacity: Int = table.capacity

  /** The packed set of `key`, or null. */
  def get(key: Key): Array[Byte] = get(key, key.hashCode)

  /**
   * [[get]] with the key's hash already known (an apply round carries it in its [[SlotOrder]]), so the
   * table's line is asked for without waiting for the key object: its miss and the key's overlap.
   */
  def get(key: Key, hash: Int): Array[Byte] = {
    var t = table
    while (true) {
      val s = t.find(key, hash)
      if (s ne Moved) return s
      t = t.next
    }
    null
  }

  /**
   * Stage zero of a batched look-up (see [[KeyTable.Lookups]]): asks for the lines of the key's home slot
   * (its hash, then its key and set) and nothing else, so a tight loop of these keeps many misses in
   * flight where [[start]]'s probe, branching on what it reads, keeps few.
   */
  def touchHome(lookups: KeyTable.Lookups, hash: Int): Unit = {
    val t = table
    val home = hash & (t.capacity - 1)
    lookups.touchInt(t.hashes.get(home))
    lookups.touchLine(t.keys.get(2 * home))
  }

  /**
   * Stage one of look-up `j` of a batched look-up (see [[KeyTable.Lookups]]): finds the slot whose hash
   * is the key's, or the free slot that ends its probe, in the hash array (one line, almost always, and
   * already asked for by [[touchHome]], as is the line of the slot's key and set).
   */
  def start(lookups: KeyTable.Lookups, j: Int, key: Key, hash: Int): Unit = {
    val t = table
    val h = mark(hash)
    val mask = t.capacity - 1
    var i = hash & mask
    var hh = t.hashes.get(i)
    while (hh != 0 && hh != h) { i = (i + 1) & mask; hh = t.hashes.get(i) }
    lookups.started(j, this, t, key, hash, if (hh == 0) -1 else i)
  }

  /**
   * Makes room for `extraKeys` more keys at a load of at most 1/2. Only with no concurrent [[insert]]
   * (the committer, before an apply round); readers and compactions may run.
   */
  def reserve(extraKeys: Int): Unit = {
    val needed = count.get().toLong + extraKeys
    val t = table
    if (needed * 2 > t.capacity) {
      val grown = new Table(capacityFor(needed))
      t.next = grown
      var i = 0
      while (i < t.capacity) {
        val k = t.keys.get(2 * i)
        if (k != null) {
          var moved = false
          while (!moved) {
            val s = t.keys.get(2 * i + 1)
            if (s != null) grown.put(k.asInstanceOf[Key], t.hashes.get(i), s.asInstanceOf[Array[Byte]])
            moved = t.keys.compareAndSet(2 * i + 1, s, Moved)
          }
        }
        i += 1
      }
      table = grown
    }
  }

  /**
   * Inserts `key` with `set`, if the key has no set yet (true); false if it has one. Only the key's
   * applier calls this; room must have been [[reserve]]d.
   */
  def insert(key: Key, set: Array[Byte]): Boolean = insert(key, key.hashCode, set)

  /** [[insert]] with the key's hash already known (the committer carries it), so the key is not read for it. */
  def insert(key: Key, hash: Int, set: Array[Byte]): Boolean = {
    val t = table
    val h = mark(hash)
    val mask = t.capacity - 1
    var i = hash & mask
    var probes = 0
    while (true) {
      val hh = t.hashes.get(i)
      if (hh == 0 && t.hashes.compareAndSet(i, 0, h)) {
        if (count.incrementAndGet() > mask) throw new IllegalStateException("KeyTable: no room reserved")
        t.keys.setRelease(2 * i, key)
        t.keys.setRelease(2 * i + 1, set)
        return true
      }
      val now = t.hashes.get(i)
      if (now == h) {
        val k = t.keys.get(2 * i)
        if (k != null && key.equals(k)) return t.keys.compareAndSet(2 * i + 1, null, set)
      }
      if (now != 0) {
        i = (i + 1) & mask
        probes += 1
        if (probes > mask) throw new IllegalStateException("KeyTable: no room reserved")
      }
    }
    false
  }

  /** Replaces the set of `key` by `after` if it still is `before` (a compare-and-set); false otherwise. */
  def replace(key: Key, before: Array[Byte], after: Array[Byte]): Boolean = {
    val t = table
    val i = t.slot(key)
    i >= 0 && t.keys.compareAndSet(2 * i + 1, before, after)
  }

  /** Every key with its set, weakly consistent (as a ConcurrentHashMap's iteration). */
  def foreach(f: (Key, Array[Byte]) => Unit): Unit = {
    val t = table
    var i = 0
    while (i < t.capacity) {
      val e = entryAt(t, i)
      if (e != null) f(e._1, e._2)
      i += 1
    }
  }

  /**
   * Every key object with its packed set, weakly consistent, as the slots hold them, handed over in
   * groups of up to `group` entries: `f(refs, n)`, entry j < n being `refs(2j)` (the key object) and
   * `refs(2j + 1)` (its packed set). Neither is read: no cast (a type check reads the object's
   * header) and no store into an array whose exact type the JIT does not know (an array store is
   * type-checked the same way), so the walk costs the table's own lines and `f` overlaps the entries'
   * misses. `refs` is reused for the next group.
   */
  def foreachStored(group: Int)(f: KeyTable.StoredGroup): Unit = {
    val refs = new Array[AnyRef](2 * group) // allocated here, so exactly an Object[]: stores unchecked
    val t = table
    var n = 0
    var i = 0
    while (i < t.capacity) {
      val k = t.keys.get(2 * i)
      if (k != null) {
        val s = t.keys.get(2 * i + 1)
        val set = if (s eq Moved) get(k.asInstanceOf[Key]) else s
        if (set != null) {
          refs(2 * n) = k
          refs(2 * n + 1) = set
          n += 1
          if (n == group) { f(refs, n); n = 0 }
        }
      }
      i += 1
    }
    if (n > 0) f(refs, n)
  }

  /** A cursor over the slots, for the compaction sweep: resumes where it stopped, restarts on a new table. */
  def cursor(): Cursor = new Cursor

  final class Cursor {
    private val t = table
    private var i = 0
    private var ahead: (Key, Array[Byte]) = null
    def hasNext: Boolean = {
      while (ahead == null && i < t.capacity) { ahead = entryAt(t, i); i += 1 }
      ahead != null
    }
    def next(): (Key, Array[Byte]) = { hasNext; val e = ahead; ahead = null; e }
  }

  // The entry in slot i of t, reading through to the grown table if it moved; null if none.
  private def entryAt(t: Table, i: Int): (Key, Array[Byte]) = {
    val k = t.keys.get(2 * i)
    if (k == null) null
    else {
      val key = k.asInstanceOf[Key]
      val s = t.keys.get(2 * i + 1)
      val set = if (s eq Moved) get(key) else s.asInstanceOf[Array[Byte]]
      if (set == null) null else (key, set)
    }
  }

  /** Forgets every key (readers still on the old table finish there). */
  def clear(): Unit = {
    table = new Table(capacityFor(initialKeys))
    count.set(0)
  }
}

private[core] object KeyTable {

  /** Takes a group of entries of [[KeyTable.foreachStored]] (not a Function2, which would box its Int). */
  trait StoredGroup { def apply(refs: Array[AnyRef], n: Int): Unit }

  /** An old table's slot whose key moved to the grown table. */
  val Moved: Array[Byte] = new Array[Byte](0)

  /**
   * A group of look-ups (of one table or several) done stage by stage, so that their cache misses
   * overlap: a look-up is rounds of dependent misses (the table's lines, then the stored key and the
   * set), and a loop that finishes each look-up before starting the next waits for every round in turn,
   * where a loop of short independent steps keeps many misses in flight. Each round's misses are first
   * only asked for, in a loop that reads and does not branch on what it read ([[KeyTable.touchHome]]
   * before stage one, [[touchFound]] before stage two): a loop that compares what it reads holds few
   * misses in flight (measured: the batched fetch at 1M keys 4.0 -> 4.5 M/s). Stage one, [[KeyTable.start]]
   * for every look-up of the group: the slot whose hash is the key's (or the free slot that says the key
   * is not there), its key-and-set line already asked for by touchHome; stage two, [[finish]] for every
   * look-up: the slot's key compared with the key (its object's line) and, at the same time, the set's
   * first lines asked for, so a caller reading the sets next finds them in cache. A look-up reads what
   * [[KeyTable.get]] reads, in the same order (hash, then key, then set), and anything unusual (another
   * key with the same hash, a slot being claimed, a table that grew) takes `get` itself; so it answers
   * as a `get` made at some moment between its two stages would. Used by one thread.
   */
  final class Lookups(val capacity: Int) {
    private val owners = new Array[KeyTable](capacity)
    private val tables = new Array[Table](capacity)
    private val keys = new Array[Key](capacity)
    private val hashes = new Array[Int](capacity)
    private val slots = new Array[Int](capacity)
    // Folds the bytes the stages read only to have their lines fetched, so the reads are not dropped.
    private var touched = 0

    private[KeyTable] def touchLine(ref: AnyRef): Unit = if (ref == null) touched += 1
    private[KeyTable] def touchInt(v: Int): Unit = touched += v

    private[KeyTable] def started(j: Int, owner: KeyTable, t: Table, key: Key, hash: Int, slot: Int): Unit = {
      owners(j) = owner; tables(j) = t; keys(j) = key; hashes(j) = hash; slots(j) = slot
    }

    /**
     * Between stages one and two, for every look-up first: asks for the first line of the slot's set
     * (which names its key), so [[finish]] compares and reads what has arrived meanwhile.
     */
    def touchFound(j: Int): Unit = {
      val i = slots(j)
      if (i >= 0) {
        val s = tables(j).keys.get(2 * i + 1)
        if (s != null) touched += s.asInstanceOf[Array[Byte]].length
      }
    }

    /** The set of look-up `j`'s key, or null; look-up `j` is then done. */
    def finish(j: Int): Array[Byte] = {
      val key = keys(j)
      val i = slots(j)
      val found =
        if (i < 0) null // the probe ended on a free slot: the key is not there
        else {
          val t = tables(j)
          val s = t.keys.get(2 * i + 1)
          if (s == null || (s eq Moved)) owners(j).get(key, hashes(j)) // being claimed; or moved
          else {
            val set = s.asInstanceOf[Array[Byte]]
            touchSet(set)
            if (t.holds(i, set, key)) set else owners(j).get(key, hashes(j)) // same hash, another key
          }
        }
      owners(j) = null; tables(j) = null; keys(j) = null
      found
    }

    // Asks for the lines a fetch reads first (count, times, value ends, the newest values): up to five,
    // independent of each other, so they arrive together with the stored key's line.
    private def touchSet(s: Array[Byte]): Unit = {
      val n = s.length
      var x = s(0) + s(n - 1)
      var at = 64
      while (at < n && at <= 256) { x += s(at); at += 64 }
      touched += x
    }

    /** Whatever the touched bytes summed to (keeps their reads; tells nothing). */
    def touchedSum: Int = touched
  }

  // The stored hash: never 0, which marks a free slot.
  private def mark(h: Int): Int = if (h == 0) 1 else h

  /** Where a key of hash `h` goes first in a table of `capacity` slots. */
  def slotOf(h: Int, capacity: Int): Int = h & (capacity - 1)

  private def capacityFor(keys: Long): Int = {
    val c = math.max(2L, java.lang.Long.highestOneBit(math.max(1L, keys * 2 - 1)) << 1)
    if (c > (1 << 30)) throw new IllegalStateException(s"KeyTable: $keys keys is too many for one partition")
    c.toInt
  }

  private final class Table(val capacity: Int) {
    val hashes = new AtomicIntegerArray(capacity)
    // Key of slot i at 2i, its packed set at 2i + 1: one line for both.
    val keys = new AtomicReferenceArray[AnyRef](2 * capacity)
    @volatile var next: Table = null

    /** The slot holding `key`, or -1. */
    def slot(key: Key): Int = slot(key, key.hashCode)

    def slot(key: Key, hash: Int): Int = {
      val h = mark(hash)
      val mask = capacity - 1
      var i = hash & mask
      while (true) {
        val hh = hashes.get(i)
        if (hh == 0) return -1
        if (hh == h && holds(i, keys.get(2 * i + 1), key)) return i
        i = (i + 1) & mask
      }
      -1
    }

    // Slot i, whose set was read as `s`, holds `key`: the set says so if it keeps its key (one line
    // read, not the key object's), else the stored key object.
    def holds(i: Int, s: AnyRef, key: Key): Boolean = {
      val m = if (s == null || (s eq Moved)) -1 else ValueSet.keyMatch(s.asInstanceOf[Array[Byte]], key)
      if (m >= 0) m > 0
      else {
        val k = keys.get(2 * i)
        k != null && ((k eq key) || key.equals(k))
      }
    }

    /** The set of `key` here: null if none (yet), [[Moved]] if it is in `next`. */
    def find(key: Key, hash: Int): Array[Byte] = {
      val i = slot(key, hash)
      if (i < 0) null else keys.get(2 * i + 1).asInstanceOf[Array[Byte]]
    }

    // Filling a table nobody inserts into yet (reserve): readers reach it only through a Moved slot.
    // Putting a key again (a compaction replaced its set while it was being moved) replaces its set.
    def put(key: Key, h: Int, set: Array[Byte]): Unit = {
      val mask = capacity - 1
      var i = key.hashCode & mask
      while (hashes.get(i) != 0 && (keys.get(2 * i) ne key)) i = (i + 1) & mask
      keys.set(2 * i, key)
      keys.set(2 * i + 1, set)
      hashes.set(i, h)
    }
  }
}
