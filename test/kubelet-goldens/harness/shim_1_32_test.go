//go:build kube_1_32 || kube_1_33

// The calls whose signatures differ between the releases read, as k8s.io/kubernetes v1.32 and v1.33
// have them: v1.34's but for the caches' PodExistsInVolume and AddPodToVolume, without a logger.
package goldens

import (
	"context"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/kubernetes/pkg/features"
	"k8s.io/kubernetes/pkg/kubelet/config"
	"k8s.io/kubernetes/pkg/kubelet/pluginmanager"
	"k8s.io/kubernetes/pkg/kubelet/volumemanager/cache"
	"k8s.io/kubernetes/pkg/kubelet/volumemanager/populator"
	"k8s.io/kubernetes/pkg/volume"
	"k8s.io/kubernetes/pkg/volume/util"
	"k8s.io/kubernetes/pkg/volume/util/operationexecutor"
	volumetypes "k8s.io/kubernetes/pkg/volume/util/types"
)

const shimRelease = "1.32-1.33"

func runPopulator(ctx context.Context, p populator.DesiredStateOfWorldPopulator, sr config.SourcesReady) {
	p.Run(ctx, sr)
}

func runPluginManager(ctx context.Context, pm pluginmanager.PluginManager, sr config.SourcesReady) {
	pm.Run(sr, ctx.Done())
}

func outerNames(v operationexecutor.VolumeToMount) []string { return []string{v.OuterVolumeSpecName} }

func podExistsInVolume(asw cache.ActualStateOfWorld, pod volumetypes.UniquePodName, name v1.UniqueVolumeName, size resource.Quantity, label string) (bool, string, error) {
	return asw.PodExistsInVolume(pod, name, size, label)
}

func addPodToVolume(dsw cache.DesiredStateOfWorld, podName volumetypes.UniquePodName, pod *v1.Pod, spec *volume.Spec, outer, gid string, contexts []*v1.SELinuxOptions) (v1.UniqueVolumeName, error) {
	return dsw.AddPodToVolume(podName, pod, spec, outer, gid, contexts)
}

func updatePVSize(dsw cache.DesiredStateOfWorld, name v1.UniqueVolumeName, q resource.Quantity) {
	dsw.UpdatePersistentVolumeSize(name, q)
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
