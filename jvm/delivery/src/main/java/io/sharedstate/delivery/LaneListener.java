package io.sharedstate.delivery;

/** What a lane tells its reader when its notification flag goes from 0 to 1. */
interface LaneListener {
  void laneNotified(int lane);
}
