#!/usr/bin/env python3
"""Attaches each platform's SPDX document to a multi-platform OCI archive, as BuildKit does.

    images/attach_sbom.py ARCHIVE IMAGE_NAME SBOM_DIR FILE_NAME

ARCHIVE is an OCI archive (buildah manifest push --all ... oci-archive:) whose index.json names one
image index. For each platform's image in it, SBOM_DIR/ARCH[-VARIANT]/FILE_NAME (e.g.
amd64/csi-node-driver-registrar.spdx.json, arm-v7/...) becomes an attestation manifest in that
index, in the layout BuildKit uses (docs.docker.com, "Image attestation storage"), which `docker
buildx imagetools inspect --format '{{json .SBOM}}'`, Docker Scout and other scanners read:

  - an index entry with platform unknown/unknown and the annotations
    vnd.docker.reference.type=attestation-manifest and vnd.docker.reference.digest=<the
    platform image's manifest digest>, pointing at
  - an OCI image manifest whose one layer (application/vnd.in-toto+json, annotated
    in-toto.io/predicate-type=https://spdx.dev/Document) is an in-toto statement about that
    manifest digest, with the SPDX document as its predicate.

The archive is rewritten in place. A platform without its document is an error.
"""

import hashlib
import io
import json
import os
import re
import sys
import tarfile
import urllib.parse

INDEX = "application/vnd.oci.image.index.v1+json"
MANIFEST = "application/vnd.oci.image.manifest.v1+json"
CONFIG = "application/vnd.oci.image.config.v1+json"
IN_TOTO = "application/vnd.in-toto+json"
SPDX_PREDICATE = "https://spdx.dev/Document"


def main():
    if len(sys.argv) != 5:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    archive, name, sbom_dir, file_name = sys.argv[1:]
    with tarfile.open(archive) as tar:
        members = {m.name: tar.extractfile(m).read() if m.isfile() else None
                   for m in tar.getmembers()}

    def blob(descriptor):
        algorithm, digest = descriptor["digest"].split(":")
        return members[f"blobs/{algorithm}/{digest}"]

    added = {}

    def add(content, media_type, annotations=None):
        digest = hashlib.sha256(content).hexdigest()
        added[f"blobs/sha256/{digest}"] = content
        descriptor = {"mediaType": media_type, "digest": f"sha256:{digest}", "size": len(content)}
        if annotations:
            descriptor["annotations"] = annotations
        return descriptor

    top = json.loads(members["index.json"])
    if len(top.get("manifests", [])) != 1 or top["manifests"][0].get("mediaType") != INDEX:
        print(f"attach_sbom.py: {archive}: index.json should name one image index", file=sys.stderr)
        return 1
    index = json.loads(blob(top["manifests"][0]))
    attestations = []
    for entry in index["manifests"]:
        platform = entry.get("platform", {})
        if platform.get("architecture") in (None, "unknown"):
            continue  # an attestation already
        directory = platform["architecture"]
        if platform.get("variant"):
            directory += "-" + platform["variant"]
        # It names a directory under SBOM_DIR: letters and digits (and the one dash) only.
        if not re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)?", directory):
            print(f"attach_sbom.py: {archive}: unexpected platform {platform}", file=sys.stderr)
            return 1
        path = os.path.join(sbom_dir, directory, file_name)
        try:
            with open(path) as f:
                document = json.load(f)
        except (OSError, ValueError) as e:
            print(f"attach_sbom.py: no SPDX document for {directory}: {e}", file=sys.stderr)
            return 1
        platform_text = f"{platform.get('os', 'linux')}/{directory.replace('-', '/')}"
        statement = {
            "_type": "https://in-toto.io/Statement/v0.1",
            "predicateType": SPDX_PREDICATE,
            "subject": [{
                "name": f"pkg:docker/{name}?platform={urllib.parse.quote(platform_text, safe='')}",
                "digest": {"sha256": entry["digest"].split(":")[1]},
            }],
            "predicate": document,
        }
        layer = add(json.dumps(statement, indent=2).encode(), IN_TOTO,
                    {"in-toto.io/predicate-type": SPDX_PREDICATE})
        config = add(json.dumps({
            "architecture": "unknown", "os": "unknown", "config": {},
            "rootfs": {"type": "layers", "diff_ids": [layer["digest"]]},
        }).encode(), CONFIG)
        manifest = add(json.dumps({
            "schemaVersion": 2, "mediaType": MANIFEST, "config": config, "layers": [layer],
        }).encode(), MANIFEST, {
            "vnd.docker.reference.digest": entry["digest"],
            "vnd.docker.reference.type": "attestation-manifest",
        })
        manifest["platform"] = {"architecture": "unknown", "os": "unknown"}
        attestations.append(manifest)
    index["manifests"] = [e for e in index["manifests"]
                          if e.get("platform", {}).get("architecture") != "unknown"] + attestations
    algorithm, digest = top["manifests"][0]["digest"].split(":")
    del members[f"blobs/{algorithm}/{digest}"]  # the index without them, no longer named
    new_index = add(json.dumps(index).encode(), INDEX, top["manifests"][0].get("annotations"))
    top["manifests"][0] = new_index
    members["index.json"] = json.dumps(top).encode()
    members.update(added)

    temporary = archive + ".tmp"
    with tarfile.open(temporary, "w") as tar:
        for member_name in sorted(members, key=lambda n: (n != "oci-layout", n)):
            content = members[member_name]
            info = tarfile.TarInfo(member_name)
            if content is None:
                info.type = tarfile.DIRTYPE
                info.mode = 0o755
                tar.addfile(info)
            else:
                info.size = len(content)
                info.mode = 0o644
                tar.addfile(info, io.BytesIO(content))
    os.replace(temporary, archive)
    return 0


if __name__ == "__main__":
    sys.exit(main())
