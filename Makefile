# jambridge: build and install.
#
#   make                      the release binary, .build/release/jambridge (as scripts/run.sh builds it)
#   sudo make install         it, the man pages, the example routes, the systemd unit, shell completions
#                             and a default /etc/jambridge/routes.yaml (an existing one is kept)
#   sudo make uninstall       removes what install put in place (its list: PREFIX/share/jambridge/installed-files)
#
# PREFIX (default /usr/local), DESTDIR (a staging root, for packages and tests) and SYSCONFDIR (default /etc)
# are the usual; uninstall takes the same ones as install. BINARY=PATH installs an already-built jambridge
# instead of building one. The work is done by scripts/install.sh.

PREFIX ?= /usr/local
DESTDIR ?=
SYSCONFDIR ?= /etc
BUILT := .build/release/jambridge
BINARY ?= $(BUILT)

.PHONY: all install uninstall
all: $(BUILT)

# Rebuilt when a source is newer, so `make && sudo make install` builds as the user only.
$(BUILT): Package.swift $(shell find Sources -type f)
	swift build -c release --static-swift-stdlib --product jambridge
	touch $@

install: $(if $(filter $(BUILT),$(BINARY)),$(BUILT))
	PREFIX='$(PREFIX)' DESTDIR='$(DESTDIR)' SYSCONFDIR='$(SYSCONFDIR)' scripts/install.sh install '$(BINARY)'

uninstall:
	PREFIX='$(PREFIX)' DESTDIR='$(DESTDIR)' SYSCONFDIR='$(SYSCONFDIR)' scripts/install.sh uninstall
