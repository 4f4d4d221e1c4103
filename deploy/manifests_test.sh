#!/usr/bin/env bash
# Validates deploy/'s manifests and kustomizations (built first) against the Kubernetes API types,
# checks that each deliberately broken manifest or kustomization in deploy/testdata is refused,
# and that deploy/ names the images of the newest release in CHANGELOG.md. Writes JUnit XML for
# the suite's count.
set -u
cd "${TEST_SRCDIR}/${TEST_WORKSPACE}"
python=/usr/bin/python3
cases=() failures=0

record() {  # name, failure message ("" when it passed), output to show
  local name=$1 failure=$2 output=$3
  if [ -z "$failure" ]; then
    echo "ok   $name"
    cases+=("<testcase name=\"$name\"/>")
  else
    echo "FAIL $name ($failure)"
    cases+=("<testcase name=\"$name\"><failure message=\"$failure\"/></testcase>")
    failures=$((failures + 1))
  fi
  [ -n "$output" ] && echo "$output" | sed 's/^/     /'
}

run_case() {  # name, expected exit (0 valid, 1 refused), files...
  local name=$1 expected=$2
  shift 2
  local output
  output=$("$python" deploy/validate.py "$@" 2>&1)
  local code=$?
  if [ "$code" -eq "$expected" ]; then
    record "$name" "" "$output"
  else
    record "$name" "exit $code, expected $expected" "$output"
  fi
}

for manifest in deploy/*.yaml deploy/*/kustomization.yaml test/demo/*.yaml; do
  run_case "valid: $manifest" 0 "$manifest"
done
for manifest in deploy/testdata/*.yaml deploy/testdata/*/kustomization.yaml; do
  run_case "refused: $manifest" 1 "$manifest"
done

# The images deploy/ runs are the newest release's: the first "## X.Y.Z (date)" of CHANGELOG.md.
release=$(sed -n 's/^## \([0-9][0-9.]*[0-9]\) ([0-9-]*)$/\1/p' CHANGELOG.md | head -n 1)
tags=$(sed -n 's|^ *image: localhost/ndr/[a-z-]*:\(.*\)$|\1|p' deploy/daemonset.yaml | sort -u)
if [ -n "$release" ] && [ "$tags" = "$release" ]; then
  record "deploy/ runs release $release's images" "" ""
else
  record "deploy/ runs the newest release's images" \
    "deploy/daemonset.yaml tags '$tags', newest release in CHANGELOG.md '$release'" ""
fi

# The registrar's securityContext is the locked-down one it ran, registered and answered /healthz
# with on a real node (real-node.sh --day2=locked-down): loosening it is a decision, not a slip.
output=$("$python" - deploy/daemonset.yaml <<'PY' 2>&1
import sys, yaml
ds = yaml.safe_load(open(sys.argv[1]))
(c,) = [c for c in ds["spec"]["template"]["spec"]["containers"] if c["name"] == "csi-node-driver-registrar"]
sc = c.get("securityContext") or {}
want = {"seccompProfile": {"type": "RuntimeDefault"}, "readOnlyRootFilesystem": True,
        "allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}
wrong = {k: sc.get(k) for k, v in want.items() if sc.get(k) != v}
if sc.get("privileged"):
    wrong["privileged"] = True
if wrong:
    sys.exit("the registrar's securityContext differs from the locked-down one: %s" % wrong)
PY
)
if [ $? -eq 0 ]; then
  record "deploy/: the registrar runs with the locked-down securityContext" "" ""
else
  record "deploy/: the registrar runs with the locked-down securityContext" "loosened" "$output"
fi

if [ -n "${XML_OUTPUT_FILE:-}" ]; then
  {
    echo "<?xml version=\"1.0\" encoding=\"UTF-8\"?>"
    echo "<testsuites tests=\"${#cases[@]}\" failures=\"$failures\" disabled=\"0\" errors=\"0\">"
    echo "<testsuite name=\"manifests\" tests=\"${#cases[@]}\" failures=\"$failures\">"
    printf '%s\n' "${cases[@]}"
    echo "</testsuite></testsuites>"
  } > "$XML_OUTPUT_FILE"
fi
[ "$failures" -eq 0 ]
