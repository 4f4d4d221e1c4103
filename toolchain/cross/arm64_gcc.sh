#!/bin/bash
# gcc for --config=arm64 (see gcc.sh).
exec "$(dirname "$0")/gcc.sh" aarch64-linux-gnu arm64 "$@"
