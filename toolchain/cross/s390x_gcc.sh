#!/bin/bash
# gcc for --config=s390x (see gcc.sh).
exec "$(dirname "$0")/gcc.sh" s390x-linux-gnu s390x "$@"
