"""OCI images, image indexes and archives, written byte for byte reproducibly.

Everything an image is made of is decided here, and nothing comes from the machine or the moment
it is built: a layer is a tar of the files given, sorted by path, each owned by 0:0 with no user or
group name, its mode as given (0755 or 0644), its time SOURCE_DATE_EPOCH; parent directories are
added the same way; the gzip stream has no name and time 0. Configs, manifests and indexes are JSON
with sorted keys and no spaces. So the same binaries and the same epoch give the same digests, in
any directory, at any time, under any umask (images/reproducible_test.py holds it).

    layout = Layout()
    manifest = layout.image(files, platform, epoch, entrypoint=[...], labels={...})
    index = layout.index([manifest, ...], annotations={...})
    layout.write_archive("x.oci.tar", index, ref_name="1.0.0", image_name="localhost/x:1.0.0")

The gzip bytes depend on zlib's version (Debian's, the same on every machine of one Debian
release); the digests of the uncompressed layers (diff_ids) do not.
"""

import datetime
import gzip
import hashlib
import io
import json
import tarfile

INDEX = "application/vnd.oci.image.index.v1+json"
MANIFEST = "application/vnd.oci.image.manifest.v1+json"
CONFIG = "application/vnd.oci.image.config.v1+json"
LAYER = "application/vnd.oci.image.layer.v1.tar+gzip"
IN_TOTO = "application/vnd.in-toto+json"


def canonical_json(value):
    return json.dumps(value, sort_keys=True, separators=(",", ":")).encode()


def rfc3339(epoch):
    return datetime.datetime.fromtimestamp(epoch, datetime.timezone.utc).strftime(
        "%Y-%m-%dT%H:%M:%SZ")


def _tar_info(name, epoch, mode, size=0, directory=False):
    info = tarfile.TarInfo(name)
    info.type = tarfile.DIRTYPE if directory else tarfile.REGTYPE
    info.mode = mode
    info.size = size
    info.mtime = epoch
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    return info


def tar_bytes(files, epoch):
    """A tar of `files`, {path: (mode, bytes)}, with their parent directories, sorted by path.

    Paths are relative ("etc/os-release"), without "." or ".." parts: a path that would leave
    the archive's root is a programming error here, so it is refused.
    """
    entries = {}
    for path, (mode, content) in files.items():
        parts = path.split("/")
        if path.startswith("/") or any(p in ("", ".", "..") for p in parts):
            raise ValueError(f"oci.py: {path!r} is not a plain relative path")
        for depth in range(1, len(parts)):
            entries.setdefault("/".join(parts[:depth]) + "/", None)
        entries[path] = (mode, content)
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        for name in sorted(entries):
            entry = entries[name]
            if entry is None:
                tar.addfile(_tar_info(name, epoch, 0o755, directory=True))
            else:
                mode, content = entry
                tar.addfile(_tar_info(name, epoch, mode, len(content)), io.BytesIO(content))
    return out.getvalue()


def gzip_bytes(data):
    """gzip at level 9 with no file name and time 0: the same input, the same bytes."""
    return gzip.compress(data, compresslevel=9, mtime=0)


class Layout:
    """The blobs of an OCI image layout, by digest, and what refers to them."""

    def __init__(self):
        self.blobs = {}  # "sha256:<hex>" -> bytes

    def add(self, content, media_type, annotations=None):
        """Stores `content` and returns its descriptor."""
        digest = "sha256:" + hashlib.sha256(content).hexdigest()
        self.blobs[digest] = content
        descriptor = {"mediaType": media_type, "digest": digest, "size": len(content)}
        if annotations:
            descriptor["annotations"] = dict(annotations)
        return descriptor

    def add_json(self, value, media_type, annotations=None):
        return self.add(canonical_json(value), media_type, annotations)

    def image(self, files, platform, epoch, entrypoint, labels, history_comment=""):
        """One single-layer image of `files` ({path: (mode, bytes)}) for `platform`
        ({"architecture", "os", "variant"?}); returns its manifest's descriptor, with the platform.
        """
        layer_tar = tar_bytes(files, epoch)
        layer = self.add(gzip_bytes(layer_tar), LAYER)
        created = rfc3339(epoch)
        config = {
            "created": created,
            "architecture": platform["architecture"],
            "os": platform["os"],
            "config": {"Entrypoint": list(entrypoint), "Labels": dict(labels)},
            "rootfs": {"type": "layers",
                       "diff_ids": ["sha256:" + hashlib.sha256(layer_tar).hexdigest()]},
            "history": [{"created": created, "created_by": "images/assemble.py",
                         "comment": history_comment}],
        }
        if platform.get("variant"):
            config["variant"] = platform["variant"]
        manifest = self.add_json({
            "schemaVersion": 2,
            "mediaType": MANIFEST,
            "config": self.add_json(config, CONFIG),
            "layers": [layer],
            "annotations": dict(labels),
        }, MANIFEST)
        manifest["platform"] = dict(platform)
        return manifest

    def attestation(self, subject, statements):
        """A BuildKit attestation manifest for the image `subject` (a descriptor): one layer per
        in-toto statement, annotated with its predicate type; platform unknown/unknown, pointed at
        the subject by the annotations docker buildx imagetools and scanners look for."""
        layers = [self.add_json(s, IN_TOTO, {"in-toto.io/predicate-type": s["predicateType"]})
                  for s in statements]
        config = self.add_json({
            "architecture": "unknown", "os": "unknown", "config": {},
            "rootfs": {"type": "layers", "diff_ids": [layer["digest"] for layer in layers]},
        }, CONFIG)
        descriptor = self.add_json(
            {"schemaVersion": 2, "mediaType": MANIFEST, "config": config, "layers": layers},
            MANIFEST, {
                "vnd.docker.reference.digest": subject["digest"],
                "vnd.docker.reference.type": "attestation-manifest",
            })
        descriptor["platform"] = {"architecture": "unknown", "os": "unknown"}
        return descriptor

    def index(self, manifests, annotations):
        return self.add_json({
            "schemaVersion": 2,
            "mediaType": INDEX,
            "manifests": list(manifests),
            "annotations": dict(annotations),
        }, INDEX)

    def json_blob(self, descriptor):
        return json.loads(self.blobs[descriptor["digest"]])

    def archive_bytes(self, index, ref_name, image_name, epoch):
        """The OCI layout with `index` as its one image, as a tar (an "oci-archive"), holding only
        the blobs `index` reaches. ref_name is the tag (org.opencontainers.image.ref.name, which
        skopeo reads), image_name the whole name containerd's `ctr images import` gives it."""
        top = dict(index)
        top["annotations"] = {"org.opencontainers.image.ref.name": ref_name,
                              "io.containerd.image.name": image_name}
        files = {
            "oci-layout": (0o644, canonical_json({"imageLayoutVersion": "1.0.0"})),
            "index.json": (0o644, canonical_json({"schemaVersion": 2, "manifests": [top]})),
        }
        for digest in sorted(self.reachable(index)):
            algorithm, hex_digest = digest.split(":")
            files[f"blobs/{algorithm}/{hex_digest}"] = (0o644, self.blobs[digest])
        return tar_bytes(files, epoch)

    def reachable(self, descriptor):
        """The digests of `descriptor` and of every blob it refers to."""
        found = {descriptor["digest"]}
        if descriptor["mediaType"] in (INDEX, MANIFEST):
            value = self.json_blob(descriptor)
            children = list(value.get("manifests", []))
            if "config" in value:
                children.append(value["config"])
            children += value.get("layers", [])
            for child in children:
                found |= self.reachable(child)
        return found
