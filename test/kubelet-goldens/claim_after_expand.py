#!/usr/bin/env python3
"""The claim kubeletclient says kubelet leaves after an expansion, against the real kubelet's.

  claim_after_expand.py RESIZED_YAML EXPAND_REPORT GOLDEN_PVC_JSON OUT_YAML

RESIZED_YAML is the expand phase's objects (the claim: status 1Gi, allocatedResources 2Gi,
NodeResizePending); EXPAND_REPORT is `kubeletclient expand`'s JSON, whose claimStatus.status says
what kubelet patches; GOLDEN_PVC_JSON is the claim as the release's real code left it
(pvc-after-expand.json). Prints both status blocks (conditions aside: their timestamps are the
fake clientset's) and exits 1 if they differ. OUT_YAML is RESIZED_YAML with the claim's status as
kubeletclient predicts it, for the republish phase.
"""
import json
import sys


def main():
    resized, report, golden, out = sys.argv[1:]
    status = {"phase": "Bound", "capacity": {"storage": "1Gi"},
              "allocatedResources": {"storage": "2Gi"},
              "allocatedResourceStatuses": {"storage": "NodeResizePending"}}
    patch = {}
    for volume in json.load(open(report, encoding="utf-8")).get("volumes", []):
        patch = volume.get("claimStatus", {}).get("status", {}) or patch
    status.update({k: v for k, v in patch.items() if k != "conditions"})
    if status.get("allocatedResourceStatuses") == {}:
        del status["allocatedResourceStatuses"]  # kubelet removed it
    real = json.load(open(golden, encoding="utf-8"))["status"]
    real.pop("conditions", None)
    same = real == status
    print("expand claim status: %s: real kubelet %s; kubeletclient %s" % (
        "SAME" if same else "DIFFERENT", json.dumps(real, sort_keys=True),
        json.dumps(status, sort_keys=True)))
    with open(resized, encoding="utf-8") as f:
        text = f.read()
    text = text.replace("  capacity: {storage: 1Gi}\n  allocatedResources",
                        "  capacity: {storage: %s}\n  allocatedResources"
                        % status["capacity"]["storage"], 1)
    if "allocatedResourceStatuses" not in status:
        text = text.replace("  allocatedResourceStatuses: {storage: NodeResizePending}\n", "", 1)
    with open(out, "w", encoding="utf-8") as f:
        f.write(text)
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
