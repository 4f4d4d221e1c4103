#!/usr/bin/env python3
"""Validates Kubernetes manifests against the real Kubernetes API types, offline.

The types come from Debian's python3-kubernetes: models generated from Kubernetes' OpenAPI
schema. Every field must be known to its type (a misspelt field is an error, not ignored), have
the type's value type, and every required field must be present (the models' own client-side
validation). One line per error, naming the file, the object and the field; exit 1 if any.

    validate.py FILE...

A kustomization.yaml is built first (build_kustomization: the features deploy/ uses) and what it
would apply is validated.
"""
import os
import re
import sys

import yaml
from kubernetes import client

API = client.ApiClient()

# Fields the API gained after the models Debian ships (python3-kubernetes 22.6.0, Kubernetes
# 1.22), with the release that added them and their value type: known, so that they are checked
# like any other and a misspelling of them is still an error.
NEWER_FIELDS = {
    "V1CSIDriverSpec": {
        "seLinuxMount": "bool",                          # 1.25 (GA 1.32)
        "nodeAllocatableUpdatePeriodSeconds": "int",     # 1.33
        "serviceAccountTokenInSecrets": "bool",          # 1.35
    },
    "V1PodSecurityContext": {
        "seLinuxChangePolicy": "str",                    # 1.32
    },
    "V1PersistentVolumeClaimStatus": {
        "allocatedResources": "dict(str, str)",          # 1.23 (alpha), 1.32 (beta)
        "allocatedResourceStatuses": "dict(str, str)",   # 1.28
    },
}


def check(value, type_name, path, errors):
    """Appends to errors every way `value` does not fit the OpenAPI type `type_name`."""
    if value is None:
        return
    if type_name == "object":  # IntOrString, RawExtension, free-form
        return
    if type_name in ("str", "datetime", "date"):
        if not isinstance(value, str):
            errors.append(f"{path}: must be a string, not {type(value).__name__} {value!r}")
        return
    if type_name == "int":
        if not isinstance(value, int) or isinstance(value, bool):
            errors.append(f"{path}: must be an integer, not {value!r}")
        return
    if type_name == "float":
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            errors.append(f"{path}: must be a number, not {value!r}")
        return
    if type_name == "bool":
        if not isinstance(value, bool):
            errors.append(f"{path}: must be true or false, not {value!r}")
        return
    m = re.fullmatch(r"list\[(.*)\]", type_name)
    if m:
        if not isinstance(value, list):
            errors.append(f"{path}: must be a list")
            return
        for i, item in enumerate(value):
            check(item, m.group(1), f"{path}[{i}]", errors)
        return
    m = re.fullmatch(r"dict\(str, (.*)\)", type_name)
    if m:
        if not isinstance(value, dict):
            errors.append(f"{path}: must be an object")
            return
        for key, item in value.items():
            check(item, m.group(1), f"{path}.{key}", errors)
        return
    model = getattr(client.models, type_name, None)
    if model is None:
        errors.append(f"{path}: unknown type {type_name}")
        return
    if not isinstance(value, dict):
        errors.append(f"{path}: must be an object ({type_name})")
        return
    by_json_name = {json: attr for attr, json in model.attribute_map.items()}
    newer = NEWER_FIELDS.get(type_name, {})
    for key, item in value.items():
        attr = by_json_name.get(key)
        if attr is None and key in newer:
            check(item, newer[key], f"{path}.{key}" if path else key, errors)
            continue
        if attr is None:
            errors.append(f"{path}.{key}: unknown field of {type_name}")
            continue
        check(item, model.openapi_types[attr], f"{path}.{key}" if path else key, errors)


def without_newer_fields(value, type_name):
    """`value` without NEWER_FIELDS (checked already), for the models' own deserialisation, which
    knows nothing of them."""
    if not isinstance(value, dict):
        return value
    model = getattr(client.models, type_name, None)
    if model is None:
        return value
    newer = NEWER_FIELDS.get(type_name, {})
    out = {}
    for key, item in value.items():
        if key in newer:
            continue
        attr = {json: attr for attr, json in model.attribute_map.items()}.get(key)
        sub = model.openapi_types.get(attr, "") if attr else ""
        m = re.fullmatch(r"list\[(.*)\]", sub)
        if m and isinstance(item, list):
            out[key] = [without_newer_fields(i, m.group(1)) for i in item]
        else:
            out[key] = without_newer_fields(item, sub)
    return out


def model_name(api_version, kind):
    version = api_version.split("/")[-1]
    return version[0].upper() + version[1:] + kind


KUSTOMIZATION = ("kustomize.config.k8s.io/v1beta1", "Kustomization")
KUSTOMIZATION_FIELDS = {"apiVersion", "kind", "resources", "images", "patches"}


class KustomizeError(Exception):
    pass


def load_yaml(path):
    with open(path) as f:
        try:
            return [d for d in yaml.safe_load_all(f) if d is not None]
        except yaml.YAMLError as e:
            raise KustomizeError(f"{path}: not valid YAML: {e}") from e


def pointer(document, path):
    """(parent, key) of a JSON pointer in `document` ("-" for the end of a list)."""
    parts = [p.replace("~1", "/").replace("~0", "~") for p in path.split("/")[1:]]
    if not parts:
        raise KustomizeError(f"patch path {path!r} names the whole object")
    node = document
    for part in parts[:-1]:
        if isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        elif isinstance(node, dict) and part in node:
            node = node[part]
        else:
            raise KustomizeError(f"patch path {path!r}: {part!r} is not there")
    return node, parts[-1]


def apply_patch(document, operations):
    """JSON 6902 add, replace and remove: what deploy/'s overlays use."""
    for op in operations:
        parent, key = pointer(document, op.get("path", ""))
        kind = op.get("op")
        if isinstance(parent, list):
            index = len(parent) if key == "-" else int(key) if key.isdigit() else None
            if index is None or index > len(parent) or (kind != "add" and index >= len(parent)):
                raise KustomizeError(f"patch path {op.get('path')!r}: no element {key!r}")
            if kind == "add":
                parent.insert(index, op.get("value"))
            elif kind == "replace":
                parent[index] = op.get("value")
            elif kind == "remove":
                del parent[index]
            else:
                raise KustomizeError(f"patch op {kind!r} is not add, replace or remove")
        else:
            if kind in ("replace", "remove") and key not in parent:
                raise KustomizeError(f"patch path {op.get('path')!r}: {key!r} is not there")
            if kind in ("add", "replace"):
                parent[key] = op.get("value")
            elif kind == "remove":
                del parent[key]
            else:
                raise KustomizeError(f"patch op {kind!r} is not add, replace or remove")


def containers(document):
    spec = document.get("spec", {})
    pod = spec.get("template", {}).get("spec", spec) if isinstance(spec, dict) else {}
    return [c for key in ("initContainers", "containers") for c in (pod.get(key) or [])
            if isinstance(c, dict)]


def build_kustomization(path, root):
    """The objects `kubectl apply -k` applies for the kustomization file at `path`, for what this
    repository's kustomizations use: resources (files, and directories with a kustomization.yaml),
    images (name, newName, newTag) and inline JSON 6902 patches with a target kind and name. Every
    path must stay inside `root`; an images entry or a patch that changes nothing is an error,
    since it is a typo that kustomize would pass over in silence."""
    (spec,) = load_yaml(path) or [{}]
    base = os.path.dirname(path)
    if (spec.get("apiVersion"), spec.get("kind")) != KUSTOMIZATION:
        raise KustomizeError(f"{path}: not a {KUSTOMIZATION[0]} {KUSTOMIZATION[1]}")
    unknown = set(spec) - KUSTOMIZATION_FIELDS
    if unknown:
        raise KustomizeError(f"{path}: fields this repository does not use: {sorted(unknown)}")
    objects = []
    for resource in spec.get("resources") or []:
        # Lexically: the file may be a symlink into the source tree (Bazel's runfiles).
        target = os.path.normpath(os.path.join(os.path.abspath(base), resource))
        if os.path.commonpath([os.path.abspath(root), target]) != os.path.abspath(root):
            raise KustomizeError(f"{path}: resource {resource!r} is outside {root}")
        if os.path.isdir(target):
            objects += build_kustomization(os.path.join(target, "kustomization.yaml"), root)
        elif os.path.isfile(target):
            objects += load_yaml(target)
        else:
            raise KustomizeError(f"{path}: resource {resource!r} does not exist")
    for image in spec.get("images") or []:
        name = image.get("name")
        found = 0
        for document in objects:
            for container in containers(document):
                ref = str(container.get("image", ""))
                repository, _, tag = ref.rpartition(":") if ":" in ref.split("/")[-1] else (ref, "", "")
                if repository == name:
                    found += 1
                    repository = image.get("newName", repository)
                    tag = str(image.get("newTag", tag))
                    container["image"] = f"{repository}:{tag}" if tag else repository
        if not found:
            raise KustomizeError(f"{path}: images: no container uses {name!r}")
    for patch in spec.get("patches") or []:
        target = patch.get("target") or {}
        matched = [d for d in objects if d.get("kind") == target.get("kind")
                   and d.get("metadata", {}).get("name") == target.get("name")]
        if not matched:
            raise KustomizeError(f"{path}: no {target.get('kind')} {target.get('name')} to patch")
        for document in matched:
            try:
                apply_patch(document, yaml.safe_load(patch.get("patch", "")) or [])
            except KustomizeError as e:
                raise KustomizeError(f"{path}: {e}") from e
    return objects


def validate(path):
    errors = []
    try:
        documents = load_yaml(path)
        if os.path.basename(path) == "kustomization.yaml":
            documents = build_kustomization(path, os.path.dirname(os.path.abspath(__file__)))
    except KustomizeError as e:
        return [str(e)]
    for i, doc in enumerate(documents):
        if not isinstance(doc, dict):
            errors.append(f"{path}: document {i + 1}: not an object")
            continue
        name = f"{doc.get('kind')} {doc.get('metadata', {}).get('name')}"
        type_name = model_name(str(doc.get("apiVersion", "")), str(doc.get("kind", "")))
        if getattr(client.models, type_name, None) is None:
            errors.append(f"{path}: {name}: apiVersion/kind not known to the Kubernetes API")
            continue
        found = []
        check(doc, type_name, "", found)
        errors += [f"{path}: {name}: {e}" for e in found]
        if not found:
            try:  # required fields and enums: the models' own validation
                API._ApiClient__deserialize(without_newer_fields(doc, type_name), type_name)
            except ValueError as e:
                errors.append(f"{path}: {name}: {e}")
    return errors


def main(paths):
    errors = [e for path in paths for e in validate(path)]
    for e in errors:
        print(e)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
