package io.sharedstate.delivery;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.concurrent.locks.LockSupport;

/**
 * One (writer, reader) pair: a single-writer ring plus Nova's notification flag F. The writer raises F
 * and notifies the reader only when F was 0; while the reader keeps the lane marked, F stays 1 and
 * sending costs no shared write beyond the ring's own offset.
 */
public final class Lane<M> {
  private static final VarHandle FLAG;

  static {
    try {
      FLAG = MethodHandles.lookup().findVarHandle(Lane.class, "flag", int.class);
    } catch (ReflectiveOperationException e) {
      throw new ExceptionInInitializerError(e);
    }
  }

  private final SpscRing<M> ring;
  private final int id;
  private final LaneListener listener;
  @SuppressWarnings("unused") // accessed through FLAG
  private volatile int flag;

  Lane(int id, int capacity, LaneListener listener) {
    this.ring = new SpscRing<>(capacity);
    this.id = id;
    this.listener = listener;
  }

  /** The writer slot this lane belongs to. */
  public int id() {
    return id;
  }

  /** Writer only: sends {@code message} (not null), or returns false if the lane is full. */
  public boolean trySend(M message) {
    if (message == null) throw new NullPointerException("message");
    if (!ring.offer(message)) return false;
    // StoreLoad: W must be visible before F is read, or a reader that is clearing F could miss both.
    VarHandle.fullFence();
    if ((int) FLAG.getOpaque(this) == 0 && FLAG.compareAndSet(this, 0, 1)) listener.laneNotified(id);
    return true;
  }

  /** Writer only: sends {@code message}, waiting while the lane is full (the reader drains it). */
  public void send(M message) throws InterruptedException {
    int round = 0;
    while (!trySend(message)) {
      if (round < 64) Thread.onSpinWait();
      else if (round < 128) Thread.yield();
      else {
        LockSupport.parkNanos(20_000L);
        if (Thread.interrupted()) throw new InterruptedException("interrupted while lane " + id + " was full");
      }
      round++;
    }
  }

  // ---- reader side ----

  M poll() {
    return ring.poll();
  }

  boolean isEmpty() {
    return ring.isEmpty();
  }

  /**
   * Reader only: clears F and says whether a message arrived meanwhile. If so, the reader must read
   * the lane again (a writer that saw F = 1 did not notify).
   */
  boolean clearFlagAndRecheck() {
    FLAG.setVolatile(this, 0);
    VarHandle.fullFence(); // StoreLoad, the reader's half of the handshake with trySend
    return !ring.isEmpty();
  }

  /** Reader only: raises F itself after a recheck found messages; false if a writer raised it first. */
  boolean raiseFlag() {
    return FLAG.compareAndSet(this, 0, 1);
  }

  long size() {
    return ring.size();
  }
}
