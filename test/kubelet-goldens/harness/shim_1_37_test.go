//go:build kube_1_37

// The calls whose signatures differ between the releases read, as k8s.io/kubernetes v1.37 has them.
package goldens

import (
	"context"
	"encoding/json"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	csitrans "k8s.io/csi-translation-lib"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/features"
	"k8s.io/kubernetes/pkg/kubelet/config"
	"k8s.io/kubernetes/pkg/kubelet/pluginmanager"
	"k8s.io/kubernetes/pkg/kubelet/volumemanager/cache"
	"k8s.io/kubernetes/pkg/kubelet/volumemanager/populator"
	"k8s.io/kubernetes/pkg/kubelet/volumemanager/volumehealth"
	"k8s.io/kubernetes/pkg/volume"
	"k8s.io/kubernetes/pkg/volume/csimigration"
	"k8s.io/kubernetes/pkg/volume/util"
	"k8s.io/kubernetes/pkg/volume/util/operationexecutor"
	volumetypes "k8s.io/kubernetes/pkg/volume/util/types"
)

const shimRelease = "1.37"

func newPopulator(h *harness) populator.DesiredStateOfWorldPopulator {
	translator := csitrans.New()
	return populator.NewDesiredStateOfWorldPopulator(h.client, loopPeriod, h.pods, h.pods, h.dsw, h.asw,
		csimigration.NewPluginManager(translator), translator, h.plugMgr)
}

func runPopulator(ctx context.Context, p populator.DesiredStateOfWorldPopulator, sr config.SourcesReady) {
	p.Run(ctx, sr)
}

func runPluginManager(ctx context.Context, pm pluginmanager.PluginManager, sr config.SourcesReady) {
	pm.Run(ctx, sr, ctx.Done())
}

func outerNames(v operationexecutor.VolumeToMount) []string { return v.OuterVolumeSpecNames }

func podExistsInVolume(asw cache.ActualStateOfWorld, pod volumetypes.UniquePodName, name v1.UniqueVolumeName, size resource.Quantity, label string) (bool, string, error) {
	return asw.PodExistsInVolume(klog.Background(), pod, name, size, label)
}

func addPodToVolume(dsw cache.DesiredStateOfWorld, podName volumetypes.UniquePodName, pod *v1.Pod, spec *volume.Spec, outer, gid string, contexts []*v1.SELinuxOptions) (v1.UniqueVolumeName, error) {
	return dsw.AddPodToVolume(klog.Background(), podName, pod, spec, outer, gid, contexts)
}

func updatePVSize(dsw cache.DesiredStateOfWorld, name v1.UniqueVolumeName, q resource.Quantity) {
	dsw.UpdatePersistentVolumeSize(name, q)
}

func initClaimSize(asw cache.ActualStateOfWorld, name v1.UniqueVolumeName, q resource.Quantity) {
	asw.InitializeClaimSize(klog.Background(), name, q)
}

func podSELinuxContexts(pod *v1.Pod) map[string][]*v1.SELinuxOptions {
	_, _, contexts := util.GetPodVolumeNames(pod, utilfeature.DefaultFeatureGate.Enabled(features.SELinuxMountReadWriteOncePod))
	return contexts
}

func dswPodExistsInVolume(dsw cache.DesiredStateOfWorld, pod volumetypes.UniquePodName, name v1.UniqueVolumeName, seLinux string) bool {
	return dsw.PodExistsInVolume(pod, name, seLinux)
}

func dswVolumeExists(dsw cache.DesiredStateOfWorld, name v1.UniqueVolumeName, seLinux string) bool {
	return dsw.VolumeExists(name, seLinux)
}

// 1.37's volume.Metrics has no volume condition (VOLUME_CONDITION is reserved in its CSI spec).
func metricsHealth(m *volume.Metrics) string { return "" }

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
