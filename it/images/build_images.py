"""Builds the integration tests' container images locally, with no container registry:

- base:  `debootstrap --variant=minbase bookworm` (+ ca-certificates) from the host's Debian mirror,
         `docker import`ed;
- jre:   base + openjdk-17-jre-headless (shared by the next two, so the JRE is one layer);
- spark: jre + python3.11 and pyspark 4.2.0 (from PyPI, in a venv at /opt/spark-venv; its package is
         SPARK_HOME, whose spark-class starts the standalone master and workers);
- kafka: jre + Kafka's jar directory (sharedstate.testing.kafka.kafka_libs(), from Maven Central) and
         kafka-start.sh (one KRaft broker+controller).

Each image is tagged by a hash of its inputs (its recipe, its parent's tag, the files it copies), and
saved (`docker save`) under $SHAREDSTATE_CACHE/images/: a second run loads the tars (or finds the
tags in the daemon) and builds nothing; a changed input builds that image and the ones on top of it.
Layers are made with `docker run` + `docker commit` (the daemon needs no BuildKit), on the host
network (apt and pip reach their registries as the host does).

usage: python it/images/build_images.py [spark|kafka ...]   (prints the tags; default: both)
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
SUITE = "bookworm"
PYSPARK = "pyspark==4.2.0"
REPOSITORY = "sharedstate-it"
# Bumped when a recipe changes in a way its text does not show.
RECIPE_VERSION = 1


def cache_dir() -> Path:
    return Path(os.environ.get("SHAREDSTATE_CACHE", ROOT / ".cache")) / "images"


def log(message: str) -> None:
    print(f"[images] {message}", file=sys.stderr, flush=True)


def run(*args: str, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(list(args), check=True, **kwargs)


def docker(*args: str, capture: bool = False) -> str:
    result = run("docker", *args, capture_output=capture, text=True)
    return result.stdout.strip() if capture else ""


def debian_mirror() -> tuple[str, str | None]:
    """The host's Debian mirror (and its security mirror, if it has one), from /etc/apt/sources.list*."""
    texts = []
    for path in [Path("/etc/apt/sources.list"), *sorted(Path("/etc/apt/sources.list.d").glob("*"))]:
        if path.is_file() and path.suffix in ("", ".list", ".sources"):
            texts.append(path.read_text())
    uris = re.findall(r"(?:^deb\s+(?:\[[^\]]*\]\s+)?|^URIs:\s*)(\S+)", "\n".join(texts), re.MULTILINE)
    main = [u.rstrip("/") for u in uris if u.rstrip("/").endswith("/debian")]
    security = [u.rstrip("/") for u in uris if u.rstrip("/").endswith("/debian-security")]
    if not main:
        raise SystemExit("no Debian mirror (a URI ending in /debian) in /etc/apt/sources.list*")
    return main[0], security[0] if security else None


@dataclass(frozen=True)
class Image:
    name: str
    inputs: dict  # everything the image is made from: its hash is the tag

    @property
    def tag(self) -> str:
        digest = hashlib.sha256(json.dumps(self.inputs, sort_keys=True).encode()).hexdigest()[:16]
        return f"{REPOSITORY}/{self.name}:{digest}"

    @property
    def tar(self) -> Path:
        return cache_dir() / f"{self.name}-{self.tag.rsplit(':', 1)[1]}.tar"


def exists(tag: str) -> bool:
    return subprocess.run(["docker", "image", "inspect", tag], capture_output=True).returncode == 0


def load_cached(image: Image) -> None:
    """Loads the image's tar (with its parents' tags) if the daemon lacks it and the cache has it."""
    if not exists(image.tag) and image.tar.is_file():
        log(f"loading {image.tag} from {image.tar}")
        docker("load", "-q", "-i", str(image.tar))


def ensure(image: Image, build) -> str:
    """The image's tag, in the daemon: already there, or built now."""
    if not exists(image.tag):
        started = time.monotonic()
        log(f"building {image.tag}")
        build(image.tag)
        log(f"built {image.tag} in {time.monotonic() - started:.0f} s")
    return image.tag


def save(image: Image, parents: list[str]) -> None:
    """One tar per image the tests use, holding its parents' tags too (their layers are in it anyway):
    loading it restores the chain, so the next image built on the same parents builds only itself."""
    if image.tar.is_file():
        return
    image.tar.parent.mkdir(parents=True, exist_ok=True)
    for stale in image.tar.parent.glob(f"{image.name}-*.tar"):  # older inputs' images
        stale.unlink()
    partial = image.tar.with_suffix(".partial")
    docker("save", "-o", str(partial), image.tag, *parents)
    partial.rename(image.tar)


def commit_run(parent: str, tag: str, script: str, changes: list[str], volumes: list[str] = ()) -> None:
    """A layer: `script` run in a container of `parent` (host network), committed as `tag`."""
    name = "sharedstate-build-" + hashlib.sha256(tag.encode()).hexdigest()[:12]
    subprocess.run(["docker", "rm", "-f", name], capture_output=True)
    mounts = [arg for v in volumes for arg in ("-v", v)]
    try:
        docker("run", "--name", name, "--network", "host", *mounts, parent, "/bin/sh", "-euc", script)
        docker("commit", *[arg for c in changes for arg in ("--change", c)], name, tag)
    finally:
        subprocess.run(["docker", "rm", "-f", name], capture_output=True)


def base_image() -> tuple[Image, callable]:
    mirror, security = debian_mirror()
    sources = f"deb {mirror} {SUITE} main\ndeb {mirror} {SUITE}-updates main\n"
    if security:
        sources += f"deb {security} {SUITE}-security main\n"
    image = Image(
        "base",
        {"v": RECIPE_VERSION, "suite": SUITE, "variant": "minbase", "include": ["ca-certificates"], "sources": sources},
    )

    def build(tag: str) -> None:
        if not shutil.which("debootstrap"):
            raise SystemExit("debootstrap is missing: apt-get install debootstrap (make test installs it as root)")
        with tempfile.TemporaryDirectory(prefix="sharedstate-rootfs-") as tmp:
            rootfs = Path(tmp) / "rootfs"
            run("debootstrap", "--variant=minbase", "--include=ca-certificates", SUITE, str(rootfs), mirror)
            (rootfs / "etc/apt/sources.list").write_text(sources)
            for cache in ("var/cache/apt/archives", "var/lib/apt/lists"):
                for entry in (rootfs / cache).glob("*"):
                    if entry.is_file():
                        entry.unlink()
            tar = subprocess.Popen(["tar", "-C", str(rootfs), "--numeric-owner", "-c", "."], stdout=subprocess.PIPE)
            run("docker", "import", "--change", "ENV LANG=C.UTF-8", "-", tag, stdin=tar.stdout)
            if tar.wait() != 0:
                raise SystemExit("tar of the rootfs failed")

    return image, build


APT_INSTALL = (
    "apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends {packages}"
    " && apt-get clean && rm -rf /var/lib/apt/lists/*"
)


def jre_image(base: str) -> tuple[Image, callable]:
    packages = "openjdk-17-jre-headless"
    image = Image("jre", {"v": RECIPE_VERSION, "parent": base, "apt": packages})

    def build(tag: str) -> None:
        java_home = "/usr/lib/jvm/java-17-openjdk-amd64"
        commit_run(base, tag, APT_INSTALL.format(packages=packages), [f"ENV JAVA_HOME={java_home}"])

    return image, build


def spark_image(jre: str) -> tuple[Image, callable]:
    packages = "python3.11 python3.11-venv"
    image = Image("spark", {"v": RECIPE_VERSION, "parent": jre, "apt": packages, "pip": PYSPARK})

    def build(tag: str) -> None:
        # The wheels come from the host's pip (its cache already holds pyspark's: the project's venv
        # installed it), so the container neither downloads nor builds the 450 MB package again.
        wheels = cache_dir() / "wheels"
        wheels.mkdir(parents=True, exist_ok=True)
        run(sys.executable, "-m", "pip", "wheel", "-q", "--disable-pip-version-check", "-w", str(wheels), PYSPARK)
        script = (
            APT_INSTALL.format(packages=packages)
            + " && python3.11 -m venv /opt/spark-venv"
            + f" && /opt/spark-venv/bin/pip install -q --no-cache-dir --no-index --find-links /wheels '{PYSPARK}'"
        )
        home = "/opt/spark-venv/lib/python3.11/site-packages/pyspark"
        changes = [
            f"ENV SPARK_HOME={home}",
            "ENV PATH=/opt/spark-venv/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
            "ENV PYSPARK_PYTHON=/opt/spark-venv/bin/python",
        ]
        commit_run(jre, tag, script, changes, volumes=[f"{wheels}:/wheels:ro"])

    return image, build


def kafka_image(jre: str) -> tuple[Image, callable]:
    from sharedstate.testing.kafka import kafka_libs

    libs = kafka_libs()
    jars = sorted(p.name for p in libs.glob("*.jar"))
    start = HERE / "kafka-start.sh"
    image = Image(
        "kafka",
        {"v": RECIPE_VERSION, "parent": jre, "jars": jars, "start": hashlib.sha256(start.read_bytes()).hexdigest()},
    )

    def build(tag: str) -> None:
        name = "sharedstate-build-kafka"
        subprocess.run(["docker", "rm", "-f", name], capture_output=True)
        try:
            docker("create", "--name", name, jre, "true")
            with tempfile.TemporaryDirectory(prefix="sharedstate-kafka-") as tmp:
                staged = Path(tmp) / "kafka"
                (staged / "libs").mkdir(parents=True)
                for jar in jars:
                    shutil.copy2(libs / jar, staged / "libs" / jar)  # real files, not links into the cache
                shutil.copy2(start, staged / "kafka-start.sh")
                (staged / "kafka-start.sh").chmod(0o755)
                docker("cp", str(staged), f"{name}:/opt/kafka")
            docker("commit", "--change", 'CMD ["/opt/kafka/kafka-start.sh"]', name, tag)
        finally:
            subprocess.run(["docker", "rm", "-f", name], capture_output=True)

    return image, build


def ensure_images(names: tuple[str, ...] = ("spark", "kafka")) -> dict[str, str]:
    """The tags of the named images (spark, kafka), each in the daemon: found, loaded or built."""
    base, build_base = base_image()
    jre, build_jre = jre_image(base.tag)
    leaves = {"spark": spark_image, "kafka": kafka_image}
    wanted = {name: leaves[name](jre.tag) for name in names}
    for image, _ in wanted.values():
        load_cached(image)
    tags = {}
    for name, (image, build) in wanted.items():
        if not exists(image.tag):
            ensure(base, build_base)
            ensure(jre, build_jre)
            ensure(image, build)
        save(image, [jre.tag, base.tag])
        tags[name] = image.tag
    return tags


if __name__ == "__main__":
    wanted = tuple(sys.argv[1:]) or ("spark", "kafka")
    unknown = set(wanted) - {"spark", "kafka"}
    if unknown:
        raise SystemExit(f"unknown image(s) {sorted(unknown)}: the images are spark and kafka")
    started = time.monotonic()
    print(json.dumps(ensure_images(wanted), indent=2))
    log(f"done in {time.monotonic() - started:.0f} s")
