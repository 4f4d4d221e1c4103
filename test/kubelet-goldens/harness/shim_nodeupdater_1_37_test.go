//go:build kube_1_37

// 1.37's CSINode updater (pkg/volume/csi/csi_node_updater.go), for the allocatable phase.
package goldens

import (
	"k8s.io/client-go/informers"
	"k8s.io/kubernetes/pkg/volume/csi"
)

// startCSINodeUpdater starts kubelet's CSINode updater as the CSI plugin's Init does when
// MutableCSINodeAllocatableCount is on (GA and locked in 1.37) and kubelet gives it a CSIDriver
// informer: csi.NewCSINodeUpdater(informer) and Run, which adds its event handlers. The
// informer's add of the CSIDriver reaches syncDriverUpdater, which starts the driver's ticker
// (runPeriodicUpdate → updateCSIDriver: NodeGetInfo, then nodeinfomanager UpdateCSIDriver) once
// the driver is registered. volumetesting's fake kubelet volume host has no informer factory
// while InitPlugins runs (it sets one afterwards), so the plugin's Init started none; the harness
// starts it after registration, which is when kubelet's RegisterPlugin calls syncDriverUpdater.
func startCSINodeUpdater(h *harness) (bool, string, error) {
	if !gateEnabled("MutableCSINodeAllocatableCount") {
		return false, "MutableCSINodeAllocatableCount is off: no CSINode updater", nil
	}
	factory := informers.NewSharedInformerFactory(h.client, 0)
	informer := factory.Storage().V1().CSIDrivers().Informer()
	updater, err := csi.NewCSINodeUpdater(informer)
	if err != nil {
		return false, "", err
	}
	updater.Run()
	factory.Start(h.ctx.Done())
	factory.WaitForCacheSync(h.ctx.Done())
	return true, "CSINode updater running (csi.NewCSINodeUpdater on a CSIDriver informer, Run)", nil
}
