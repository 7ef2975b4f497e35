# The two commands of the quick start: `make demo` and `make test`. Each does its own set-up
# (Debian tools, virtualenv, pip, sbt, the jar); a second run reuses the caches under .cache/.
SHELL := /bin/bash
ROOT := $(CURDIR)
VENV := $(ROOT)/.venv
PY := $(VENV)/bin/python
VERSION := $(shell cat VERSION)
JAR := jvm/spark/target/scala-2.13/sharedstate-spark_2.13-$(VERSION).jar
PKG_JAR_DIR := python/sharedstate/jars
export SHAREDSTATE_CACHE ?= $(ROOT)/.cache
export SHAREDSTATE_IVY_DIR ?= $(SHAREDSTATE_CACHE)/ivy
# The file repository `spark/publish` writes the plugin's pom and jar into (Maven layout), for
# `spark-submit --repositories file://<that directory> --packages ...`; tests read it from here.
export SHAREDSTATE_LOCAL_REPOSITORY ?= $(ROOT)/target/repo
# pip's downloads and built wheels (pyspark is an sdist), reused by the wheel test's fresh virtualenv.
export PIP_CACHE_DIR ?= $(SHAREDSTATE_CACHE)/pip
export PIP_DISABLE_PIP_VERSION_CHECK := 1
# sbt and pytest in one go; PYTEST_ARGS narrows the Python run (e.g. -m "not slow").
PYTEST_ARGS ?=
# JVM options for every JVM the Python suite starts (drivers, executors, containers, brokers): they live
# for seconds to a few minutes, so C1 alone (no C2 compiler threads taking one of two cores) runs the
# suite faster; a benchmark's own runs never get these (README, Tests).
TEST_JAVA_TOOL_OPTIONS ?= -XX:TieredStopAtLevel=1

.PHONY: demo demo-kafka test test-fast jar package-jar wheel venv system-deps docker-deps bench-deps bench-adcamp bench-statestore bench-partial bench-transactions clean

demo: jar
	$(PY) -m sharedstate.demos.adcamp --out $(ROOT)/demo-output

# AdCamp with its streams in Kafka topics, on a local broker (KRaft, Kafka's jars from Maven Central,
# 127.0.0.1 only) that the demo starts and stops; it prints where the enriched views are.
demo-kafka: jar
	$(PY) -m sharedstate.demos.adcamp_kafka --out $(ROOT)/demo-output-kafka $(DEMO_ARGS)

# Every JVM and Python test, slow integration tests included (CI runs exactly this), after the
# lint and formatting checks (ruff for Python, fails fast; scalafmt, `bin/sbt scalafmtAll` fixes);
# bench-deps brings redis-server, which the AdCamp benchmark smoke test needs.
test: system-deps docker-deps venv bench-deps
	$(PY) -m ruff check python it benchmarks
	$(PY) -m ruff format --check python it benchmarks
	bin/sbt "scalafmtCheckAll; scalafmtSbtCheck; bench/scalafmtCheckAll; test; spark/assembly; spark/publish" < /dev/null
	$(MAKE) --no-print-directory package-jar
	JAVA_TOOL_OPTIONS="$(TEST_JAVA_TOOL_OPTIONS) $$JAVA_TOOL_OPTIONS" $(PY) -m pytest $(PYTEST_ARGS)

# The same without the slow integration tests, for a quick local loop.
test-fast:
	$(MAKE) test PYTEST_ARGS='-m "not slow"'

jar: system-deps venv
	bin/sbt "spark/assembly; spark/publish" < /dev/null
	$(MAKE) --no-print-directory package-jar

# The assembly goes inside the Python package, with the default confs.
package-jar:
	mkdir -p $(PKG_JAR_DIR) python/sharedstate/conf
	rm -f $(PKG_JAR_DIR)/*.jar
	cp $(JAR) $(PKG_JAR_DIR)/
	cp conf/spark-defaults.conf conf/log4j2.properties python/sharedstate/conf/

# A wheel a user can `pip install dist/sharedstate-<version>-py3-none-any.whl` (PEP 517, setuptools):
# the plugin jar and the default confs inside; pyspark and delta-spark come as its dependencies.
wheel: jar
	rm -f dist/sharedstate-$(VERSION)-*.whl
	$(PY) -m build --wheel --outdir dist .

venv: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml VERSION
	test -x $(PY) || python3.11 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e ".[dev,demo]"
	touch $@

# Tools the build needs from Debian: a JDK 17 and Maven (which fetches the sbt launcher).
system-deps:
	@need=""; \
	command -v mvn >/dev/null || need="$$need maven"; \
	command -v javac >/dev/null || need="$$need openjdk-17-jdk-headless"; \
	command -v python3.11 >/dev/null || need="$$need python3.11 python3.11-venv"; \
	if [ -n "$$need" ]; then \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q $$need; \
	  else echo "Please install:$$need (Debian packages)" >&2; exit 1; fi; \
	fi

# The container tests (it/test_containers_*.py, slow): Debian's docker.io and debootstrap, and a
# running dockerd, started here when it is not running and we are root. Otherwise this only says what
# to do: the fast tests need no Docker, and the container tests fail with the same message.
DOCKERD_LOG := $(SHAREDSTATE_CACHE)/dockerd.log
docker-deps:
	@need=""; \
	command -v dockerd >/dev/null || need="$$need docker.io"; \
	command -v debootstrap >/dev/null || need="$$need debootstrap"; \
	if [ -n "$$need" ]; then \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q $$need; \
	  else echo "For the container tests, please install:$$need (Debian packages)" >&2; exit 0; fi; \
	fi; \
	if ! docker info >/dev/null 2>&1; then \
	  if [ "$$(id -u)" = 0 ]; then \
	    mkdir -p $(SHAREDSTATE_CACHE); echo "Starting dockerd (log: $(DOCKERD_LOG))"; \
	    nohup dockerd >$(DOCKERD_LOG) 2>&1 </dev/null & \
	    for i in $$(seq 60); do docker info >/dev/null 2>&1 && break; sleep 1; done; \
	    docker info >/dev/null 2>&1 || { echo "dockerd did not start: see $(DOCKERD_LOG)" >&2; exit 1; }; \
	  else echo "For the container tests, start dockerd (as root: dockerd &) or give this user access to /var/run/docker.sock" >&2; fi; \
	fi

# The AdCamp benchmark (benchmarks/adcamp, ~25 min on 2 cores): Debian's redis-server and the
# `bench` extra, the jar, then the full run. BENCH_ARGS adds options (e.g. --quick).
BENCH_OUT ?= benchmarks/results/adcamp
BENCH_ARGS ?=
bench-adcamp: jar bench-deps
	$(PY) benchmarks/adcamp/run.py --out $(BENCH_OUT) $(BENCH_ARGS)

# Spark's state store providers side by side (benchmarks/statestore, a few minutes per run on 2 cores):
# three runs, medians into benchmarks/results/statestore. STATESTORE_ARGS adds options (e.g. --quick).
STATESTORE_OUT ?= benchmarks/results/statestore
STATESTORE_ARGS ?=
bench-statestore: jar
	$(PY) benchmarks/statestore/compare_providers.py --out $(STATESTORE_OUT) --runs 3 $(STATESTORE_ARGS)

# Partial States (benchmarks/partial: fraud detection, the value barrier, online learning and
# collaborative filtering at 1 and 2 writer partitions beside Spark foreachBatch peers): three runs,
# medians into benchmarks/results/partial. PARTIAL_ARGS adds options (e.g. --large: the issue's fraud size).
PARTIAL_OUT ?= benchmarks/results/partial
PARTIAL_ARGS ?=
bench-partial: jar
	$(PY) benchmarks/partial/bench_partial.py --out $(PARTIAL_OUT) --runs 3 $(PARTIAL_ARGS)

# TStream's four applications on Spark (benchmarks/transactions, ~40 min on 2 cores): ss.transact beside
# a foreachBatch into Delta (MERGE) and into Redis, three runs. TXN_BENCH_ARGS adds options (e.g. --quick).
TXN_BENCH_OUT ?= benchmarks/results/transactions
TXN_BENCH_ARGS ?=
bench-transactions: jar bench-deps
	$(PY) benchmarks/transactions/bench_transactions.py --out $(TXN_BENCH_OUT) --runs 3 $(TXN_BENCH_ARGS)

bench-deps: venv
	@if ! command -v redis-server >/dev/null; then \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q redis-server; \
	  else echo "Please install: redis-server (Debian package)" >&2; exit 1; fi; \
	fi
	$(PY) -m pip install -q -e ".[dev,bench]"

clean:
	bin/sbt clean < /dev/null
	rm -rf $(PKG_JAR_DIR) python/sharedstate/conf demo-output dist build
