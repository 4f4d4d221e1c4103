//go:build kube_1_37

// 1.37's volume health manager (pkg/kubelet/volumemanager/volumehealth), for the stats phase.
package goldens

import (
	"context"
	"encoding/json"
	"sort"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/kubelet/volumemanager/volumehealth"
	volumeutil "k8s.io/kubernetes/pkg/volume/util"
)

// probeHealth runs 1.37's volume health manager (pkg/kubelet/volumemanager/volumehealth), which
// kubelet's volume manager starts when CSIVolumeHealth is on, for one round: its first reconcile
// runs at once (NodeGetVolumeHealth for the pod's mounted CSI persistent volumes and
// NodeGetStorageHealth for each registered driver, each after its NodeGetCapabilities, the two
// probes concurrently); the next would be a probe interval later, and the harness stops it before.
func probeHealth(h *harness) string {
	ctx, cancel := context.WithCancel(h.ctx)
	status := &healthStatus{h: h}
	m := volumehealth.NewManager(h.dsw, h.asw, status, time.Hour)
	go m.Run(ctx)
	time.Sleep(time.Second)
	h.settleRecord()
	cancel()
	written := map[string]interface{}{"podStatus": status.podStatus()}
	if cn, err := h.client.StorageV1().CSINodes().Get(context.TODO(), nodeName, metav1.GetOptions{}); err == nil {
		text, _ := json.Marshal(cn.Status)
		h.logf("CSINode status after the health round: %s", text)
		written["csiNodeStatus"] = cn.Status
	}
	// What kubelet writes, for the replay to compare with kubeletclient stats' podStatus and
	// csiNodeStatus.
	h.writeJSON("health-after-stats.json", written)
	return "volume health manager: one round (probe interval 1 h, stopped after the first)"
}

// healthStatus stands in for kubelet's status manager. What its SetPodVolumeHealth
// (pkg/kubelet/status/status_manager.go, v1.37.2) writes into the pod's status.volumeHealth is
// kept here by the same rule: an entry only when the (status, reason) set differs from the one
// the pod has, by volumeutil.VolumeHealthConditionSetsEqual (the real function). The pod's status
// has no volume health before this first round.
type healthStatus struct {
	h       *harness
	mu      sync.Mutex
	entries map[string][]v1.VolumeHealthCondition
}

func (s *healthStatus) SetPodVolumeHealth(_ klog.Logger, podUID types.UID, volumeName string, conditions []v1.VolumeHealthCondition) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if volumeutil.VolumeHealthConditionSetsEqual(s.entries[volumeName], conditions) {
		s.h.logf("volume health manager: pod %s volume %s: status.volumeHealth %+v: unchanged, not written", podUID, volumeName, conditions)
		return false
	}
	if s.entries == nil {
		s.entries = map[string][]v1.VolumeHealthCondition{}
	}
	s.entries[volumeName] = append([]v1.VolumeHealthCondition(nil), conditions...)
	s.h.logf("volume health manager: pod %s volume %s: status.volumeHealth %+v", podUID, volumeName, conditions)
	return true
}

// podStatus: the pod's status.volumeHealth after the round, by volume name, without the
// transition times.
func (s *healthStatus) podStatus() map[string]interface{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	names := make([]string, 0, len(s.entries))
	for name := range s.entries {
		names = append(names, name)
	}
	sort.Strings(names)
	health := []interface{}{}
	for _, name := range names {
		entry := map[string]interface{}{"name": name}
		if len(s.entries[name]) > 0 {
			entry["healthConditions"] = s.entries[name]
		}
		health = append(health, entry)
	}
	return map[string]interface{}{"volumeHealth": health}
}
