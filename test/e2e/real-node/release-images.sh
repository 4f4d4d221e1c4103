#!/usr/bin/env bash
# Sourced by real-node.sh: a release's own images and programs for the node, in place of this
# checkout's build (--release-dir).

# rn_take_release RELEASE_DIR IMAGES_DIR TOOLS_DIR: copies the registrar's and the sample driver's
# image indexes (PROGRAM.oci.tar) into IMAGES_DIR and the amd64 registrar, sample driver and
# kubeletclient from their archives (PROGRAM-VERSION-linux-amd64.tar.gz) into TOOLS_DIR. Each file
# is copied first and checked against the release's SHA256SUMS as copied, so what is checked is
# what is used; a file SHA256SUMS does not list, or lists with another digest, fails with its name.
# Each binary must say it is the release's version. Prints the version.
rn_take_release() {
  local dir=$1 images=$2 tools=$3 version program file copy
  version=$(awk '$2 ~ /^csi-node-driver-registrar-.*-linux-amd64\.tar\.gz$/ {
      v = $2; sub(/^csi-node-driver-registrar-/, "", v); sub(/-linux-amd64\.tar\.gz$/, "", v); print v; exit
    }' "$dir/SHA256SUMS" 2>/dev/null)
  if [[ ! $version =~ ^[0-9]+\.[0-9]+\.[0-9]+([-+][0-9A-Za-z.+_-]*)?$ ]]; then
    echo "rn_take_release: $dir/SHA256SUMS lists no csi-node-driver-registrar-VERSION-linux-amd64.tar.gz:" \
      "give a release directory of images/release.sh with amd64" >&2
    return 1
  fi
  copy=$(mktemp -d "${TMPDIR:-/tmp}/ndr-release-XXXXXX") || return 1
  local files=(csi-node-driver-registrar.oci.tar sample-csi-driver.oci.tar)
  for program in csi-node-driver-registrar sample-csi-driver kubeletclient; do
    files+=("$program-$version-linux-amd64.tar.gz")
  done
  local ok=true
  cp "$dir/SHA256SUMS" "$copy/SHA256SUMS" || ok=false
  for file in "${files[@]}"; do
    $ok || break
    if ! awk -v f="$file" '$2 == f { found = 1 } END { exit !found }' "$copy/SHA256SUMS"; then
      echo "rn_take_release: $dir/SHA256SUMS does not list $file" >&2
      ok=false
    elif ! cp "$dir/$file" "$copy/$file"; then
      ok=false
    elif ! (cd "$copy" && awk -v f="$file" '$2 == f' SHA256SUMS | sha256sum --check --strict --quiet >&2); then
      echo "rn_take_release: $dir/$file is not the file $dir/SHA256SUMS names" >&2
      ok=false
    fi
  done
  if $ok; then
    mkdir -p "$images" "$tools" &&
      mv "$copy/csi-node-driver-registrar.oci.tar" "$copy/sample-csi-driver.oci.tar" "$images/" || ok=false
  fi
  for program in csi-node-driver-registrar sample-csi-driver kubeletclient; do
    $ok || break
    if ! tar -xzf "$copy/$program-$version-linux-amd64.tar.gz" -O "$program-$version-linux-amd64/$program" \
        >"$tools/$program" || ! chmod 0755 "$tools/$program"; then
      echo "rn_take_release: $program-$version-linux-amd64.tar.gz holds no $program" >&2
      ok=false
    elif [[ "$("$tools/$program" --version 2>/dev/null | head -n 1)" != "$program $version" ]]; then
      echo "rn_take_release: $program from $program-$version-linux-amd64.tar.gz does not say it is $version" >&2
      ok=false
    fi
  done
  rm -rf -- "$copy"
  $ok && echo "$version"
}
