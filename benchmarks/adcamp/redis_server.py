"""A throw-away redis-server (Debian's) on 127.0.0.1 and a free port, without persistence."""

from __future__ import annotations

import atexit
import shutil
import socket
import subprocess
import time

import redis


class RedisServer:
    def __init__(self, workdir: str):
        binary = shutil.which("redis-server")
        if binary is None:
            raise RuntimeError(
                "redis-server not found: install Debian's redis-server (`make bench-adcamp` does, when run as root)"
            )
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.process = subprocess.Popen(
            [
                binary,
                "--bind",
                "127.0.0.1",
                "--port",
                str(self.port),
                "--save",
                "",
                "--appendonly",
                "no",
                "--protected-mode",
                "yes",
                "--dir",
                workdir,
                "--daemonize",
                "no",
                "--loglevel",
                "warning",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        deadline = time.monotonic() + 10
        while True:
            try:
                redis.Redis(host="127.0.0.1", port=self.port).ping()
                break
            except redis.ConnectionError:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"redis-server did not start: {self.process.stderr.read().decode()}") from None
                time.sleep(0.1)
        self.version = redis.Redis(host="127.0.0.1", port=self.port).info("server")["redis_version"]
        atexit.register(self.stop)  # also when the benchmark is interrupted

    def stop(self) -> None:
        if self.process.poll() is not None:
            return
        self.process.terminate()
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()
