#!/usr/bin/env bash
# Measures every figure of docs/figures.md and the README's headline in one run, and stamps them
# with the commit, the date and the machine: the registrar beside each Go registrar given (its
# working set as a cluster sees it, start-up, resident memory by kind, idle wake-ups, GetInfo
# throughput, binary size), then kubeletclient's registration latency and 200 plugins at once.
# About 5 minutes per Go registrar; as root (each registrar gets a memory cgroup of its own).
#
#   sudo bash test/benchmarks/figures.sh --go-registrar=v2.17.0=PATH [--go-registrar=v2.7.0=PATH]
#   sudo bash test/benchmarks/figures.sh --source-dir=DIR      builds v2.17.0 and v2.7.0 of the Go
#                                    registrar from DIR/node-driver-registrar (a git clone; Go needed)
#   ... --update      also writes the results into docs/figures.md and the README's headline
#                     (refused when the tree differs from its commit outside docs/ and the Markdown files,
#                     so that the stamped commit is what was measured)
#   ... --quick       shorter runs (5 start-ups, 10 s steady and idle) to try the script; never
#                     with --update
#
# The results go to stdout and to --out=FILE (default /tmp/ndr-figures.md).
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$(pwd)

go_registrars=() source_dir= update=false quick=false out=/tmp/ndr-figures.md
for arg in "$@"; do
  case "$arg" in
    --go-registrar=*=*) go_registrars+=("${arg#--go-registrar=}") ;;
    --source-dir=*) source_dir=${arg#--source-dir=} ;;
    --update) update=true ;;
    --quick) quick=true ;;
    --out=*) out=${arg#--out=} ;;
    -h|--help) sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "figures.sh: unknown argument $arg (see --help)" >&2; exit 2 ;;
  esac
done
if $update && $quick; then
  echo "figures.sh: --quick figures are not the documented ones; run without --quick to --update" >&2
  exit 2
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "figures.sh: run as root: each registrar's working set is read from a memory cgroup of its own" >&2
  exit 2
fi
if [ -n "$source_dir" ]; then
  for tag in v2.17.0 v2.7.0; do
    binary=/var/cache/ndr-figures/node-driver-registrar-$tag
    bash test/e2e/real-node/build-from-checkout.sh "$source_dir/node-driver-registrar" "$tag" \
      cmd/csi-node-driver-registrar "$binary"
    go_registrars+=("$tag=$binary")
  done
fi
if [ ${#go_registrars[@]} -eq 0 ]; then
  echo "figures.sh: give the Go registrar to compare with: --go-registrar=v2.17.0=PATH or --source-dir=DIR" >&2
  exit 2
fi
for pair in "${go_registrars[@]}"; do
  [ -x "${pair#*=}" ] || { echo "figures.sh: ${pair#*=} (${pair%%=*}) is not an executable" >&2; exit 2; }
done

commit=$(git rev-parse HEAD)
if $update && [ -n "$(git status --porcelain -- . ':!docs' ':!*.md')" ]; then
  echo "figures.sh: the tree differs from $commit outside docs/ and the Markdown files; commit first, so that the" >&2
  echo "stamped commit is the one measured:" >&2
  git status --short -- . ':!docs' ':!*.md' >&2
  exit 2
fi

source test/install-deps.sh
ndr_install_host_deps python3
trap 'ndr_bazel shutdown >/dev/null 2>&1 || true' EXIT
# shellcheck disable=SC2046
ndr_bazel build $(ndr_bazel_flags) -c opt //test/benchmarks:registrar_benchmark \
  //test/benchmarks:kubeletclient_benchmark >&2
bin=$(ndr_bazel info -c opt bazel-bin 2>/dev/null)

cgroup=v1
[ -f /sys/fs/cgroup/cgroup.controllers ] && cgroup=v2
machine="$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores, \
$(free -g | awk '/Mem:/ {print $2}') GiB, Linux $(uname -r), cgroup $cgroup, Debian $(cat /etc/debian_version)"
quick_args=()
$quick && quick_args=(--runs=5 --steady_seconds=10 --idle_seconds=10 --load_seconds=2)

results=$(mktemp /tmp/ndr-figures-XXXXXX)
{
  echo "Measured $(date -u +%Y-%m-%d) at commit \`${commit:0:7}\` by \`sudo bash test/benchmarks/figures.sh$($quick && echo ' --quick')\`"
  echo "on $machine."
  for pair in "${go_registrars[@]}"; do
    tag=${pair%%=*}
    echo
    echo "### Ours against the Go registrar $tag"
    echo
    echo "\`registrar_benchmark --compare_with=<Go $tag>\`; \"other\" is the Go registrar $tag."
    echo
    "$bin/test/benchmarks/registrar_benchmark" --compare_with="${pair#*=}" "${quick_args[@]}"
  done
  echo
  echo "### kubeletclient"
  echo
  "$bin/test/benchmarks/kubeletclient_benchmark"
} | tee "$results"

# The headline: the working set, steady state between calls and idle, against the first Go
# registrar given (the release this project replaces, v2.17.0, when given first).
first=${go_registrars[0]%%=*}
ratio() {  # the ours/other column of the first table row starting with $1 in the first Go run
  awk -v row="| $1" -F'|' '
    /^### Ours against/ { run++ }
    run == 1 && index($0, row) == 1 { gsub(/ /, "", $5); print $5; exit }' "$results"
}
steady=$(ratio "steady, between calls: mean of")
idle=$(ratio "idle: working set")
if [ -z "$steady" ] || [ -z "$idle" ]; then
  echo "figures.sh: no working set was measured (see the table above); no headline" >&2
  headline=
else
  headline="using ${steady} times the Go registrar $first's working set in steady state and ${idle} times idle"
  echo
  echo "Headline: $headline"
fi
cp "$results" "$out"
rm -f "$results"
echo "figures.sh: results in $out" >&2

if $update; then
  [ -n "$headline" ] || exit 1
  python3 - "$out" "$headline" "$root" <<'EOF'
import re, sys
results, headline, root = sys.argv[1:]
text = open(results, encoding="utf-8").read().rstrip("\n") + "\n"
begin, end = "<!-- figures.sh: begin -->", "<!-- figures.sh: end -->"
for path, new in ((root + "/docs/figures.md", begin + "\n" + text + end),
                  (root + "/README.md", "<!-- figures.sh headline -->" + headline +
                   "<!-- /figures.sh headline -->")):
    page = open(path, encoding="utf-8").read()
    pattern = (re.escape(begin) + ".*?" + re.escape(end) if path.endswith("figures.md") else
               re.escape("<!-- figures.sh headline -->") + ".*?" +
               re.escape("<!-- /figures.sh headline -->"))
    page, count = re.subn(pattern, lambda _: new, page, flags=re.S)
    if count != 1:
        sys.exit(f"figures.sh: {path} has no single place for the figures ({pattern})")
    open(path, "w", encoding="utf-8").write(page)
    print(f"figures.sh: wrote {path}", file=sys.stderr)
EOF
fi
