# Streams Replication Manager: the commands people and CI use.
# A fresh machine needs only python3 (3.11), Java 17 and Maven: uv is bootstrapped with
# pip into .cache/bootstrap, the environment is .venv, jars land in .cache/jars.

SHELL := /bin/bash
PYTHON ?= python3
RTT_MS ?= 0,50,150
UV_VERSION := 0.13.8
BOOTSTRAP := .cache/bootstrap
UV := $(BOOTSTRAP)/bin/uv
VENV := .venv
DRIVER_VENV := .cache/venv-driver
SRM_LOCAL := $(VENV)/bin/srm-local
# Debian's docker-compose (1.29) if installed, else the `docker compose` plugin, chosen
# when it runs (engine.sh may install docker-compose after make has started).
COMPOSE := deploy/images/compose.sh
# After `make kerberos` (optional): the `kerberos` extra (python-gssapi) and confluent-kafka
# built from its sdist against the GSSAPI-capable librdkafka, on every later sync too.
comma := ,
KERBEROS_PREFIX := $(CURDIR)/.cache/kerberos/librdkafka-2.15.1
SYNC_KERBEROS := $(if $(wildcard $(CURDIR)/.cache/kerberos/ready),CFLAGS=-I$(KERBEROS_PREFIX)/include LDFLAGS="-L$(KERBEROS_PREFIX)/lib -Wl$(comma)-rpath$(comma)$(KERBEROS_PREFIX)/lib",)
SYNC_KERBEROS_ARGS := $(if $(SYNC_KERBEROS),--extra kerberos --no-binary-package confluent-kafka,)
# Never let uv download its own Python: the machine's python3 is the one we use.
export UV_PYTHON_DOWNLOADS := never
export UV_PYTHON := $(PYTHON)

.DEFAULT_GOAL := help
.PHONY: help install jars up down kafka-up kafka-down kafka-status test test-unit \
        test-integration test-driver-alone test-spark-archive test-unit-others test-unit-common \
        test-unit-rest bench bench-scale bench-wan lint format clean images compose-up compose-down \
        test-containers kerberos

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-16s %s\n", $$1, $$2}'

$(UV):
	@echo "bootstrapping uv $(UV_VERSION) into $(BOOTSTRAP) with pip..."
	@if $(PYTHON) -m venv $(BOOTSTRAP) >/dev/null 2>&1; then \
		$(BOOTSTRAP)/bin/python -m pip install -q --disable-pip-version-check uv==$(UV_VERSION); \
	else \
		rm -rf $(BOOTSTRAP); \
		$(PYTHON) -m pip install -q --disable-pip-version-check --target $(BOOTSTRAP)/lib uv==$(UV_VERSION) && \
		mkdir -p $(BOOTSTRAP)/bin && ln -sf ../lib/bin/uv $(UV); \
	fi

$(VENV)/.synced: $(UV) uv.lock pyproject.toml */*/pyproject.toml deploy/local/pyproject.toml
	@echo "installing the Python environment into $(VENV) (uv sync --frozen)..."
	@$(SYNC_KERBEROS) $(UV) sync --frozen --all-packages $(SYNC_KERBEROS_ARGS)
	@touch $@

install: $(VENV)/.synced ## create .venv with every package (first run: a few minutes)

jars: install ## fetch the Kafka and Spark-connector jars with Maven
	@$(SRM_LOCAL) jars

up: jars ## start the local stack (primary :9092, backup :9192) and show the plan; Ctrl-C stops
	@$(SRM_LOCAL) up

down: ## stop everything `make up` started
	@if [ -x $(SRM_LOCAL) ]; then $(SRM_LOCAL) down; else echo "nothing was running"; fi

kafka-up: jars ## start only the local Kafka clusters (primary, backup)
	@$(SRM_LOCAL) kafka up

kafka-down: ## stop the local Kafka clusters
	@if [ -x $(SRM_LOCAL) ]; then $(SRM_LOCAL) kafka down; else echo "nothing was running"; fi

kafka-status: install ## show local Kafka clusters
	@$(SRM_LOCAL) kafka status

# Every test run ends with its slowest tests (setup, call and teardown timed apart):
# docs/testing.md, "Where the time goes". DURATIONS=0 lists every test, DURATIONS= none.
DURATIONS ?= 30

# The driver's tests run once, in test-driver-alone: the same tests on the same code,
# with fewer packages installed, so it proves what the main run would and more (that the
# driver declares what it imports). The main run leaves them out.
DRIVER_TESTS := services/driver/tests

# srm_common's unit tests, apart from the other unit tests: about half of their CPU, so
# that the first phase below keeps both cores busy to its end.
COMMON_TESTS := libs/srm_common/tests

# make test runs in two phases. First, side by side (each mostly one core of two; the
# output of each is printed whole when it ends): the driver's tests alone, the Spark
# class-data archive the integration tests' drivers use, srm_common's unit tests and
# every other unit test.
# Then the integration tests, alone on the machine (their waits and loads are timed).
# A failed first phase still runs the second; make test fails if either did.
test: jars $(UV) ## every test: the driver alone, unit, integration on real Kafka and Spark
	@status=0; \
	$(MAKE) --no-print-directory -j4 --output-sync=target \
		test-driver-alone test-spark-archive test-unit-common test-unit-rest || status=$$?; \
	$(VENV)/bin/python -m pytest -m integration --ignore-glob='$(DRIVER_TESTS)/*' \
		$(if $(DURATIONS),--durations=$(DURATIONS)) || status=$$?; \
	exit $$status

test-spark-archive: install
	@$(VENV)/bin/python -m srm_harness.spark_archive

# Every unit test but the driver's, in two pytest runs (make -j2 runs them side by side).
test-unit-others: test-unit-common test-unit-rest

test-unit-common: install
	@$(VENV)/bin/python -m pytest -m "not integration" $(COMMON_TESTS) \
		$(if $(DURATIONS),--durations=$(DURATIONS))

test-unit-rest: install
	@$(VENV)/bin/python -m pytest -m "not integration" --ignore-glob='$(DRIVER_TESTS)/*' \
		--ignore-glob='$(COMMON_TESTS)/*' $(if $(DURATIONS),--durations=$(DURATIONS))

test-driver-alone: $(UV) ## the driver's tests with only the driver's dependencies installed
	@echo "the driver's tests in $(DRIVER_VENV) (uv sync --package srm-driver: nothing else installed)..."
	@UV_PROJECT_ENVIRONMENT=$(DRIVER_VENV) $(UV) sync --quiet --frozen --package srm-driver --group test
	@$(DRIVER_VENV)/bin/python -m pytest -c services/driver/pyproject.toml --rootdir services/driver \
		--confcutdir services/driver -p no:cacheprovider --import-mode=importlib -q $(DRIVER_TESTS)

test-unit: install ## unit tests only (no Kafka, no Spark)
	@$(VENV)/bin/python -m pytest -m "not integration" $(if $(DURATIONS),--durations=$(DURATIONS))

test-integration: jars test-spark-archive ## integration tests only
	@$(VENV)/bin/python -m pytest -m integration $(if $(DURATIONS),--durations=$(DURATIONS))

bench: jars ## SRM vs MirrorMaker 2 vs Kafka's perf tools, 1 GiB (BENCH_ARGS="--size-mb 100")
	@PYTHONPATH=bench $(VENV)/bin/python -m srm_bench $(BENCH_ARGS)

bench-scale: jars ## thousands of topics cold-started: SRM vs MirrorMaker 2 (BENCH_ARGS="--topics 200", "--scale-points 1000,5000,10000,16000")
	@PYTHONPATH=bench $(VENV)/bin/python -m srm_bench --scale $(BENCH_ARGS)

bench-wan: jars ## the source a round trip away (Toxiproxy, built by go install if absent): RTT_MS=0,50,150 BENCH_ARGS="--size-mb 200"
	@PYTHONPATH=bench $(VENV)/bin/python -m srm_bench --wan $(RTT_MS) $(BENCH_ARGS)

images: jars ## build the container images (kafka, postgres and one per service); starts dockerd if needed
	@UV=$(UV) deploy/images/build.sh

test-containers: jars ## the compose stack end to end: 1 -> 3 -> 1 drivers under load, content compared (TEST_CONTAINERS_ARGS=)
	@UV=$(UV) deploy/images/test-containers.sh $(TEST_CONTAINERS_ARGS)

kerberos: install ## optional, as root: GSSAPI for the Python clients (librdkafka 2.15.1 + cyrus-sasl, python-gssapi, Debian's MIT Kerberos)
	@UV=$(UV) deploy/kerberos/build.sh

compose-up: ## docker-compose up -d: the stack of docker-compose.yml (after make images)
	@deploy/images/engine.sh
	@$(COMPOSE) up -d

compose-down: ## stop the compose stack and delete its volumes (Kafka data)
	@deploy/images/engine.sh
	@$(COMPOSE) down -v

lint: install ## ruff, and the import contracts (pyproject.toml [tool.importlinter])
	@$(VENV)/bin/ruff check .
	@$(VENV)/bin/ruff format --check .
	@set -o pipefail; $(VENV)/bin/lint-imports --no-cache --no-logo | sed -n "/^Contracts:/,\$$p"

format: install ## ruff format and fixes
	@$(VENV)/bin/ruff format .
	@$(VENV)/bin/ruff check --fix .

clean: down ## remove the environment, caches and run folders (jars too)
	rm -rf $(VENV) .cache .run .pytest_cache .ruff_cache .hypothesis
