# Two commands do all set-up on a fresh machine: `make demo` and `make test`.
# Both create .venv (netsleuth), .venv-controller (os-ken 1.4.1, the
# controllers under test, kept apart from netsleuth's own dependencies) and
# .venv-faucet (the Faucet controller with the os-ken it needs), and install
# the Debian packages netsleuth uses as oracles.

PYTHON ?= python3
# Python keeps each module's compiled bytecode (__pycache__/, ignored by git) unless told not to, as
# some machines' environments do: every process (each test worker, each `netsleuth` command a test
# runs, each pool worker) would then compile netsleuth again from source, and pytest would rewrite
# every test module's asserts again in every worker -- about 0.2 s of CPU per command, 9 s per worker.
export PYTHONDONTWRITEBYTECODE :=
VENV := .venv
CTL := .venv-controller
FAUCET := .venv-faucet
DEBS := openvswitch-switch tshark chromium bird2 frr libfaketime ethtool iproute2
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: setup debs demo test test-fast test-cluster lint docs bench clean

setup: $(VENV)/.installed $(CTL)/.installed $(FAUCET)/.installed debs

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install -q --upgrade pip
	$(VENV)/bin/pip install -q -e '.[test,ray,lint,docs]'
	touch $@

# os-ken 1.4.1 is the last release that ships the sample apps
# (simple_switch, ...); it needs dnspython >= 2 on Python 3.11.
# coverage measures the controllers' lines for `minimize --localize`; setproctitle gives a controller
# forked by netsleuth's warm-start server (controllers/warm_osken.py) its own command line in `ps`
# (Faucet's environment gets it too: Faucet starts warm as well).
COVERAGE := 'coverage==7.6.10'
$(CTL)/.installed:
	$(PYTHON) -m venv $(CTL)
	$(CTL)/bin/pip install -q --upgrade pip
	$(CTL)/bin/pip install -q 'os-ken==1.4.1' 'dnspython>=2' $(COVERAGE) 'setproctitle>=1.3'
	touch $@

# Faucet 1.10.12 is pinned: the newest release, the one netsleuth's config
# generator and tests were checked against (its config schema and its stack
# LLDP change between releases). It pulls its own os-ken (3.x), which is why
# it gets a venv of its own rather than sharing .venv-controller's 1.4.1.
$(FAUCET)/.installed:
	$(PYTHON) -m venv $(FAUCET)
	$(FAUCET)/bin/pip install -q --upgrade pip
	$(FAUCET)/bin/pip install -q 'faucet==1.10.12' $(COVERAGE) 'setproctitle>=1.3'
	touch $@

debs:
	@missing=""; for p in $(DEBS); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  echo "installing Debian packages:$$missing"; \
	  $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq $$missing >/dev/null; \
	fi

# The main job end to end: fuzz the real simple_switch with host migrations until
# a persistent violation (exit 1 = found one), then delta-debug the trace down to
# its minimal causal sequence.
# Real timing varies run to run, so it tries a few seeds (most find one at the first).
DEMO_FUZZ := --controller osken:os_ken.app.simple_switch --topo linear,3 --steps 400 \
	--rate host_migration=0.03 --rate traffic=0.3

demo: setup
	rm -rf demo-out
	for seed in 1 2 3 4 5; do \
	  rm -rf demo-out/fuzz; $(VENV)/bin/netsleuth fuzz $(DEMO_FUZZ) --seed $$seed --out demo-out/fuzz; rc=$$?; \
	  [ $$rc -ne 0 ] && break; \
	done; [ $$rc -eq 1 ]
	$(VENV)/bin/netsleuth minimize demo-out/fuzz/trace.jsonl --out demo-out/minimize --jobs 2

# Every test, the real ones too (controllers, Open vSwitch, tshark, chromium).
# Six test processes (pytest-xdist) on a 2-core machine: most tests wait on
# real controllers, sockets, daemons and the network settling rather than
# compute, and the extra processes fill those waits (four left the CPUs idle
# part of the time: 8:26 against 7:40 of test time). The daemon tests hold to
# their byte-identical replays under that load: a delivery waits until the
# receiving daemon has read the message, and no daemon timer is short enough
# to fire because the machine is slow. TEST_WORKERS=0 runs them in this one process.
# Tests go to the processes one at a time (--dist loadgroup), so a file of a
# few long tests does not hold one process for minutes; a module that defines
# a module fixture (a trace recorded against a controller, an Open vSwitch
# sandbox) goes to one process whole, so it is built once (conftest.py).
# The 25 slowest are listed at the end, so a test that grew slow shows in
# every CI log. conftest.py fails a test that starts a process (controller,
# OVS, tshark, chromium, netsleuth) without the `real` mark.
TEST_WORKERS ?= 6
test: setup
	$(VENV)/bin/python -m pytest -q -n $(TEST_WORKERS) --dist loadgroup --durations=25 -m "not cluster"

# The runs on a multi-node Ray cluster that lose a node mid-way (a 40-run campaign and a
# minimization) or kill the campaign's driver: several minutes of a 2-core machine, so apart from `make test`.
test-cluster: setup
	$(VENV)/bin/python -m pytest -q -m cluster tests/test_ray_cluster.py tests/test_ray_nodes.py

# The pure tests only: no Debian package, no .venv-controller; about 75 s of
# CPU, so under a minute in two workers.
FAST_WORKERS ?= 4
test-fast: $(VENV)/.installed
	$(VENV)/bin/python -m pytest -q -n $(FAST_WORKERS) -m "not real and not slow" --durations=10

# ruff (pyflakes, pycodestyle, bugbear, pyupgrade, isort, mccabe) and mypy,
# as configured in pyproject.toml.
lint: $(VENV)/.installed
	$(VENV)/bin/ruff check netsleuth tests bench examples
	$(VENV)/bin/python -m pytest -q -p no:cacheprovider tests/test_size.py tests/test_layering.py tests/test_names.py
	$(VENV)/bin/mypy netsleuth

# The documentation site from docs/ (Sphinx, furo, the CLI reference generated from the parser);
# a warning is an error.
docs: $(VENV)/.installed
	$(VENV)/bin/python -m sphinx -W --keep-going -q -b html docs docs/_build/html
	@echo "open docs/_build/html/index.html"

bench: setup
	$(VENV)/bin/python bench/bootstrap.py

clean:
	rm -rf $(VENV) $(CTL) $(FAUCET) demo-out .pytest_cache docs/_build
