package io.sharedstate.core;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;

/**
 * Little-endian longs and ints read and written in place in a byte array (the packed layout of a
 * {@link ValueSet}). VarHandle views compile to plain loads and stores; Java, because Scala 2.13
 * cannot call a VarHandle's signature-polymorphic methods without boxing.
 */
final class PackedBytes {
  private static final VarHandle LONGS =
      MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.LITTLE_ENDIAN);
  private static final VarHandle INTS =
      MethodHandles.byteArrayViewVarHandle(int[].class, ByteOrder.LITTLE_ENDIAN);

  private PackedBytes() {}

  static long getLong(byte[] a, int at) {
    return (long) LONGS.get(a, at);
  }

  static void putLong(byte[] a, int at, long v) {
    LONGS.set(a, at, v);
  }

  static int getInt(byte[] a, int at) {
    return (int) INTS.get(a, at);
  }

  static void putInt(byte[] a, int at, int v) {
    INTS.set(a, at, v);
  }

  /** An acquire read of the int at `at` (which must be 4-byte aligned: a ValueSet's count, at 0). */
  static int getIntAcquire(byte[] a, int at) {
    return (int) INTS.getAcquire(a, at);
  }

  /** A compare-and-set of the int at `at` (4-byte aligned), with volatile semantics. */
  static boolean compareAndSetInt(byte[] a, int at, int expected, int v) {
    return INTS.compareAndSet(a, at, expected, v);
  }
}
