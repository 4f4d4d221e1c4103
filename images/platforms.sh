# Sourced by images/build.sh and images/release.sh: the Linux platforms an image index and a
# release can have, which of them were asked for (--platforms=LIST), and whether this machine can
# build each. A platform other than amd64 is built with a cross toolchain
# (toolchain/cross/arches.bzl) against a sysroot of that Debian architecture's packages
# (toolchain/cross/make-sysroot.sh); where the package source could not serve one, the sysroot is
# missing and make-sysroot's reason is in /var/cache/ndr-<debian>-sysroot.unavailable.

# Every platform, in the order an image index, RELEASES and the CHANGELOG list them (OCI names).
NDR_PLATFORMS=(amd64 arm64 arm/v7 ppc64le s390x)
# Where the sysroots are (tests point it elsewhere).
ndr_sysroot_dir_=/var/cache

# The name of PLATFORM's cross build (//toolchain/cross:<name>_binaries, --config=<name>); empty
# for amd64, the host's own.
ndr_platform_cross() {
  case $1 in
    amd64) echo "" ;;
    arm/v7) echo armv7 ;;
    *) echo "$1" ;;
  esac
}

# PLATFORM's Debian architecture (its sysroot's).
ndr_platform_debian() {
  case $1 in
    arm/v7) echo armhf ;;
    ppc64le) echo ppc64el ;;
    *) echo "$1" ;;
  esac
}

# The Bazel targets that build PROGRAMS (e.g. registrar/csi-node-driver-registrar) for PLATFORM:
# the host's own .stripped targets for amd64, else //toolchain/cross:<cross>_binaries, which
# holds every release program of that architecture.
ndr_platform_targets() {  # PLATFORM PROGRAM...
  local cross program
  cross=$(ndr_platform_cross "$1")
  shift
  if [ -n "$cross" ]; then
    echo "//toolchain/cross:${cross}_binaries"
    return
  fi
  for program in "$@"; do echo "//${program%/*}:${program##*/}.stripped"; done
}

# PROGRAMS' binaries for PLATFORM under Bazel's bazel-bin BIN, comma-separated, as
# images/assemble.py and images/build-images.sh take them after "PLATFORM=".
ndr_platform_binaries() {  # BIN PLATFORM PROGRAM...
  local bin=$1 cross program files=()
  cross=$(ndr_platform_cross "$2")
  shift 2
  for program in "$@"; do
    if [ -z "$cross" ]; then
      files+=("$bin/$program.stripped")
    else
      files+=("$bin/toolchain/cross/${cross}_binaries/${program##*/}.stripped")
    fi
  done
  (IFS=,; echo "${files[*]}")
}

# Reads LIST (comma-separated, any order) into NDR_WANTED_PLATFORMS in NDR_PLATFORMS' order;
# "" is every platform. Says what is wrong and returns 2 for an unknown or repeated name.
ndr_parse_platforms() {
  local list=$1 name known p names
  local -A asked=()
  NDR_WANTED_PLATFORMS=()
  if [ -z "$list" ]; then
    NDR_WANTED_PLATFORMS=("${NDR_PLATFORMS[@]}")
    return 0
  fi
  if [[ $list == ,* || $list == *, || $list == *,,* ]]; then
    echo "--platforms=$list: an empty name between commas; name some of" \
      "$(IFS=,; echo "${NDR_PLATFORMS[*]}")" >&2
    return 2
  fi
  IFS=, read -ra names <<<"$list"
  for name in "${names[@]}"; do
    known=false
    for p in "${NDR_PLATFORMS[@]}"; do [ "$p" = "$name" ] && known=true; done
    if ! $known; then
      echo "--platforms=$list: '$name' is not a platform; name some of" \
        "$(IFS=,; echo "${NDR_PLATFORMS[*]}")" >&2
      return 2
    fi
    if [ -n "${asked[$name]:-}" ]; then
      echo "--platforms=$list: $name is named twice" >&2
      return 2
    fi
    asked[$name]=1
  done
  for p in "${NDR_PLATFORMS[@]}"; do
    [ -n "${asked[$p]:-}" ] && NDR_WANTED_PLATFORMS+=("$p")
  done
  [ ${#NDR_WANTED_PLATFORMS[@]} -gt 0 ] ||
    { echo "--platforms=$list: name at least one platform" >&2; return 2; }
}

# Refuses, naming each, the platforms of NDR_WANTED_PLATFORMS whose sysroot this machine could not
# make (after test/install-deps.sh's ndr_install_cross_deps tried), with the reason, and says which
# it can build. Returns 1 if any is missing.
ndr_require_platforms() {
  local p wanted debian sysroot missing=() buildable=()
  for p in "${NDR_PLATFORMS[@]}"; do
    debian=$(ndr_platform_debian "$p")
    sysroot=$ndr_sysroot_dir_/ndr-$debian-sysroot
    if [ "$p" = amd64 ] || [ -f "$sysroot/.ndr-packages" ]; then
      buildable+=("$p")
    else
      for wanted in "${NDR_WANTED_PLATFORMS[@]}"; do [ "$wanted" = "$p" ] && missing+=("$p"); done
    fi
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  echo "error: asked for $(IFS=,; echo "${NDR_WANTED_PLATFORMS[*]}"), and this machine cannot" \
    "build ${missing[*]}: the package source did not serve their Debian packages in full:" >&2
  for p in "${missing[@]}"; do
    debian=$(ndr_platform_debian "$p")
    echo "  $p ($debian):" >&2
    if [ -f "$ndr_sysroot_dir_/ndr-$debian-sysroot.unavailable" ]; then
      sed 's/^/      /' "$ndr_sysroot_dir_/ndr-$debian-sysroot.unavailable" >&2
    else
      echo "      its sysroot is not made (bash toolchain/cross/make-sysroot.sh $debian)" >&2
    fi
  done
  echo "Name the platforms to build with --platforms=LIST; this machine can build" \
    "$(IFS=,; echo "${buildable[*]}")." >&2
  return 1
}
