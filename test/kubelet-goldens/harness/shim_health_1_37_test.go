//go:build kube_1_37

// 1.37's volume health manager (pkg/kubelet/volumemanager/volumehealth), for the stats phase.
package goldens

import (
	"context"
	"encoding/json"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/kubelet/volumemanager/volumehealth"
)

// probeHealth runs 1.37's volume health manager (pkg/kubelet/volumemanager/volumehealth), which
// kubelet's volume manager starts when CSIVolumeHealth is on, for one round: its first reconcile
// runs at once (NodeGetVolumeHealth for the pod's mounted CSI persistent volumes and
// NodeGetStorageHealth for each registered driver, each after its NodeGetCapabilities, the two
// probes concurrently); the next would be a probe interval later, and the harness stops it before.
func probeHealth(h *harness) string {
	ctx, cancel := context.WithCancel(h.ctx)
	m := volumehealth.NewManager(h.dsw, h.asw, healthStatus{h}, time.Hour)
	go m.Run(ctx)
	time.Sleep(time.Second)
	h.settleRecord()
	cancel()
	if cn, err := h.client.StorageV1().CSINodes().Get(context.TODO(), nodeName, metav1.GetOptions{}); err == nil {
		status, _ := json.Marshal(cn.Status)
		h.logf("CSINode status after the health round: %s", status)
	}
	return "volume health manager: one round (probe interval 1 h, stopped after the first)"
}

type healthStatus struct{ h *harness }

func (s healthStatus) SetPodVolumeHealth(_ klog.Logger, podUID types.UID, volumeName string, conditions []v1.VolumeHealthCondition) bool {
	s.h.logf("volume health manager: pod %s volume %s: status.volumeHealth %+v", podUID, volumeName, conditions)
	return true
}
