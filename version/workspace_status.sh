#!/usr/bin/env bash
# Bazel's --workspace_status_command (.bazelrc): this checkout's version, commit and date
# (version/describe.sh) as stable keys, STABLE_NDR_VERSION and so on, which //version:stamp writes
# into every program. Stable keys: a new commit relinks the programs, a rebuild of the same commit
# reuses them.
set -euo pipefail
"$(dirname "$0")/describe.sh" | sed 's/^\([a-z_]*\) /STABLE_NDR_\U\1\E /'
