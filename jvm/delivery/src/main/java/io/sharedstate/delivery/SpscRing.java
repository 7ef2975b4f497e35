package io.sharedstate.delivery;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;

/** Cache-line padding before the producer's fields. */
abstract class SpscRingPadStart {
  long p00, p01, p02, p03, p04, p05, p06, p07, p08, p09, p0a, p0b, p0c, p0d, p0e, p0f;
}

/** The write offset W and how far the producer may write without looking at the slots again. */
abstract class SpscRingProducerFields extends SpscRingPadStart {
  long producerIndex;
  long producerLimit;
}

abstract class SpscRingPadMiddle extends SpscRingProducerFields {
  long p10, p11, p12, p13, p14, p15, p16, p17, p18, p19, p1a, p1b, p1c, p1d, p1e, p1f;
}

/** The read offset R. */
abstract class SpscRingConsumerFields extends SpscRingPadMiddle {
  long consumerIndex;
}

abstract class SpscRingPadEnd extends SpscRingConsumerFields {
  long p20, p21, p22, p23, p24, p25, p26, p27, p28, p29, p2a, p2b, p2c, p2d, p2e, p2f;
}

/**
 * Nova's conflict-free queue: a circular array written by exactly one thread and read by exactly one
 * other. No CAS. The offsets W and R are each private to their side; the slots themselves say whether
 * they are full (non-null), so the reader never reads W and the writer reads a slot ahead of W only
 * once per {@code lookAhead} messages. The two sides share cache lines only where the messages are.
 */
public final class SpscRing<E> extends SpscRingPadEnd {
  private static final VarHandle SLOT = MethodHandles.arrayElementVarHandle(Object[].class);
  private static final VarHandle PRODUCER;
  private static final VarHandle CONSUMER;

  static {
    try {
      MethodHandles.Lookup lookup = MethodHandles.lookup();
      PRODUCER = lookup.findVarHandle(SpscRingProducerFields.class, "producerIndex", long.class);
      CONSUMER = lookup.findVarHandle(SpscRingConsumerFields.class, "consumerIndex", long.class);
    } catch (ReflectiveOperationException e) {
      throw new ExceptionInInitializerError(e);
    }
  }

  private final Object[] buffer;
  private final int mask;
  private final int capacity;
  private final int lookAhead;

  /** @param capacity a power of two, at least 2 (checked by the caller, which names the argument) */
  public SpscRing(int capacity) {
    this.capacity = capacity;
    this.mask = capacity - 1;
    this.buffer = new Object[capacity];
    this.lookAhead = Math.max(1, Math.min(capacity / 4, 4096));
  }

  public int capacity() {
    return capacity;
  }

  /** Writer only: appends {@code e} (not null), or returns false if the ring is full. */
  public boolean offer(E e) {
    long p = producerIndex;
    if (p >= producerLimit) {
      // The reader empties slots in order: if the slot lookAhead ahead is empty, so are all before it.
      if (SLOT.getAcquire(buffer, (int) (p + lookAhead) & mask) == null) producerLimit = p + lookAhead;
      else if (SLOT.getAcquire(buffer, (int) p & mask) == null) producerLimit = p + 1;
      else return false;
    }
    SLOT.setRelease(buffer, (int) p & mask, e); // the message is published by its own slot
    PRODUCER.setOpaque(this, p + 1);
    return true;
  }

  /** Reader only: takes the oldest message, or returns null if the ring is empty. */
  @SuppressWarnings("unchecked")
  public E poll() {
    long c = consumerIndex;
    int slot = (int) c & mask;
    E e = (E) SLOT.getAcquire(buffer, slot);
    if (e == null) return null;
    SLOT.setRelease(buffer, slot, null); // hands the slot back to the writer
    CONSUMER.setOpaque(this, c + 1);
    return e;
  }

  /** Reader only: true if no message is visible now. */
  public boolean isEmpty() {
    return SLOT.getAcquire(buffer, (int) consumerIndex & mask) == null;
  }

  /** Messages written and not yet read (a snapshot; exact only when both sides are idle). */
  public long size() {
    return (long) PRODUCER.getOpaque(this) - (long) CONSUMER.getOpaque(this);
  }
}
