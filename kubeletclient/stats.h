// `kubeletclient stats`: the volume statistics kubelet collects for a pod's CSI volumes
// (pkg/volume/csi/csi_metrics.go GetMetrics; csi_client.go NodeGetVolumeStats), in JSON or as
// the Prometheus metric families kubelet exports from them
// (pkg/kubelet/metrics/collectors/volume_stats.go: kubelet_volume_stats_* with the labels
// namespace and persistentvolumeclaim, one series per claim).
//
// For each published CSI volume: NodeGetCapabilities (GET_VOLUME_STATS; without it kubelet has
// no metrics for the volume: "metrics are not supported for <driver> volumes"), then
// NodeGetVolumeStats with the volume path kubelet passes (the pod's mount directory; for block,
// volumeDevices/<pv>/dev/<pod uid>) and no staging path, then, with the CSIVolumeHealth gate,
// NodeGetCapabilities (VOLUME_CONDITION): kubelet keeps the condition's `abnormal` (the
// kubelet_volume_stats_health_status_abnormal gauge) and puts an abnormal volume's message in a
// VolumeConditionAbnormal event (volume_stat_calculator.go), both shown.
#ifndef NDR_KUBELETCLIENT_STATS_H_
#define NDR_KUBELETCLIENT_STATS_H_

#include "kubeletclient/volume_command.h"

namespace ndr::kubelet {

enum class StatsFormat { kJson, kPrometheus };

CommandOutcome RunStats(const PublishCommand& command, StatsFormat format);

// The Prometheus text exposition of kubelet's volume stats families for `volumes` (a report's
// "volumes" entries): claims only, each once, families in name order.
std::string PrometheusVolumeStats(const nlohmann::ordered_json& volumes);

}  // namespace ndr::kubelet

#endif  // NDR_KUBELETCLIENT_STATS_H_
