# Two commands do all set-up on a fresh machine: `make demo` and `make test`.
# Both create .venv (netsleuth) and .venv-controller (os-ken 1.4.1, the
# controllers under test, kept apart from netsleuth's own dependencies) and
# install the Debian packages netsleuth uses as oracles.

PYTHON ?= python3
VENV := .venv
CTL := .venv-controller
DEBS := openvswitch-switch tshark
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: setup debs demo test bench clean

setup: $(VENV)/.installed $(CTL)/.installed debs

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install -q --upgrade pip
	$(VENV)/bin/pip install -q -e '.[test,ray]'
	touch $@

# os-ken 1.4.1 is the last release that ships the sample apps
# (simple_switch, ...); it needs dnspython >= 2 on Python 3.11.
$(CTL)/.installed:
	$(PYTHON) -m venv $(CTL)
	$(CTL)/bin/pip install -q --upgrade pip
	$(CTL)/bin/pip install -q 'os-ken==1.4.1' 'dnspython>=2'
	touch $@

debs:
	@missing=""; for p in $(DEBS); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  echo "installing Debian packages:$$missing"; \
	  $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq $$missing >/dev/null; \
	fi

demo: setup
	$(VENV)/bin/netsleuth run --controller osken:os_ken.app.simple_switch --topo linear,3 --pingall --out demo-out

test: setup
	$(VENV)/bin/python -m pytest -q

bench: setup
	$(VENV)/bin/python bench/bootstrap.py

clean:
	rm -rf $(VENV) $(CTL) demo-out .pytest_cache
