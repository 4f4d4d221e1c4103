#!/usr/bin/env bash
# Measures every figure of docs/figures-results.md and the README's headline in one run, and stamps
# them with the commit, the date and the machine: the registrar beside each Go registrar given (its
# working set as a cluster sees it, start-up, resident memory by kind, idle wake-ups, GetInfo
# throughput, binary size), beside the newest release's registrar, then kubeletclient's
# registration latency and 200 plugins at once. About 5 minutes per registrar compared with; as
# root (each registrar gets a memory cgroup of its own).
#
#   sudo bash test/benchmarks/figures.sh --release=PATH --go-registrar=v2.17.0=PATH [--go-registrar=v2.7.0=PATH]
#   sudo bash test/benchmarks/figures.sh --release=PATH --source-dir=DIR      builds v2.17.0 and v2.7.0
#                                    of the Go registrar from DIR/node-driver-registrar (a git clone; Go needed)
#   --release=PATH    the newest release's registrar (RELEASES): its release directory, its
#                     csi-node-driver-registrar-VERSION-linux-ARCH.tar.gz, or the binary
#                     test/benchmarks/release-registrar.sh builds. The regression check: figures.sh
#                     fails (exit 3, after printing everything) when this build's working set (steady
#                     between calls, right after a call, idle) or start-up (exec to the socket, to
#                     GetInfo answered) is more than 10% above the release's, measured in the same run
#   ... --update      also writes the results into docs/figures-results.md and the README's headline
#                     (refused when the tree differs from its commit outside docs/ and the Markdown files,
#                     so that the stamped commit is what was measured)
#   ... --quick       shorter runs (5 start-ups, 10 s steady and idle) to try the script; never
#                     with --update
#
# The results go to stdout and to --out=FILE (default /tmp/ndr-figures.md). Exit status: 0, 1 a
# measurement failed, 2 bad usage, 3 a regression against the release (nothing is --update'd).
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$(pwd)

go_registrars=() source_dir= release= update=false quick=false out=/tmp/ndr-figures.md
for arg in "$@"; do
  case "$arg" in
    --go-registrar=*=*) go_registrars+=("${arg#--go-registrar=}") ;;
    --source-dir=*) source_dir=${arg#--source-dir=} ;;
    --release=*) release=${arg#--release=} ;;
    --update) update=true ;;
    --quick) quick=true ;;
    --out=*) out=${arg#--out=} ;;
    -h|--help) sed -n '2,27p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
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

# The newest release's registrar, from its release directory, its tarball or the binary itself,
# and held to being that release: a regression check against anything else would say nothing.
newest=$(python3 version/releases.py newest)
if [ -z "$release" ]; then
  echo "figures.sh: give the newest release's ($newest) registrar to compare with: --release=DIR (its" >&2
  echo "release directory) or --release=PATH (its binary: sudo bash test/benchmarks/release-registrar.sh OUT)" >&2
  exit 2
fi
scratch=$(mktemp -d /tmp/ndr-figures-release-XXXXXX)
trap 'rm -rf --one-file-system "$scratch"' EXIT
# A signal ends the script through its EXIT trap, which removes the scratch directory (bash
# skips EXIT traps when a signal it has no trap for kills it).
trap 'exit 129' HUP
trap 'exit 130' INT
trap 'exit 143' TERM
# The archive's platform as images/assemble.py names it (linux/arm/v7 gives linux-armv7).
case $(uname -m) in x86_64) arch=amd64 ;; aarch64) arch=arm64 ;; armv7l) arch=armv7 ;; *) arch=$(uname -m) ;; esac
archive=
if [ -d "$release" ]; then
  archive=$release/csi-node-driver-registrar-$newest-linux-$arch.tar.gz
  [ -f "$archive" ] || { echo "figures.sh: $release has no $(basename "$archive"); is it release $newest's directory?" >&2; exit 2; }
elif [[ $release == *.tar.gz ]]; then
  archive=$release
fi
if [ -n "$archive" ]; then
  tar -xzf "$archive" -C "$scratch" --wildcards '*/csi-node-driver-registrar' ||
    { echo "figures.sh: $archive holds no csi-node-driver-registrar" >&2; exit 2; }
  release_binary=$(find "$scratch" -type f -name csi-node-driver-registrar | head -1)
else
  release_binary=$release
fi
[ -x "$release_binary" ] || { echo "figures.sh: $release_binary (--release) is not an executable" >&2; exit 2; }
release_version=$("$release_binary" --version 2>/dev/null | head -1 | awk '$1 == "csi-node-driver-registrar" {print $2}')
if [ "$release_version" != "$newest" ]; then
  echo "figures.sh: $release_binary says it is version '${release_version:-?}'; compare with the newest" >&2
  echo "release, $newest (RELEASES)" >&2
  exit 2
fi

commit=$(git rev-parse HEAD)
if $update && [ -n "$(git status --porcelain -- . ':!docs' ':!*.md')" ]; then
  echo "figures.sh: the tree differs from $commit outside docs/ and the Markdown files; commit first, so that the" >&2
  echo "stamped commit is the one measured:" >&2
  git status --short -- . ':!docs' ':!*.md' >&2
  exit 2
fi

source test/install-deps.sh
ndr_install_host_deps python3
trap 'ndr_bazel shutdown >/dev/null 2>&1 || true; rm -rf --one-file-system "$scratch"' EXIT
# shellcheck disable=SC2046
ndr_bazel build $(ndr_bazel_flags) -c opt //test/benchmarks:registrar_benchmark \
  //test/benchmarks:kubeletclient_benchmark >&2
bin=$(ndr_bazel info -c opt bazel-bin 2>/dev/null)
# The benchmarks link Debian 13's libraries: on another host they run in the build root, which sees
# the host's /tmp; so every registrar compared with is measured from a copy in the scratch directory.
bench() {
  if ndr_buildroot_needed; then ndr_buildroot_run "$@"; else "$@"; fi
}
cp "$release_binary" "$scratch/release-$newest"
release_binary=$scratch/release-$newest
for i in "${!go_registrars[@]}"; do
  tag=${go_registrars[$i]%%=*}
  cp "${go_registrars[$i]#*=}" "$scratch/go-$tag"
  go_registrars[$i]=$tag=$scratch/go-$tag
done

cgroup=v1
[ -f /sys/fs/cgroup/cgroup.controllers ] && cgroup=v2
machine="$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores, \
$(free -g | awk '/Mem:/ {print $2}') GiB, Linux $(uname -r), cgroup $cgroup, Debian $(cat /etc/debian_version)\
$(ndr_buildroot_needed && echo " (built and run in the Debian 13 build root)")"
quick_args=()
$quick && quick_args=(--runs=5 --steady_seconds=10 --idle_seconds=10 --load_seconds=2)

results=$(mktemp /tmp/ndr-figures-XXXXXX)
{
  echo "Measured $(date -u +%Y-%m-%d) at commit \`${commit:0:7}\` by \`sudo bash test/benchmarks/figures.sh$($quick && echo ' --quick')\`"
  echo "on $machine."
  echo
  echo "### Ours against the release $newest"
  echo
  echo "\`registrar_benchmark --compare_with=<release $newest>\`; \"other\" is the registrar of release $newest,"
  echo "the regression check's reference (ours more than 10% above it fails figures.sh)."
  echo
  bench "$bin/test/benchmarks/registrar_benchmark" --compare_with="$release_binary" "${quick_args[@]}"
  for pair in "${go_registrars[@]}"; do
    tag=${pair%%=*}
    echo
    echo "### Ours against the Go registrar $tag"
    echo
    echo "\`registrar_benchmark --compare_with=<Go $tag>\`; \"other\" is the Go registrar $tag."
    echo
    bench "$bin/test/benchmarks/registrar_benchmark" --compare_with="${pair#*=}" "${quick_args[@]}"
  done
  echo
  echo "### kubeletclient"
  echo
  bench "$bin/test/benchmarks/kubeletclient_benchmark"
} | tee "$results"

# The regression check: this build against the newest release, measured in the same run.
source test/benchmarks/regression_check.sh
echo
verdict=0
ndr_figures_regression_check "$results" "$newest" >"$scratch/verdict" || verdict=$?
tee -a "$results" <"$scratch/verdict"
ratio() { ndr_figures_ratio "$results" "$@"; }

# The headline: the working set, steady state between calls and idle, against the first Go
# registrar given (the release this project replaces, v2.17.0, when given first).
first=${go_registrars[0]%%=*}
steady=$(ratio "Ours against the Go registrar $first" "steady, between calls: mean of" 5)
idle=$(ratio "Ours against the Go registrar $first" "idle: working set" 5)
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

if [ "$verdict" -ne 0 ]; then
  echo "figures.sh: this build regressed against release $newest (above); nothing was updated" >&2
  exit 3
fi
if $update; then
  [ -n "$headline" ] || exit 1
  python3 - "$out" "$headline" "$root" <<'EOF'
import re, sys
results, headline, root = sys.argv[1:]
text = open(results, encoding="utf-8").read().rstrip("\n") + "\n"
begin, end = "<!-- figures.sh: begin -->", "<!-- figures.sh: end -->"
for path, new in ((root + "/docs/figures-results.md", begin + "\n" + text + end),
                  (root + "/README.md", "<!-- figures.sh headline -->" + headline +
                   "<!-- /figures.sh headline -->")):
    page = open(path, encoding="utf-8").read()
    pattern = (re.escape(begin) + ".*?" + re.escape(end) if path.endswith("figures-results.md") else
               re.escape("<!-- figures.sh headline -->") + ".*?" +
               re.escape("<!-- /figures.sh headline -->"))
    page, count = re.subn(pattern, lambda _: new, page, flags=re.S)
    if count != 1:
        sys.exit(f"figures.sh: {path} has no single place for the figures ({pattern})")
    open(path, "w", encoding="utf-8").write(page)
    print(f"figures.sh: wrote {path}", file=sys.stderr)
EOF
fi
