"""Drops a point's staged files into the live source directories on schedule, one slot at a time."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

from workload import Staged


class Feeder(threading.Thread):
    """Hard-links slot i's update and event files into `live` at start + (i + 1) * slot_s and records
    the wall time each became visible (a link appears whole: the file source never reads half a file)."""

    def __init__(self, staged: Staged, live_updates: Path, live_events: Path):
        super().__init__(name="adcamp-feeder", daemon=True)
        self.staged = staged
        self.live_updates, self.live_events = live_updates, live_events
        live_updates.mkdir(parents=True, exist_ok=True)
        live_events.mkdir(parents=True, exist_ok=True)
        self.visible: list[float] = []  # wall time slot i's files appeared
        self.start_time = 0.0
        self.behind_s = 0.0  # how late the feeder itself was at worst (machine load)
        self._halt = threading.Event()

    def run(self) -> None:
        slot = self.staged.shape.slot_s
        self.start_time = time.time()
        for i, (upd, ev) in enumerate(zip(self.staged.update_files, self.staged.event_files)):
            due = self.start_time + (i + 1) * slot
            if self._halt.wait(max(0.0, due - time.time())):
                return
            now = time.time()
            for src, live in ((upd, self.live_updates), (ev, self.live_events)):
                dst = live / src.name
                os.link(src, dst)
                os.utime(dst, (now, now))
            self.visible.append(now)
            self.behind_s = max(self.behind_s, now - due)

    def stop(self) -> None:
        self._halt.set()

    @property
    def feed_end(self) -> float:
        return self.start_time + len(self.staged.update_files) * self.staged.shape.slot_s
