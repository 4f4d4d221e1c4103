#!/bin/bash
# gcc for --config=ppc64le (see gcc.sh).
exec "$(dirname "$0")/gcc.sh" powerpc64le-linux-gnu ppc64el "$@"
