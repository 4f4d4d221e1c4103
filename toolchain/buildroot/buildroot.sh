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
# has none for Debian (default: the host's own Debian source, else deb.debian.org). Whatever the
# source, only Debian's archive keys are trusted.

NDR_BUILDROOT_SUITE=trixie
NDR_BUILDROOT_VERSION_ID=13
ndr_buildroot_dir_=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../hostsafe/hostsafe.sh
source "$ndr_buildroot_dir_/../hostsafe/hostsafe.sh"

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
# read, and the functions as bash prints them, so that a comment changes nothing). How the making
# is locked and cleaned up (ndr_buildroot_make) changes nothing in the root, and not the key.
ndr_buildroot_key() {
  { ndr_buildroot_packages; declare -f ndr_buildroot_mmdebstrap_ ndr_buildroot_mirror_; } |
    sha256sum | cut -c1-16
}

# Where the roots are kept (each in a directory named by its key); NDR_BUILDROOT_CACHE moves them
# (this script's tests; a cold measurement of the whole suite, docs/development.md).
ndr_buildroot_cache() { echo "${NDR_BUILDROOT_CACHE:-/var/cache/ndr-buildroot}"; }
ndr_buildroot_base() { echo "$(ndr_buildroot_cache)/$(ndr_buildroot_key)"; }

# The package names of toolchain/buildroot/packages, one a line.
ndr_buildroot_packages() {
  sed 's/#.*//' "$ndr_buildroot_dir_/packages" | tr -s ' \t' '\n\n' | sed '/^$/d'
}

# The host apt's Debian package source (URI) for the main archive or (with "security") for
# security updates, else deb.debian.org's. Only a source whose Release file says it is Debian's
# (Origin: Debian) is taken: a host may list others (Raspberry Pi OS's archive, a vendor's), whose
# packages are not Debian's. What is taken is checked against Debian's keys alone anyway
# (ndr_buildroot_mmdebstrap_).
ndr_buildroot_mirror_() {
  local want=$1 uri
  uri=$(apt-get indextargets --format '$(REPO_URI) $(SUITE) $(ORIGIN)' 2>/dev/null | sort -u |
    awk -v want="$want" '$3 == "Debian" && ($2 ~ /-security$/) == (want == "security") {print $1; exit}')
  if [ -n "$uri" ]; then
    echo "${uri%/}"
  elif [ "$want" = security ]; then
    echo http://deb.debian.org/debian-security
  else
    echo http://deb.debian.org/debian
  fi
}

# What makes a root in TARGET (an empty directory) from the package sources MAIN and SECURITY.
# apt checks every index against Debian's archive keys only (debian-archive-keyring), not against
# whatever else the host's apt trusts. Run in a mount namespace of its own (ndr_buildroot_make):
# what mmdebstrap mounts into the target (the host's /dev, /dev/shm, /proc, /sys) is never seen
# by the host, and goes with that namespace however mmdebstrap ends.
ndr_buildroot_mmdebstrap_() {
  local target=$1 main=$2 security=$3 packages
  packages=$(ndr_buildroot_packages | paste -sd, -)
  mmdebstrap --mode=root --variant=apt --format=directory --include="$packages" \
    --keyring=/usr/share/keyrings/debian-archive-keyring.gpg \
    --aptopt='APT::Install-Recommends "false"' --dpkgopt=force-unsafe-io \
    "$NDR_BUILDROOT_SUITE" "$target" \
    "deb $main $NDR_BUILDROOT_SUITE main" \
    "deb $main $NDR_BUILDROOT_SUITE-updates main" \
    "deb $security $NDR_BUILDROOT_SUITE-security main" || return 1
  # Nothing of the host's identity stays in the root; the cross sysroots are made inside it on
  # first use (toolchain/cross/make-sysroot.sh), with its own apt.
  rm -f "$target/etc/hostname"
}

# The environment a command of these scripts keeps through sudo and into the root: CI, TERM and
# every NDR_* setting, as NAME=VALUE words.
ndr_buildroot_env_() {
  local name
  for name in CI TERM $(compgen -e | grep '^NDR_' | grep -v '^NDR_BUILDROOT$'); do
    [ -n "${!name+set}" ] && echo "$name=${!name}"
  done
}

# The directory that holds the roots, and this key's, made root's and writable by no one else.
ndr_buildroot_prepare_base_() {
  local cache base
  cache=$(ndr_buildroot_cache) base=$(ndr_buildroot_base)
  { [ -d "$cache" ] || mkdir -m 0755 -- "$cache"; } &&
    { [ -d "$base" ] || mkdir -m 0755 -- "$base"; } &&
    ndr_check_private_dir "$base" "the build root's directory"
}

# Makes the root unless it is there and complete; prints its path. Needs root (mmdebstrap, and
# apt-get when mmdebstrap itself is missing); through sudo otherwise. One make at a time: it holds
# the base's lock exclusively (a second make waits, then finds the root made), and every run
# holds it shared, so no root is made or removed under a running command. The root is made in a
# fresh directory (mktemp -d) and renamed into place only when complete; what a killed make left
# is removed first, never across a mount point (ndr_remove_tree).
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
      local env
      mapfile -t env < <(ndr_buildroot_env_)
      sudo env "${env[@]}" bash "$ndr_buildroot_dir_/buildroot.sh" make
      return
    fi
    echo "error: the Debian $NDR_BUILDROOT_VERSION_ID build root $root is not made yet, and" \
      "making it needs root: run this as root (or with sudo) once" >&2
    return 1
  fi
  local need=() pkg
  for pkg in mmdebstrap debian-archive-keyring; do
    [ "$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null)" = "install ok installed" ] ||
      need+=("$pkg")
  done
  if ! command -v mmdebstrap >/dev/null 2>&1 || [ ${#need[@]} -gt 0 ]; then
    echo "==> installing ${need[*]}, which make the Debian $NDR_BUILDROOT_VERSION_ID build root" >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" \
      >&2 || { apt-get update -qq >&2 &&
      DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >&2; } ||
      return 1
  fi
  ndr_buildroot_prepare_base_ || return 1
  local lock
  ndr_lock lock "$base/lock" exclusive "the Debian $NDR_BUILDROOT_VERSION_ID build root" || return 1
  # Another make may have finished while this one waited.
  if [ -f "$root/etc/ndr-buildroot" ]; then
    ndr_unlock "$lock"
    echo "$root"
    return 0
  fi
  local old
  # (root.new: the partial root's name before the make took a fresh one each time.)
  for old in "$base"/root.new.* "$base/root.new" "$root"; do
    ndr_remove_tree "$old" || { ndr_unlock "$lock"; return 1; }
  done
  local main security new log started
  main=${NDR_DEBIAN_MIRROR:-$(ndr_buildroot_mirror_ main)}
  security=${NDR_DEBIAN_SECURITY_MIRROR:-$(ndr_buildroot_mirror_ security)}
  log=$base/make.log
  new=$(mktemp -d "$base/root.new.XXXXXX") || { ndr_unlock "$lock"; return 1; }
  chmod 0755 "$new"
  started=$(date +%s)
  echo "==> making the Debian $NDR_BUILDROOT_VERSION_ID ($NDR_BUILDROOT_SUITE) build root in $root" \
    "from $main (several minutes, once; log: $log)" >&2
  if ! env NDR_BUILDROOT_SUITE="$NDR_BUILDROOT_SUITE" ndr_buildroot_dir_="$ndr_buildroot_dir_" \
      unshare --mount --propagation private -- bash -c \
      "$(declare -f ndr_buildroot_packages ndr_buildroot_mmdebstrap_)"'; ndr_buildroot_mmdebstrap_ "$@"' \
      bash "$new" "$main" "$security" >"$log" 2>&1; then
    echo "error: mmdebstrap could not make the build root; the last lines of $log:" >&2
    tail -n 20 "$log" | sed 's/^/    /' >&2
    ndr_remove_tree "$new"
    ndr_unlock "$lock"
    return 1
  fi
  {
    echo "key $(ndr_buildroot_key)"
    echo "suite $NDR_BUILDROOT_SUITE"
    echo "source $main $security"
    echo "made in $(($(date +%s) - started)) s"
  } >"$new/etc/ndr-buildroot"
  mv -T -- "$new" "$root"
  ndr_unlock "$lock"
  echo "==> the build root took $(($(date +%s) - started)) s to make" >&2
  echo "$root"
}

# Runs a command inside the root, in the current directory (the checkout when the root does not
# mount it), with the environment the scripts
# use (CI, TERM, the NDR_* settings) and HOME in the keyed home. Mounted, in a mount namespace of
# its own that ends with the command: /dev, /proc, /sys, the host's /tmp, the checkout, the home,
# /etc/resolv.conf (for apt inside), and every --bind=DIR given before the command. The command
# and all it starts hold the root's lock shared (ndr_buildroot_make).
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
  # A mount namespace and pivot_root need root: a user with sudo runs this as root, keeping the
  # settings (sudo would drop them, and the descriptors that hold locks).
  if [ "$(id -u)" -ne 0 ]; then
    local env
    mapfile -t env < <(ndr_buildroot_env_)
    sudo env "${env[@]}" bash "$ndr_buildroot_dir_/buildroot.sh" run \
      "${binds[@]/#/--bind=}" "$@"
    return
  fi
  top=$(cd "$ndr_buildroot_dir_/../.." && pwd)
  mkdir -m 0700 -- "$home" 2>/dev/null || [ -d "$home" ] || return 1
  local env=(HOME="$home" PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
             LANG=C.UTF-8 NDR_BUILDROOT="$(ndr_buildroot_key)" USER=root LOGNAME=root)
  mapfile -t -O "${#env[@]}" env < <(ndr_buildroot_env_)
  local lock status=0
  ndr_lock lock "$base/lock" shared "the Debian $NDR_BUILDROOT_VERSION_ID build root" || return 1
  # The mounts are made by a shell in the new namespace: every argument reaches it as $@. The old
  # root goes to a directory of this run's own (mktemp), which no other run can remove.
  unshare --mount --propagation private -- /bin/sh -eu -c '
    PATH=/usr/sbin:/usr/bin:/sbin:/bin  # mount, pivot_root, whatever the caller had
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
    old=$(mktemp -d .ndr-old-root.XXXXXX)
    pivot_root . "$old"
    umount -l "/$old"
    rmdir "/$old"
    # A directory the root does not mount (a home outside it, /root): the checkout instead.
    if ! cd "$cwd" 2>/dev/null; then
      echo "build root: $cwd is not mounted in the build root (/tmp, the checkout and --bind" \
        "directories are); running in the checkout, $top" >&2
      cd "$top"
    fi
    exec /usr/bin/env -i "$@"
  ' sh "$root" "$home" "$top" "$PWD" "${#binds[@]}" "${binds[@]}" "${env[@]}" "$@" || status=$?
  ndr_unlock "$lock"
  return "$status"
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
