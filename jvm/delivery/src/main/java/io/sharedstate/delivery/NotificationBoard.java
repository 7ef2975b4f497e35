package io.sharedstate.delivery;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;

/**
 * The reader's notification queue: one bit per lane, set by a writer with an atomic OR (the only
 * CAS-class operation writers ever do, and only when a lane's flag goes from 0 to 1).
 */
final class NotificationBoard {
  private static final VarHandle WORD = MethodHandles.arrayElementVarHandle(long[].class);
  private final long[] words;

  NotificationBoard(int lanes) {
    words = new long[(lanes + 63) >>> 6];
  }

  int words() {
    return words.length;
  }

  void post(int lane) {
    WORD.getAndBitwiseOr(words, lane >>> 6, 1L << (lane & 63));
  }

  /** Takes and clears the bits of one word; cheap when nothing was posted. */
  long take(int word) {
    if ((long) WORD.getVolatile(words, word) == 0L) return 0L;
    return (long) WORD.getAndSet(words, word, 0L);
  }

  boolean anyPosted() {
    for (int i = 0; i < words.length; i++) {
      if ((long) WORD.getVolatile(words, i) != 0L) return true;
    }
    return false;
  }
}
