"""Containers for the it/test_containers_*.py tests (testcontainers-python): a Spark standalone
cluster (one master, N workers) and a Kafka broker, from the images it/images/build_images.py makes.

Every container runs on the host network and binds 127.0.0.1 only (SPARK_MASTER_HOST,
SPARK_LOCAL_IP, explicit ports picked free on the host), so the driver on the host, the executors in
the workers and the broker all meet on the loopback. Testcontainers' reaper (Ryuk) is an image from a
registry, which is out of reach: it is off, and the fixtures remove their containers themselves.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

os.environ["TESTCONTAINERS_RYUK_DISABLED"] = "true"  # read on the first start; the image can't be pulled

from testcontainers.core.container import DockerContainer  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "it/images"))

from build_images import ensure_images  # noqa: E402

DOCKER_HELP = (
    "the container tests need a working Docker daemon: `make docker-deps` installs docker.io and "
    "debootstrap and starts dockerd when run as root; otherwise install them (Debian: apt-get install "
    "docker.io debootstrap), start dockerd and give this user access to /var/run/docker.sock"
)


def docker_problem() -> str | None:
    """None when `docker info` answers; else why not, with what to do."""
    if shutil.which("docker") is None:
        return "no docker command: " + DOCKER_HELP
    result = subprocess.run(["docker", "info", "--format", "{{.ServerVersion}}"], capture_output=True, text=True)
    if result.returncode != 0:
        return f"`docker info` failed ({result.stderr.strip()[-300:]}): " + DOCKER_HELP
    return None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_log(container: DockerContainer, text: str, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        wrapped = container.get_wrapped_container()
        wrapped.reload()
        logs = wrapped.logs().decode(errors="replace")
        if text in logs:
            return
        if wrapped.status == "exited":
            raise AssertionError(f"{what} exited before it was ready:\n{logs[-5000:]}")
        time.sleep(0.5)
    raise AssertionError(f"{what} not ready in {timeout:.0f} s (no '{text}' in its log):\n{logs[-5000:]}")


class Containers:
    """The containers a fixture started, removed (forced) in its teardown even when a test failed."""

    def __init__(self) -> None:
        self.started: list[DockerContainer] = []
        self.prefix = "sharedstate-it-" + uuid.uuid4().hex[:8]

    def start(self, image: str, name: str, command: list[str], env: dict[str, str], mounts: list[Path]):
        container = (
            DockerContainer(image)
            .with_name(f"{self.prefix}-{name}")
            .with_command(command)
            .with_envs(**{**java_tool_options(), **env})
            .with_kwargs(network_mode="host", init=True)
        )
        for path in mounts:  # at the same path inside, so a path means the same file everywhere
            container = container.with_volume_mapping(str(path), str(path), "rw")
        self.started.append(container)
        return container.start()

    def remove_all(self) -> None:
        for container in reversed(self.started):
            try:
                container.stop(force=True)
            except Exception as e:  # noqa: BLE001 - a container already gone is fine; others are reported
                if "No such container" not in str(e) and "404" not in str(e):
                    print(f"could not remove {container._name}: {e}", file=sys.stderr)
        self.started.clear()


def java_tool_options() -> dict[str, str]:
    """The test run's JAVA_TOOL_OPTIONS (make test sets them) for the JVMs inside a container too."""
    options = os.environ.get("JAVA_TOOL_OPTIONS", "").strip()
    return {"JAVA_TOOL_OPTIONS": options} if options else {}


def spark_auth_opts(secret: str) -> str:
    return f"-Dspark.authenticate=true -Dspark.authenticate.secret={secret}"


class StandaloneCluster:
    """A Spark standalone cluster in containers: one master and `workers` workers, spark.authenticate
    on with `secret` (the master, the workers and every application share it), `shared` directories
    bind-mounted at their own paths in every container. `decommission`: the workers honour Spark's
    graceful decommissioning (`spark.decommission.enabled`: SIGPWR tells a worker to decommission)."""

    def __init__(
        self,
        containers: Containers,
        image: str,
        secret: str,
        shared: list[Path],
        workers: int = 2,
        decommission: bool = False,
    ):
        self.containers = containers
        self.image = image
        self.secret = secret
        self.shared = shared
        self.decommission = decommission
        self.decommissioned: set[int] = set()
        self.port = free_port()
        self.master_url = f"spark://127.0.0.1:{self.port}"
        self.master = containers.start(
            image,
            "master",
            [
                "spark-class",
                "org.apache.spark.deploy.master.Master",
                "--host",
                "127.0.0.1",
                "--port",
                str(self.port),
                "--webui-port",
                str(free_port()),
            ],
            self.env(),
            shared,
        )
        wait_for_log(self.master, "I have been elected leader", 180, "the Spark master")
        self.workers = [self.start_worker(i) for i in range(workers)]

    def env(self) -> dict[str, str]:
        return {
            "SPARK_MASTER_HOST": "127.0.0.1",
            "SPARK_LOCAL_IP": "127.0.0.1",
            "SPARK_DAEMON_JAVA_OPTS": spark_auth_opts(self.secret),
            "SPARK_DAEMON_MEMORY": "512m",
        }

    def start_worker(self, index: int) -> DockerContainer:
        env = self.env()
        if self.decommission:
            env["SPARK_WORKER_OPTS"] = "-Dspark.decommission.enabled=true"
        worker = self.containers.start(
            self.image,
            f"worker{index}-{uuid.uuid4().hex[:4]}",
            [
                "spark-class",
                "org.apache.spark.deploy.worker.Worker",
                self.master_url,
                "--host",
                "127.0.0.1",
                "--port",
                str(free_port()),
                "--webui-port",
                str(free_port()),
                "--cores",
                "2",
                "--memory",
                "1536m",
            ],
            env,
            self.shared,
        )
        wait_for_log(worker, "Successfully registered with master", 180, f"Spark worker {index}")
        return worker

    def add_worker(self) -> int:
        """One more worker (the cluster growing); returns its index."""
        self.workers.append(self.start_worker(len(self.workers)))
        return len(self.workers) - 1

    def decommission_worker(self, index: int) -> None:
        """Spark's graceful decommissioning of a standalone worker, as an operator (or a cloud's
        preemption notice) starts it: SIGPWR to the worker (the container's init passes it on). The
        worker tells the master, which tells each application's driver that the worker's executors are
        decommissioned; the executors finish their tasks and leave."""
        self.workers[index].get_wrapped_container().kill(signal="SIGPWR")
        self.decommissioned.add(index)

    def executor_ids(self, index: int, app_id: str) -> list[str]:
        """The executors of `app_id` the worker launched (from its log)."""
        logs = self.workers[index].get_wrapped_container().logs().decode(errors="replace")
        return re.findall(rf"Asked to launch executor {re.escape(app_id)}/(\d+)", logs)

    def kill_worker(self, index: int) -> None:
        """SIGKILL of the worker container: the worker and its executor JVM die at once."""
        self.workers[index].get_wrapped_container().kill(signal="SIGKILL")

    def replace_worker(self, index: int) -> None:
        """A new worker container in place of a dead one (its operator bringing the machine back)."""
        self.workers[index] = self.start_worker(index)


class KafkaBroker:
    """One KRaft node (broker and controller) in a container, listening on 127.0.0.1:`port`."""

    def __init__(self, containers: Containers, image: str):
        self.port = free_port()
        self.bootstrap = f"127.0.0.1:{self.port}"
        self.container = containers.start(
            image,
            "kafka",
            ["/opt/kafka/kafka-start.sh"],
            {"KAFKA_PORT": str(self.port), "KAFKA_CONTROLLER_PORT": str(free_port())},
            [],
        )
        wait_for_log(self.container, "Kafka Server started", 180, "the Kafka broker")


__all__ = ["Containers", "KafkaBroker", "StandaloneCluster", "docker_problem", "ensure_images"]


def spark_submit_command(cluster: StandaloneCluster, app: Path, *args: str, conf: dict[str, str]) -> list[str]:
    """spark-submit (the host's pyspark) of `app` to the cluster, the driver on the host: the plugin
    from the build's file repository and Kafka's connector by --packages (Delta comes from Maven
    Central as the plugin's dependency), the plugin and Delta switched on by --conf as a user's own
    submission does (docs/deployment.md)."""
    from sharedstate._jars import (
        KAFKA_CONNECTOR_COORDINATE,
        LOCAL_REPOSITORY,
        MAVEN_COORDINATE,
        SPARK_PROVIDED_EXCLUDES,
    )

    settings = {
        "spark.authenticate": "true",
        "spark.authenticate.secret": cluster.secret,
        "spark.driver.host": "127.0.0.1",
        "spark.driver.bindAddress": "127.0.0.1",
        "spark.driver.extraJavaOptions": f"-Dlog4j2.configurationFile=file:{ROOT / 'conf/log4j2.properties'}",
        "spark.executor.cores": "2",
        "spark.executor.memory": "1g",
        "spark.cores.max": "4",
        # both executors registered before the application starts (a State placed then uses both)
        "spark.scheduler.minRegisteredResourcesRatio": "1.0",
        "spark.scheduler.maxRegisteredResourcesWaitingTime": "180s",
        "spark.plugins": "io.sharedstate.spark.SharedStatePlugin",
        "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
        "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
        "spark.sql.shuffle.partitions": "4",
        # the workers share the host's address (host network) but not a file system: a reducer must fetch
        # another executor's shuffle blocks over the network, not read them as if from its own disk
        "spark.shuffle.readHostLocalDisk": "false",
        "spark.sql.session.timeZone": "UTC",
        "spark.ui.enabled": "false",
        # the executors run the image's Python (a Python worker would start there, not the host's)
        "spark.pyspark.python": "/opt/spark-venv/bin/python",
        "spark.pyspark.driver.python": sys.executable,
        **conf,
    }
    published = LOCAL_REPOSITORY / "io/sharedstate/sharedstate-spark_2.13"
    assert any(published.glob("*/*.pom")), f"the build publishes the plugin to {LOCAL_REPOSITORY} (make jar does)"
    command = [
        str(Path(sys.executable).parent / "spark-submit"),
        "--master",
        cluster.master_url,
        "--deploy-mode",
        "client",
        "--repositories",
        LOCAL_REPOSITORY.as_uri(),
        "--packages",
        f"{MAVEN_COORDINATE},{KAFKA_CONNECTOR_COORDINATE}",
        # Delta's dependencies that Spark ships (newer) would only be downloaded and shipped dead
        "--exclude-packages",
        SPARK_PROVIDED_EXCLUDES,
    ]
    for key, value in settings.items():
        command += ["--conf", f"{key}={value}"]
    return [*command, str(app), *args]


def fresh_plugin_in(ivy: Path) -> None:
    """Drops the plugin from an Ivy cache: its version stays the same across builds, so a cached jar
    could be an older build's (Delta and the connector stay cached)."""
    shutil.rmtree(ivy / "cache" / "io.sharedstate", ignore_errors=True)
    for stale in (ivy / "jars").glob("io.sharedstate_*"):
        stale.unlink()


def driver_env(home: Path) -> dict[str, str]:
    """The host driver's environment: the checkout's Python package on the path, no inherited submit
    args, and `home` as the JVM's user.home (Spark's Ivy looks in ~/.m2 first: nothing may come from there)."""
    import pyspark

    env = {k: v for k, v in os.environ.items() if k not in ("PYSPARK_SUBMIT_ARGS", "SHAREDSTATE_JAR")}
    env.update(
        SPARK_HOME=str(Path(pyspark.__file__).parent),
        PYSPARK_DRIVER_PYTHON=sys.executable,
        PYTHONPATH=os.pathsep.join([str(ROOT / "python"), str(ROOT / "it/apps"), env.get("PYTHONPATH", "")]),
        PATH=f"{Path(sys.executable).parent}:{env.get('PATH', '')}",
        SPARK_SUBMIT_OPTS=f"-Duser.home={home}",
    )
    return env
