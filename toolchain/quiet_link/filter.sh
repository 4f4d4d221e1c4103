#!/bin/bash
# Runs gcc's linker driver, collect2 ($1, with the rest as its arguments; quiet.specs makes gcc
# run this script in its place) and passes on everything it prints but the
# warnings glibc attaches to its NSS functions (getaddrinfo, getservbyname, getpwuid_r, ...) when a
# program is linked statically: "Using 'getaddrinfo' in statically linked applications requires
# at runtime the shared libraries from the glibc version used for linking". The registrar and the
# sample driver never resolve names (unix sockets and numeric addresses only), so these say
# nothing; any other warning or error still shows. GNU ld prints the function on a line of its
# own before the warning ("...: in function `f':"); that line goes with it. The linker's exit
# status is kept.
set -o pipefail
real=$1
shift
# A bare name is looked for where gcc looks for it (compiler_path.sh).
source "$(dirname "$0")/compiler_path.sh"
if [[ "$real" != */* ]]; then
  if ! found=$(find_tool "$real"); then
    echo "filter.sh: no $real in gcc's COMPILER_PATH (${COMPILER_PATH:-unset})" >&2
    exit 1
  fi
  real=$found
fi
{ "$real" "$@" 2>&1 1>&3 3>&- | awk '
  function flush() { if (held != "") { print held > "/dev/stderr"; held = "" } }
  /warning: Using .* in statically linked applications requires at runtime the shared libraries from the glibc version used for linking$/ {
    held = ""
    next
  }
  /: in function `.*.:$/ { flush(); held = $0; next }
  { flush(); print > "/dev/stderr" }
  END { flush() }
'; } 3>&1
