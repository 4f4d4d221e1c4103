//go:build !kube_1_37

package goldens

// probeHealth: releases before 1.37 have no volume health manager (NodeGetVolumeHealth /
// NodeGetStorageHealth came with 1.37).
func probeHealth(h *harness) string { return "" }
