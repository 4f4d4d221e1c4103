#!/bin/bash
# gcc for --config=armv7 (see gcc.sh).
exec "$(dirname "$0")/gcc.sh" arm-linux-gnueabihf armhf "$@"
