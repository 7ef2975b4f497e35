package io.sharedstate.core.fetch

import io.sharedstate.core.FetchAnswer
import java.util.Arrays

/**
 * The answers to a batch of fetches ([[io.sharedstate.core.State.fetchInto]]), written into arrays that
 * are reused batch after batch, so a batch of `latest` fetches allocates nothing per answer: a `latest`
 * that found a pair is its time and its value, copied into one reused buffer while the value set is
 * still in cache (the caller reads the values later, after the whole batch: by then a large batch's
 * sets have left the cache, the buffer has not). Answers of the other rules are kept as the
 * [[FetchAnswer]] objects they are. Filled and read by one thread.
 */
final class FetchAnswers(initialCapacity: Int = 64) {
  import FetchAnswers._

  private var kinds = new Array[Int](initialCapacity)
  private var times = new Array[Long](initialCapacity)
  private var offsets = new Array[Int](initialCapacity)
  private var lengths = new Array[Int](initialCapacity)
  private var others = new Array[FetchAnswer](initialCapacity)
  // The found values end to end; `used` bytes of it hold this batch's.
  private var buffer = new Array[Byte](math.max(64, initialCapacity * 32))
  private var used = 0
  private var n = 0

  def size: Int = n

  /** [[NotYet]], [[Absent]], [[Found]] (a `latest` pair, read in place) or [[Other]] ([[answer]]). */
  def kind(i: Int): Int = kinds(i)
  def isNotYet(i: Int): Boolean = kinds(i) == NotYet

  /** A found `latest` pair's time. */
  def time(i: Int): Long = times(i)

  /**
   * The array a found `latest` pair's value lies in, at [[valueOffset]] for [[valueLength]] bytes (this
   * object's buffer: valid until the next batch).
   */
  def valueArray(i: Int): Array[Byte] = buffer
  def valueOffset(i: Int): Int = offsets(i)
  def valueLength(i: Int): Int = lengths(i)

  /** A copy of a found `latest` pair's value. */
  def value(i: Int): Array[Byte] = Arrays.copyOfRange(buffer, offsets(i), offsets(i) + lengths(i))

  /** Answer i as the fetch of one request answers it (a found `latest` becomes a [[FetchAnswer.Found]] with a copy). */
  def answer(i: Int): FetchAnswer = kinds(i) match {
    case NotYet => FetchAnswer.NotYet
    case Absent => FetchAnswer.Absent
    case Found => FetchAnswer.Found(times(i), value(i))
    case _ => others(i)
  }

  /** Every answer as [[answer]] gives it. */
  def toArray: Array[FetchAnswer] = Array.tabulate(n)(answer)

  /** Starts a batch of `count` answers: every one NotYet until set. */
  private[core] def reset(count: Int): Unit = {
    if (count > kinds.length) {
      val c = math.max(count, kinds.length * 2)
      kinds = new Array[Int](c); times = new Array[Long](c)
      offsets = new Array[Int](c); lengths = new Array[Int](c); others = new Array[FetchAnswer](c)
    } else Arrays.fill(others.asInstanceOf[Array[AnyRef]], 0, n, null) // let the previous batch's answers go
    Arrays.fill(kinds, 0, count, NotYet)
    n = count
    used = 0
  }

  private[core] def setAbsent(i: Int): Unit = kinds(i) = Absent

  /** Answer i found the pair at `time` whose value is `array[offset, offset + length)` (copied). */
  private[core] def setFound(i: Int, time: Long, array: Array[Byte], offset: Int, length: Int): Unit = {
    if (used + length > buffer.length) buffer = Arrays.copyOf(buffer, math.max(buffer.length * 2, used + length))
    System.arraycopy(array, offset, buffer, used, length)
    kinds(i) = Found; times(i) = time; offsets(i) = used; lengths(i) = length
    used += length
  }

  /** Sets answer i from an answer object (a found `latest` is kept as its time and value array). */
  private[sharedstate] def set(i: Int, a: FetchAnswer): Unit = a match {
    case FetchAnswer.NotYet => kinds(i) = NotYet
    case FetchAnswer.Absent => kinds(i) = Absent
    case FetchAnswer.Found(t, v) => setFound(i, t, v, 0, v.length)
    case other => kinds(i) = Other; others(i) = other
  }
}

object FetchAnswers {
  final val NotYet = 0
  final val Absent = 1
  final val Found = 2
  final val Other = 3

  /** Answers filled from answer objects (a remote host's reply), for a caller that reads [[FetchAnswers]]. */
  def of(answers: Array[FetchAnswer], out: FetchAnswers): FetchAnswers = {
    out.reset(answers.length)
    var i = 0
    while (i < answers.length) { out.set(i, answers(i)); i += 1 }
    out
  }
}
