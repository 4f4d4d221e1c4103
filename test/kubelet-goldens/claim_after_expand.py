#!/usr/bin/env python3
"""The claim kubeletclient says kubelet leaves after an expansion, against the real kubelet's.

  claim_after_expand.py RESIZED_YAML EXPAND_REPORT GOLDEN_PVC_JSON OUT_YAML

RESIZED_YAML is the expand phase's objects; the claim named in GOLDEN_PVC_JSON (the claim as the
release's real code left it, pvc-after-expand.json) is found there, and its status before the
expansion is the base. EXPAND_REPORT is `kubeletclient expand`'s JSON, whose claimStatus.status
says what kubelet patches (an empty allocatedResourceStatuses: kubelet removed it). Prints both
status blocks (the conditions by type, status and message: their timestamps are the fake
clientset's) and exits 1 if they differ. OUT_YAML is RESIZED_YAML with that claim's status as kubeletclient predicts it, for the
republish phase.
"""
import copy
import json
import sys

import yaml


def main():
    resized, report, golden, out = sys.argv[1:5]
    real_claim = json.load(open(golden, encoding="utf-8"))
    name = real_claim["metadata"]["name"]
    with open(resized, encoding="utf-8") as f:
        documents = [d for d in yaml.safe_load_all(f) if d is not None]
    claims = [d for d in documents
              if d.get("kind") == "PersistentVolumeClaim" and d["metadata"]["name"] == name]
    if len(claims) != 1:
        sys.exit(f"{resized}: no single PersistentVolumeClaim {name} (found {len(claims)})")
    status = copy.deepcopy(claims[0].get("status") or {})
    patch = {}
    for volume in json.load(open(report, encoding="utf-8")).get("volumes", []):
        patch = volume.get("claimStatus", {}).get("status", {}) or patch
    status.update(patch)
    if status.get("allocatedResourceStatuses") == {}:
        del status["allocatedResourceStatuses"]  # kubelet removed it
    real = dict(real_claim["status"])
    for side in (status, real):
        conditions = sorted((c.get("type"), c.get("status"), c.get("message", ""))
                            for c in side.pop("conditions", None) or [])
        if conditions:
            side["conditions"] = [list(c) for c in conditions]
    same = real == status
    print("expand claim status: %s: real kubelet %s; kubeletclient %s" % (
        "SAME" if same else "DIFFERENT", json.dumps(real, sort_keys=True),
        json.dumps(status, sort_keys=True)))
    claims[0]["status"] = {k: v for k, v in status.items() if k != "conditions"}
    with open(out, "w", encoding="utf-8") as f:
        yaml.safe_dump_all(documents, f, sort_keys=False)
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
