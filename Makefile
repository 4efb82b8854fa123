# pykorn: every target sets up what it needs (a virtualenv in .venv, the package installed).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# The wheel `make dist` builds: what `make wheel-check` installs alone and the Containerfile installs.
VERSION := $(shell sed -n 's/^version = "\(.*\)"/\1/p' pyproject.toml)
WHEEL := dist/pykorn_scheduler-$(VERSION)-py3-none-any.whl

.PHONY: run test test-nightly bench proto proto-check lint venv clean dist wheel-check image

venv: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev,plot]'
	touch $(STAMP)

## run: the demo scenario: starts a core, runs examples/demo.yaml through the fake RM, stops the core,
## prints the summary and writes out/demo-report.json, the plot out/demo.png and the history database
## out/history.db (read it with `pykorn history --db sqlite:///out/history.db apps`).
run: $(STAMP)
	mkdir -p out && rm -f out/history.db*
	$(BIN)/pykorn fake run examples/demo.yaml --report out/demo-report.json --plot out/demo.png \
		--history sqlite:///out/history.db

## test: the whole suite (unit, property, integration over real gRPC on loopback); Debian's prometheus
## and postgresql packages first when missing (the dashboard test runs a real Prometheus, the history
## tests a real PostgreSQL).
test: $(STAMP)
	tools/install_debian_package.sh prometheus 'command -v prometheus && command -v promtool' 'the dashboard test'
	tools/install_debian_package.sh postgresql 'command -v initdb || ls /usr/lib/postgresql/*/bin/initdb' \
		'the history tests'
	$(BIN)/python -m pytest -q

## test-nightly: the long profiles of the property tests that drive the whole Kubernetes shim with
## malformed objects of every kind (PYKORN_HOSTILE_EXAMPLES) and a real core's gRPC registration and
## configuration update with generated and mutated queues.yaml texts (PYKORN_CONFIG_FUZZ_EXAMPLES);
## `make test` runs a few of each.
test-nightly: $(STAMP)
	PYKORN_HOSTILE_EXAMPLES=500 $(BIN)/python -m pytest -q tests/integration/test_k8s_hostile_objects.py
	PYKORN_CONFIG_FUZZ_EXAMPLES=2000 $(BIN)/python -m pytest -q -p no:timeout tests/integration/test_config_fuzz_grpc.py

## bench: throughput (in-process and over gRPC, 500-5,000 nodes), the scale run, the latency run,
## gang scheduling (1,000 gangs of 10 on 5,000 nodes: placeholders, then replacement), and another RM's
## latency beside 50,000 asks that cannot run (bench_unfit), and the Kubernetes shim end to end (bench_k8s:
## bursts, latency, volumes, and gangs of 8 through the Workload API next to YuniKorn task groups), and
## the history database's cost and scale (bench_history), and what one more application costs the core
## against the steps YuniKorn's model requires for it (bench_app_floor).
## Figures go in benchmarks/RESULTS.md with the machine, the date and this command.
bench: $(STAMP)
	$(BIN)/python -m benchmarks.bench_scheduling
	$(BIN)/python -m benchmarks.bench_scale
	$(BIN)/python -m benchmarks.bench_latency
	$(BIN)/python -m benchmarks.bench_unfit
	$(BIN)/python -m benchmarks.bench_gang
	$(BIN)/python -m benchmarks.bench_constraints
	$(BIN)/python -m benchmarks.bench_k8s
	$(BIN)/python -m benchmarks.bench_history
	$(BIN)/python -m benchmarks.bench_app_floor

## dist: the wheel, $(WHEEL): what users install and what the Containerfile copies.
dist: $(STAMP)
	rm -rf dist build
	$(BIN)/python -m pip wheel --quiet --no-deps --wheel-dir dist .
	rm -rf build
	test -f $(WHEEL)

## wheel-check: that wheel installed alone in a fresh virtualenv; its core started and its health read
## (tools/check_wheel.py). CI runs it.
wheel-check: dist
	$(BIN)/python tools/check_wheel.py $(WHEEL)

## image: the container image of that wheel (Containerfile), with podman or else docker; IMAGE=name:tag.
## The engine is looked for first, so that a machine without one says so before building anything.
IMAGE ?= pykorn:$(VERSION)
image:
	@engine=$$(command -v podman || command -v docker) || { \
		echo "make image: neither podman nor docker is installed here; build the wheel with 'make dist'" \
			"and the image where an engine is: podman build -t $(IMAGE) -f Containerfile ." >&2; exit 2; }; \
	$(MAKE) --no-print-directory dist && $$engine build -t $(IMAGE) -f Containerfile .

## proto: regenerate the committed stubs from proto/si/v1/si.proto.
proto: $(STAMP)
	$(BIN)/python -m grpc_tools.protoc -Iproto --python_out=proto --pyi_out=proto \
		--grpc_python_out=proto --plugin=protoc-gen-mypy_grpc=$(BIN)/protoc-gen-mypy_grpc \
		--mypy_grpc_out=proto proto/si/v1/si.proto

## proto-check: fail when the committed stubs differ from what `make proto` generates.
proto-check: $(STAMP)
	$(BIN)/python tools/check_proto_drift.py

## lint: ruff (rules and format) and mypy (strict for the whole tree, the tests a little relaxed; see pyproject.toml).
lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .hypothesis dist build
