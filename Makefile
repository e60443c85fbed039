# The two README commands: `make demo` and `make test`. Each creates .venv on a fresh machine.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: demo test test-slow js-deps bench docs wheel wheel-check clean

$(STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[all]"
	@touch $(STAMP)

demo: $(STAMP)
	$(PY) examples/demo.py

# Chromium (Debian) renders the meshcat recording in tests/test_franka_ball_viz.py; installed
# here when missing (root or passwordless sudo), otherwise that test skips and says why.
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo "sudo -n")
CHROMIUM_INSTALL = command -v chromium >/dev/null 2>&1 || \
	{ { $(SUDO) apt-get install -y chromium || { $(SUDO) apt-get update -qq && \
	    $(SUDO) apt-get install -y chromium; }; } >/dev/null 2>&1 \
	  || echo "note: chromium could not be installed; the meshcat screenshot test will skip"; }

# roslibjs (npm `roslib`, pinned by package-lock.json) for the rosbridge conformance test
# (tests/test_rosbridge_conformance.py), installed into tools/rosbridge_conformance/node_modules
# (ignored by git). Without Node/npm, or offline, that test skips and says why.
JS_DIR   := tools/rosbridge_conformance
JS_STAMP := $(JS_DIR)/node_modules/.c3mpc-installed
$(JS_STAMP): $(JS_DIR)/package.json $(JS_DIR)/package-lock.json
	@if command -v npm >/dev/null 2>&1; then \
	  npm ci --prefix $(JS_DIR) --no-audit --no-fund --silent && touch $@ \
	  || echo "note: npm ci failed; the roslibjs conformance test will skip"; \
	else echo "note: npm not found; the roslibjs conformance test will skip"; fi

js-deps: $(JS_STAMP)

test: $(STAMP) $(JS_STAMP)
	@$(CHROMIUM_INSTALL)
	$(PY) -m pytest -q

test-slow: $(STAMP) $(JS_STAMP)
	$(PY) -m pip install --quiet -e ".[all,libfranka]"
	@$(CHROMIUM_INSTALL)
	$(PY) -m pytest -q -m slow

# Every benchmark (long: the MIQP baselines alone take tens of minutes); peers (Drake, MuJoCo)
# are installed for the simulator comparison. Each script writes benchmarks/results/*.json
# and its own section of docs/BENCHMARKS.md; run one alone with `.venv/bin/python benchmarks/...`.
BENCHES := lcp projection_miqp c3_tables lcs_factory sim contact_solvers estimators franka_ball
bench: $(STAMP)
	$(PY) -m pip install --quiet -e ".[all,peers]"
	@set -e; for b in $(BENCHES); do echo "== benchmarks/bench_$$b.py"; \
	  $(PY) benchmarks/bench_$$b.py; done

# The documentation site: docs/*.md (the math and the guides) and the API reference from the
# docstrings, with every warning an error (a broken internal link or anchor fails the build).
docs: $(STAMP)
	$(PY) -m sphinx -b html -W --keep-going -q docs docs/_build/html
	@echo "docs: docs/_build/html/index.html"

# The wheel and sdist users install (`python -m build`, in an isolated build environment).
wheel: $(STAMP)
	rm -rf dist
	$(PY) -m build --outdir dist .

# The wheel proven, not assumed: installed into an empty venv (dependencies from the package
# index) and smoke-tested from outside the source tree, so nothing is imported from the checkout.
WHEEL_VENV := $(CURDIR)/build/wheel-venv
wheel-check: wheel
	rm -rf $(WHEEL_VENV)
	$(PYTHON) -m venv $(WHEEL_VENV)
	$(WHEEL_VENV)/bin/python -m pip install --quiet dist/c3mpc-*.whl
	cd "$$(mktemp -d)" && $(WHEEL_VENV)/bin/python $(CURDIR)/tools/wheel_smoke.py $(WHEEL_VENV)/bin/c3mpc

clean:
	rm -rf $(VENV) build dist docs/_build *.egg-info .pytest_cache $(JS_DIR)/node_modules
