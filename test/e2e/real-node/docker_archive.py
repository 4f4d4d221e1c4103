#!/usr/bin/env python3
"""Writes a one-layer FROM-scratch image as a docker-archive tar (what `ctr images import` and
`docker load` read), for the real-node e2e's pause image: nothing can be pulled there.

  docker_archive.py OUT.tar NAME:TAG ENTRYPOINT_IN_IMAGE=FILE_ON_DISK [PATH=FILE | LINK->TARGET ...]

The first file given is the entrypoint. Files are stored owned by root, mode 0755; LINK->TARGET
adds a symbolic link (a busybox image's applets).
"""
import hashlib
import io
import json
import sys
import tarfile


def tar_member(tar, name, data, mode):
    info = tarfile.TarInfo(name)
    info.size = len(data)
    info.mode = mode
    info.mtime = 0
    tar.addfile(info, io.BytesIO(data))


def main(argv):
    links = [a.split('->', 1) for a in argv[3:] if '->' in a]
    files = [a.split('=', 1) for a in argv[3:] if '->' not in a]
    if len(argv) < 4 or ':' not in argv[2] or not files or any(len(f) != 2 for f in files):
        sys.exit('usage: docker_archive.py OUT.tar NAME:TAG PATH_IN_IMAGE=FILE [PATH=FILE | LINK->TARGET ...]')
    out, ref = argv[1], argv[2]
    layer = io.BytesIO()
    with tarfile.open(fileobj=layer, mode='w', format=tarfile.PAX_FORMAT) as t:
        for in_image, on_disk in files:
            with open(on_disk, 'rb') as f:
                tar_member(t, in_image.lstrip('/'), f.read(), 0o755)
        for link, target in links:
            info = tarfile.TarInfo(link.lstrip('/'))
            info.type = tarfile.SYMTYPE
            info.linkname = target
            info.mode = 0o777
            t.addfile(info)
    layer_bytes = layer.getvalue()
    diff_id = 'sha256:' + hashlib.sha256(layer_bytes).hexdigest()
    config = json.dumps({
        'architecture': 'amd64', 'os': 'linux',
        'config': {'Entrypoint': ['/' + files[0][0].lstrip('/')]},
        'rootfs': {'type': 'layers', 'diff_ids': [diff_id]},
        'history': [{'created_by': 'test/e2e/real-node/docker_archive.py'}],
    }, sort_keys=True).encode()
    config_name = hashlib.sha256(config).hexdigest() + '.json'
    layer_name = diff_id.split(':')[1] + '/layer.tar'
    manifest = json.dumps([{'Config': config_name, 'RepoTags': [ref], 'Layers': [layer_name]}]).encode()
    with tarfile.open(out, 'w', format=tarfile.PAX_FORMAT) as t:
        tar_member(t, config_name, config, 0o644)
        tar_member(t, layer_name, layer_bytes, 0o644)
        tar_member(t, 'manifest.json', manifest, 0o644)


if __name__ == '__main__':
    main(sys.argv)
