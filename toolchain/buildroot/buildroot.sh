# The Debian 13 (trixie) build root: every build, test and release of this project runs on Debian
# 13's packages. On a Debian 13 host that is the host itself. On any other Debian host (Debian 12,
# say) it is a directory made from Debian 13's packages with mmdebstrap, from the same Debian
# package source the host's apt uses, and the commands run inside it in a mount namespace of their
# own: nothing is mounted on the host, and nothing but Debian packages is downloaded.
#
# The root is made from toolchain/buildroot/packages and is keyed by the packages it names and the
# code here that makes it: /var/cache/ndr-buildroot/KEY/root. A changed package set makes a new
# root; two versions' builds never share one, nor their Bazel caches: the output bases are in
# /var/cache/ndr-buildroot/KEY/home (the root's $HOME, mounted inside at the same path, so the
# bazel-* links in a checkout resolve alike inside and out), the disk cache in the root's own
# /root/.cache (Bazel takes ~ from the password file).
#
# Sourced by the scripts that build; also a command:
#   bash toolchain/buildroot/buildroot.sh make        make the root unless it is there; print its path
#   bash toolchain/buildroot/buildroot.sh run CMD...  run CMD inside it, in this directory
#   bash toolchain/buildroot/buildroot.sh path        print the root's path (made or not)
#
# NDR_DEBIAN_MIRROR and NDR_DEBIAN_SECURITY_MIRROR name the package source when the host's apt
# has none for Debian (default: the host's own, else deb.debian.org).

NDR_BUILDROOT_SUITE=trixie
NDR_BUILDROOT_VERSION_ID=13
ndr_buildroot_dir_=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

# True when the commands must enter the build root: not already inside one, and the host is not
# Debian 13.
ndr_buildroot_needed() {
  [ -z "${NDR_BUILDROOT:-}" ] || return 1
  local id version
  id=$(. /etc/os-release 2>/dev/null && echo "${ID:-}")
  version=$(. /etc/os-release 2>/dev/null && echo "${VERSION_ID:-}")
  ! { [ "$id" = debian ] && [ "$version" = "$NDR_BUILDROOT_VERSION_ID" ]; }
}

# The key: what the root is made from, the package set and the code that makes it (the names as
# read, and the functions as bash prints them, so that a comment changes nothing).
ndr_buildroot_key() {
  { ndr_buildroot_packages; declare -f ndr_buildroot_make ndr_buildroot_mirror_; } |
    sha256sum | cut -c1-16
}

ndr_buildroot_base() { echo "/var/cache/ndr-buildroot/$(ndr_buildroot_key)"; }

# The package names of toolchain/buildroot/packages, one a line.
ndr_buildroot_packages() {
  sed 's/#.*//' "$ndr_buildroot_dir_/packages" | tr -s ' \t' '\n\n' | sed '/^$/d'
}

# The host apt's Debian package source (URI) for the main archive or (with "security") for
# security updates, else deb.debian.org's.
ndr_buildroot_mirror_() {
  local want=$1 uri
  uri=$(apt-get indextargets --format '$(REPO_URI) $(SUITE)' 2>/dev/null | sort -u |
    awk -v want="$want" '($2 ~ /-security$/) == (want == "security") && $1 ~ /debian/ {print $1; exit}')
  if [ -n "$uri" ]; then
    echo "${uri%/}"
  elif [ "$want" = security ]; then
    echo http://deb.debian.org/debian-security
  else
    echo http://deb.debian.org/debian
  fi
}

# Makes the root unless it is there and complete; prints its path. Needs root (mmdebstrap, and
# apt-get when mmdebstrap itself is missing).
ndr_buildroot_make() {
  local base root
  base=$(ndr_buildroot_base)
  root=$base/root
  if [ -f "$root/etc/ndr-buildroot" ]; then
    echo "$root"
    return 0
  fi
  if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null 2>&1; then
      sudo bash "$ndr_buildroot_dir_/buildroot.sh" make
      return
    fi
    echo "error: the Debian $NDR_BUILDROOT_VERSION_ID build root $root is not made yet, and" \
      "making it needs root: run this as root (or with sudo) once" >&2
    return 1
  fi
  if ! command -v mmdebstrap >/dev/null 2>&1; then
    echo "==> installing mmdebstrap, which makes the Debian $NDR_BUILDROOT_VERSION_ID build root" >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends mmdebstrap \
      >&2 || { apt-get update -qq >&2 &&
      DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends mmdebstrap >&2; } ||
      return 1
  fi
  local main security packages log started
  main=${NDR_DEBIAN_MIRROR:-$(ndr_buildroot_mirror_ main)}
  security=${NDR_DEBIAN_SECURITY_MIRROR:-$(ndr_buildroot_mirror_ security)}
  packages=$(ndr_buildroot_packages | paste -sd, -)
  mkdir -p "$base"
  log=$base/make.log
  rm -rf "$root.new"
  started=$(date +%s)
  echo "==> making the Debian $NDR_BUILDROOT_VERSION_ID ($NDR_BUILDROOT_SUITE) build root in $root" \
    "from $main (several minutes, once; log: $log)" >&2
  if ! mmdebstrap --mode=root --variant=apt --format=directory --include="$packages" \
      --aptopt='APT::Install-Recommends "false"' --dpkgopt=force-unsafe-io \
      "$NDR_BUILDROOT_SUITE" "$root.new" \
      "deb $main $NDR_BUILDROOT_SUITE main" \
      "deb $main $NDR_BUILDROOT_SUITE-updates main" \
      "deb $security $NDR_BUILDROOT_SUITE-security main" >"$log" 2>&1; then
    echo "error: mmdebstrap could not make the build root; the last lines of $log:" >&2
    tail -n 20 "$log" | sed 's/^/    /' >&2
    rm -rf "$root.new"
    return 1
  fi
  # Nothing of the host's identity stays in the root; the cross sysroots are made inside it on
  # first use (toolchain/cross/make-sysroot.sh), with its own apt.
  rm -f "$root.new/etc/hostname"
  {
    echo "key $(ndr_buildroot_key)"
    echo "suite $NDR_BUILDROOT_SUITE"
    echo "source $main $security"
    echo "made in $(($(date +%s) - started)) s"
  } >"$root.new/etc/ndr-buildroot"
  rm -rf "$root"
  mv "$root.new" "$root"
  echo "==> the build root took $(($(date +%s) - started)) s to make" >&2
  echo "$root"
}

# Runs a command inside the root, in the current directory, with the environment the scripts
# use (CI, TERM, the NDR_* settings) and HOME in the keyed home. Mounted, in a mount namespace of
# its own that ends with the command: /dev, /proc, /sys, the host's /tmp, the checkout, the home,
# /etc/resolv.conf (for apt inside), and every --bind=DIR given before the command.
#   ndr_buildroot_run [--bind=DIR]... CMD [ARGS...]
ndr_buildroot_run() {
  local base root home binds=() top
  base=$(ndr_buildroot_base)
  root=$base/root
  home=$base/home
  while [ $# -gt 0 ]; do
    case $1 in
      --bind=*) binds+=("$(cd "${1#*=}" && pwd)") || return 1; shift ;;
      *) break ;;
    esac
  done
  [ -f "$root/etc/ndr-buildroot" ] || { ndr_buildroot_make >/dev/null || return 1; }
  top=$(cd "$ndr_buildroot_dir_/../.." && pwd)
  mkdir -p "$home"
  local env=(HOME="$home" PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
             LANG=C.UTF-8 NDR_BUILDROOT="$(ndr_buildroot_key)" USER=root LOGNAME=root)
  local name
  for name in CI TERM $(compgen -e | grep '^NDR_' | grep -v '^NDR_BUILDROOT$'); do
    [ -n "${!name+set}" ] && env+=("$name=${!name}")
  done
  # A mount namespace and pivot_root need root: a user with sudo gets it for the command.
  local sudo=()
  [ "$(id -u)" -eq 0 ] || sudo=(sudo)
  # The mounts are made by a shell in the new namespace: every argument reaches it as $@.
  "${sudo[@]}" unshare --mount --propagation private -- /bin/sh -eu -c '
    root=$1 home=$2 top=$3 cwd=$4 nbinds=$5
    shift 5
    mount --bind "$root" "$root"
    mount --rbind /dev "$root/dev"
    mount -t proc proc "$root/proc"
    mount --rbind /sys "$root/sys"
    mount --rbind /tmp "$root/tmp"
    if [ -e /etc/resolv.conf ]; then
      touch "$root/etc/resolv.conf" 2>/dev/null || true
      mount --bind -o ro "$(readlink -f /etc/resolv.conf)" "$root/etc/resolv.conf"
    fi
    for dir in "$home" "$top"; do
      mkdir -p "$root$dir"
      mount --rbind "$dir" "$root$dir"
    done
    while [ "$nbinds" -gt 0 ]; do
      mkdir -p "$root$1"
      mount --rbind "$1" "$root$1"
      shift
      nbinds=$((nbinds - 1))
    done
    cd "$root"
    mkdir -p .ndr-old-root
    pivot_root . .ndr-old-root
    umount -l /.ndr-old-root
    rmdir /.ndr-old-root
    cd "$cwd"
    exec /usr/bin/env -i "$@"
  ' sh "$root" "$home" "$top" "$PWD" "${#binds[@]}" "${binds[@]}" "${env[@]}" "$@"
}

# For a script that builds: when the build root is needed, runs the whole script inside it (making
# the root first) and exits with its status; otherwise returns at once.
#   ndr_buildroot_reexec [--bind=DIR]... "$0" "$@"
ndr_buildroot_reexec() {
  ndr_buildroot_needed || return 0
  ndr_buildroot_make >/dev/null || exit 1
  local binds=()
  while [ $# -gt 0 ] && [[ $1 == --bind=* ]]; do binds+=("$1"); shift; done
  local script
  script=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
  shift
  ndr_buildroot_run "${binds[@]}" /bin/bash "$script" "$@"
  exit $?
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  set -euo pipefail
  case ${1:-} in
    make) ndr_buildroot_make ;;
    path) echo "$(ndr_buildroot_base)/root" ;;
    run) shift; ndr_buildroot_run "$@" ;;
    *)
      echo "usage: $0 make | path | run [--bind=DIR]... CMD [ARGS...]" >&2
      exit 2
      ;;
  esac
fi
