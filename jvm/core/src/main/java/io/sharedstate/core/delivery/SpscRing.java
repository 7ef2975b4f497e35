package io.sharedstate.core.delivery;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;

/** Cache-line padding before the producer's fields. */
abstract class SpscRingPadStart {
  long p00, p01, p02, p03, p04, p05, p06, p07, p08, p09, p0a, p0b, p0c, p0d, p0e, p0f;
}

/** The write offset W and the producer's cached copy of the read offset. */
abstract class SpscRingProducerFields extends SpscRingPadStart {
  long producerIndex;
  long consumerIndexCache;
}

abstract class SpscRingPadMiddle extends SpscRingProducerFields {
  long p10, p11, p12, p13, p14, p15, p16, p17, p18, p19, p1a, p1b, p1c, p1d, p1e, p1f;
}

/** The read offset R and the consumer's cached copy of the write offset. */
abstract class SpscRingConsumerFields extends SpscRingPadMiddle {
  long consumerIndex;
  long producerIndexCache;
}

abstract class SpscRingPadEnd extends SpscRingConsumerFields {
  long p20, p21, p22, p23, p24, p25, p26, p27, p28, p29, p2a, p2b, p2c, p2d, p2e, p2f;
}

/**
 * Nova's conflict-free queue: a circular array written by exactly one thread and read by exactly one
 * other. The writer only writes W and the reader only writes R, on separate cache lines, and each
 * caches the other's offset, so the two meet only when the ring looks full or empty. No CAS.
 */
public final class SpscRing<E> extends SpscRingPadEnd {
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

  /** @param capacity a power of two, at least 2 (checked by the caller, which names the argument) */
  public SpscRing(int capacity) {
    this.capacity = capacity;
    this.mask = capacity - 1;
    this.buffer = new Object[capacity];
  }

  public int capacity() {
    return capacity;
  }

  /** Writer only: appends {@code e} (not null), or returns false if the ring is full. */
  public boolean offer(E e) {
    long p = producerIndex;
    if (p - consumerIndexCache >= capacity) {
      consumerIndexCache = (long) CONSUMER.getAcquire(this);
      if (p - consumerIndexCache >= capacity) return false;
    }
    buffer[(int) p & mask] = e; // published by the release store of W below
    PRODUCER.setRelease(this, p + 1);
    return true;
  }

  /** Reader only: takes the oldest message, or returns null if the ring is empty. */
  @SuppressWarnings("unchecked")
  public E poll() {
    long c = consumerIndex;
    if (c >= producerIndexCache) {
      producerIndexCache = (long) PRODUCER.getAcquire(this);
      if (c >= producerIndexCache) return null;
    }
    int slot = (int) c & mask;
    E e = (E) buffer[slot];
    buffer[slot] = null; // the writer reuses the slot only after it sees R move past it
    CONSUMER.setRelease(this, c + 1);
    return e;
  }

  /** Reader only: true if no message is visible now. */
  public boolean isEmpty() {
    return consumerIndex >= (long) PRODUCER.getAcquire(this);
  }

  /** Messages written and not yet read (a snapshot; exact only when both sides are idle). */
  public long size() {
    return (long) PRODUCER.getAcquire(this) - (long) CONSUMER.getAcquire(this);
  }
}
