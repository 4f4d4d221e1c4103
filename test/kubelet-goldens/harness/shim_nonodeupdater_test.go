//go:build !kube_1_37

package goldens

import "fmt"

// startCSINodeUpdater: 1.26 to 1.32 have no CSINode updater (MutableCSINodeAllocatableCount came
// in 1.33, alpha). 1.33 to 1.36 have one, which this harness does not start yet: recording the
// allocatable phase there fails rather than record a kubelet that never asks.
func startCSINodeUpdater(h *harness) (bool, string, error) {
	if gateKnown("MutableCSINodeAllocatableCount") {
		return false, "", fmt.Errorf("this release has the CSINode updater (MutableCSINodeAllocatableCount=%v); "+
			"the harness starts it for 1.37 only (shim_nodeupdater_1_37_test.go)", gateEnabled("MutableCSINodeAllocatableCount"))
	}
	return false, "no CSINode updater in this release (MutableCSINodeAllocatableCount came in 1.33)", nil
}
