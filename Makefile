# The two set-up commands of the README: `make quickstart` and `make test`.
# Everything lives in .venv at the repo root, installed from uv.lock.
SHELL := /bin/bash
PYTHON ?= python3
UV := $(shell command -v uv 2>/dev/null || echo "$(PYTHON) -m uv")
VENV := .venv
STAMP := $(VENV)/.bakeoff-synced

.PHONY: setup browser quickstart test test-fast lint bench docs linkcheck clean

# The CDK construct's Python package (bakeoff_cdk_construct, which bakeoff_cdk builds on) is on no index: jsii
# compiles cdk/construct and jsii-pacmak writes its Python source into cdk/construct/dist/python, the path
# uv.lock names for it (pyproject.toml [tool.uv.sources]), before the sync installs it.
CONSTRUCT := cdk/construct
CONSTRUCT_SOURCES := $(CONSTRUCT)/package.json $(wildcard $(CONSTRUCT)/src/*.ts)

$(STAMP): pyproject.toml uv.lock cdk/package-lock.json $(CONSTRUCT)/package-lock.json $(CONSTRUCT_SOURCES)
	@$(UV) --version >/dev/null 2>&1 || $(PYTHON) -m pip install --quiet uv
	cd cdk && npm ci --no-audit --no-fund --loglevel=error
	cd $(CONSTRUCT) && npm ci --no-audit --no-fund --loglevel=error && \
		npx --no-install jsii --silence-warnings=reserved-word && \
		npx --no-install jsii-pacmak --targets python --code-only --outdir dist
	$(UV) sync --locked --compile-bytecode --extra local --extra dev --reinstall-package bakeoff-cdk-construct
	@touch $(STAMP)

setup: $(STAMP)

quickstart: setup
	$(VENV)/bin/bakeoff run examples/quickstart.yaml --out runs/quickstart

# Debian's chromium for the MLflow UI browser test (the test skips, saying so, without it).
browser:
	@command -v chromium >/dev/null 2>&1 || { command -v apt-get >/dev/null 2>&1 && \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; } || \
		echo "chromium could not be installed: the MLflow UI browser test will be skipped"

# Two workers (the 2-core machines CI and developers have): most of a slow test is a job's start-up
# (imports, XLA compilation), which two tests share the cores through well.
test: setup browser
	$(VENV)/bin/python -m pytest -n 2 --dist worksteal --durations=15

# tests/unit and tests/engine: no real training job, and no torch, Hugging Face or MLflow in the test
# process (the conftest fails a fast test that loads one); tests/e2e has the rest.
test-fast: setup
	$(VENV)/bin/python -m pytest -n 2 --dist worksteal -m "not slow" -q

# mypy reads the packages by their installed names (bakeoff.pipelines, ...): the editable install's import
# hook is invisible to it, so a tree of links names the checkout's folders so (pyproject.toml's mypy_path),
# build/typecheck/bakeoff, made by the same function the docs build uses (pipelines/reference/mkdocs_hook.py).
lint: setup
	$(VENV)/bin/ruff check .
	@$(VENV)/bin/python -m bakeoff.pipelines.reference.mkdocs_hook
	$(VENV)/bin/mypy

bench: setup
	$(VENV)/bin/python benchmarks/cli_startup.py
	$(VENV)/bin/python benchmarks/telemetry_overhead.py
	$(VENV)/bin/python benchmarks/step_hook_overhead.py
	$(VENV)/bin/python benchmarks/quickstart_wall.py
	$(VENV)/bin/python benchmarks/synth_vs_sdk.py
	$(VENV)/bin/python benchmarks/compile_cache_warm.py
	$(VENV)/bin/python benchmarks/preflight_wall.py
	$(VENV)/bin/python benchmarks/verdict_oc.py
	$(VENV)/bin/python benchmarks/evaluation_scale.py

# The docs site into site/ (open site/index.html): offline, every warning an error (a broken link or
# #anchor, a page missing from the nav, a docstring mkdocstrings cannot read); the reference pages are
# written from the code as it builds (pipelines/reference).
docs: setup
	$(VENV)/bin/mkdocs build --strict --site-dir site

# The built site's links to other sites, each fetched once: needs the network, so not part of `make docs`
# or CI (links inside the site are checked by every `make docs`).
linkcheck: docs
	$(VENV)/bin/python -m bakeoff.pipelines.reference.external_links site

clean:
	rm -rf runs .pytest_cache site
