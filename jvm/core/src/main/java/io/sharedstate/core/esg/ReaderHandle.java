package io.sharedstate.core.esg;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;

/**
 * The position of one ESG reader, touched only by the reader's thread. It also publishes how many
 * nodes of each source slot it has passed, which sources read for back-pressure.
 */
final class ReaderHandle {
  private static final VarHandle COUNT = MethodHandles.arrayElementVarHandle(long[].class);

  final int slot;
  /** The last node this reader passed; everything before it is unreachable from here. */
  EsgNode position;
  private final long[] passed;
  /**
   * Per source slot, a node this reader saw as that source's last node, still ahead of the reader. A
   * node before it cannot be the source's last node any more (it only moves forward), so the reader
   * skips reading the source's {@code written} for it. Cleared when passed, so it retains nothing.
   */
  final EsgNode[] seenWritten;

  ReaderHandle(int slot, EsgNode position, long[] passed) {
    this.slot = slot;
    this.position = position;
    this.passed = passed;
    this.seenWritten = new EsgNode[passed.length];
  }

  /** A new reader that continues exactly where this one is (the caller of addReaders). */
  ReaderHandle copyAs(int newSlot) {
    long[] copy = new long[passed.length];
    for (int i = 0; i < copy.length; i++) copy[i] = (long) COUNT.getOpaque(passed, i);
    return new ReaderHandle(newSlot, position, copy);
  }

  void countPassed(int source) {
    COUNT.setRelease(passed, source, (long) COUNT.getOpaque(passed, source) + 1);
  }

  long passedOf(int source) {
    return (long) COUNT.getAcquire(passed, source);
  }
}
