#!/usr/bin/env bash
# Installs the Debian packages only the tests use (the README's test command runs this after setup.sh);
# a quick no-op when they are present.
#   docker-registry  a real OCI registry (CNCF distribution) the image tests run on loopback
#   busybox-static   the one static binary the test images are built from (with umoci)
#   dpkg-dev         dpkg-scanpackages, to index the apt repository the recipe-image tests serve on loopback
#   prometheus       promtool, which checks GET /metrics (the only Debian package with it; its daemon is never started)
#   tmux             drives `shell` as an operator would (send-keys / capture-pane), in test/cli/shell-tmux.test.ts
#   systemd          systemd-analyze verify, on the unit `session-sandbox install-service` writes (test/cli/serve.test.ts)
#   chromium         the real browser the dashboard tests drive with playwright-core (test/ui/dashboard.test.ts)
set -euo pipefail
source "$(dirname "$0")/lib/apt-install.sh"
ensure_debian_packages "test deps" docker-registry busybox-static dpkg-dev prometheus tmux chromium systemd
