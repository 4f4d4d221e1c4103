// Package goldens records what the real kubelet code of one Kubernetes release sends to a CSI node
// plugin: a Go test built by ../record.sh in a scratch module against k8s.io/kubernetes@<version>
// (never inside the checkout). It drives the release's own plugin manager
// (pkg/kubelet/pluginmanager), the volume manager's desired-state populator and caches
// (pkg/kubelet/volumemanager/populator, .../cache), the operation executor
// (pkg/volume/util/operationexecutor) and the CSI volume plugin (pkg/volume/csi) against the sample
// CSI driver and our registrar over real unix sockets. Only the reconciler's loop is ours: it makes
// the same decisions as pkg/kubelet/volumemanager/reconciler (reconciler_common.go), for one
// volume at a time, in the pod's order, each to completion, so that the driver's record is
// ordered. The few calls whose signatures differ between releases are in shim_*_test.go.
//
// Configuration comes from the environment (record.sh sets it): KG_OUT, KG_SCRATCH,
// KG_DRIVER_BIN, KG_REGISTRAR_BIN, KG_OBJECTS, KG_SCENARIO (scenarios/<name>/scenario.json: the
// driver's and registrar's flags, the phases), KG_KLOG, KG_KUBE_VERSION, KG_GO_VERSION.
package goldens

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/kubernetes/scheme"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	"k8s.io/component-base/featuregate"
	csitrans "k8s.io/csi-translation-lib"
	"k8s.io/klog/v2"
	pluginwatcherapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
	apicorev1 "k8s.io/kubernetes/pkg/apis/core/v1"
	apistoragev1 "k8s.io/kubernetes/pkg/apis/storage/v1"
	"k8s.io/kubernetes/pkg/kubelet/pluginmanager"
	plugincache "k8s.io/kubernetes/pkg/kubelet/pluginmanager/cache"
	kubepod "k8s.io/kubernetes/pkg/kubelet/pod"
	"k8s.io/kubernetes/pkg/kubelet/volumemanager/cache"
	"k8s.io/kubernetes/pkg/kubelet/volumemanager/populator"
	"k8s.io/kubernetes/pkg/util/goroutinemap/exponentialbackoff"
	"k8s.io/kubernetes/pkg/volume"
	"k8s.io/kubernetes/pkg/volume/csi"
	"k8s.io/kubernetes/pkg/volume/csimigration"
	"k8s.io/kubernetes/pkg/volume/emptydir"
	volumetest "k8s.io/kubernetes/pkg/volume/testing"
	"k8s.io/kubernetes/pkg/volume/util"
	"k8s.io/kubernetes/pkg/volume/util/nestedpendingoperations"
	"k8s.io/kubernetes/pkg/volume/util/operationexecutor"
	volumetypes "k8s.io/kubernetes/pkg/volume/util/types"
)

const (
	nodeName   = "demo-node"
	driverName = "sample.csi.example.com"
	// kubelet's waitForAttachTimeout (pkg/kubelet/volumemanager/volume_manager.go).
	waitForAttachTimeout = 10 * time.Minute
	// The reconciler's loop period (reconcilerLoopSleepPeriod) and the populator's.
	loopPeriod = 100 * time.Millisecond
	// How long one phase step may take before the harness gives up on it.
	stepDeadline = 3 * time.Minute
	// Where kubelet's root and registry are said to be in the committed golden.
	goldenRoot = "/var/lib/kubelet"
)

type harness struct {
	t        *testing.T
	version  string
	out      string
	scratch  string
	root     string // the kubelet root dir of this run (KG_SCRATCH/kubelet)
	registry string // root/plugins_registry, as kubelet's
	socket   string // the driver's socket
	record   string // the driver's --record file

	logMu sync.Mutex
	logW  *os.File

	client      *fake.Clientset
	host        volumetest.FakeVolumeHost
	kubeletHost volume.KubeletVolumeHost
	plugMgr     *volume.VolumePluginMgr
	recorder    *record.FakeRecorder
	dsw         cache.DesiredStateOfWorld
	asw         cache.ActualStateOfWorld
	oe          operationexecutor.OperationExecutor
	pop         populator.DesiredStateOfWorldPopulator
	pods        *podSource

	pod      *v1.Pod
	podName  volumetypes.UniquePodName
	volNames map[string]v1.UniqueVolumeName // pod volume name -> unique volume name (CSI ones)
	csiVols  []string                       // the pod's CSI volumes, in pod order
	// CSI volumes whose publish failed; the later phases leave them out.
	failedVols []string

	sc    scenarioConfig
	scDir string

	driver    *exec.Cmd
	registrar *exec.Cmd
	phases    []phaseRange
	skipped   []string
	ctx       context.Context
	cancel    context.CancelFunc
}

// scenarioConfig: what the harness reads of scenarios/<name>/scenario.json (replay_test.sh reads
// the rest: the kubeletclient commands).
type scenarioConfig struct {
	Name        string   `json:"name"`
	ObjectFiles []string `json:"object_files"`
	// The driver's flags besides --endpoint and --record.
	DriverFlags []string `json:"driver_flags"`
	// The registrar's flags besides --csi-address, --kubelet-registration-path and
	// --plugin-registration-path, when recording.
	RegistrarFlagsRecord []string `json:"registrar_flags_record"`
	ResizedObjects       string   `json:"resized_objects"`
	Phases               []struct {
		Phase string   `json:"phase"`
		Args  []string `json:"args"`
	} `json:"phases"`
}

type phaseRange struct {
	name        string
	first, last int
}

// podSource is kubelet's pod manager and pod state provider, as far as the populator asks.
type podSource struct {
	mu      sync.Mutex
	pods    []*v1.Pod
	removed map[types.UID]bool
}

func (p *podSource) GetPodByUID(uid types.UID) (*v1.Pod, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, pod := range p.pods {
		if pod.UID == uid {
			return pod, true
		}
	}
	return nil, false
}

func (p *podSource) GetPods() []*v1.Pod {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]*v1.Pod(nil), p.pods...)
}

func (p *podSource) ShouldPodContainersBeTerminating(uid types.UID) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.removed[uid]
}

func (p *podSource) ShouldPodRuntimeBeRemoved(uid types.UID) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.removed[uid]
}

type sourcesReady struct{}

func (sourcesReady) AddSource(string) {}
func (sourcesReady) AllReady() bool   { return true }

func env(t *testing.T, name string) string {
	v := os.Getenv(name)
	if v == "" {
		t.Fatalf("%s is not set (run ../record.sh)", name)
	}
	return v
}

func (h *harness) logf(format string, args ...interface{}) {
	h.logMu.Lock()
	defer h.logMu.Unlock()
	line := fmt.Sprintf(format, args...)
	fmt.Fprintln(h.logW, line)
	h.t.Log(line)
}

func TestRecordGolden(t *testing.T) {
	h := &harness{
		t:       t,
		version: env(t, "KG_KUBE_VERSION"),
		out:     env(t, "KG_OUT"),
		scratch: env(t, "KG_SCRATCH"),
		pods:    &podSource{removed: map[types.UID]bool{}},
	}
	h.scDir = env(t, "KG_SCENARIO")
	if data, err := os.ReadFile(filepath.Join(h.scDir, "scenario.json")); err != nil {
		t.Fatal(err)
	} else if err := json.Unmarshal(data, &h.sc); err != nil {
		t.Fatalf("%s/scenario.json: %v", h.scDir, err)
	}
	h.root = filepath.Join(h.scratch, "kubelet")
	h.registry = filepath.Join(h.root, "plugins_registry")
	h.socket = filepath.Join(h.scratch, "csi.sock")
	h.record = filepath.Join(h.scratch, "record.jsonl")
	h.ctx, h.cancel = context.WithCancel(context.Background())
	defer h.cancel()

	var err error
	if err = os.MkdirAll(h.out, 0755); err != nil {
		t.Fatal(err)
	}
	if h.logW, err = os.Create(filepath.Join(h.scratch, "harness-log.txt")); err != nil {
		t.Fatal(err)
	}
	setUpKlog(t)
	h.logf("kubelet golden of k8s.io/kubernetes@%s (shim %s), built with %s", h.version, shimRelease, os.Getenv("KG_GO_VERSION"))
	h.logf("kubelet root: a scratch directory, written %s throughout this golden; registry %s; driver socket %s", goldenRoot, h.registry, h.socket)
	h.logf("scenario %s (%s/scenario.json)", h.sc.Name, filepath.Base(h.scDir))
	h.logf("feature gates at start (release defaults): %s", gateSummary())

	defer h.stopProcesses()
	h.setUp()
	failed := false
	runs := map[string]func() error{
		"registration": h.phaseRegistration,
		"publish":      h.phasePublish,
		"stats":        h.phaseStats,
		"expand":       h.phaseExpand,
		"republish":    h.phaseRepublish,
		"unpublish":    h.phaseUnpublish,
		"allocatable":  h.phaseAllocatable,
	}
	type phaseRun struct {
		name string
		run  func() error
	}
	var phases []phaseRun
	for _, p := range h.sc.Phases {
		run, ok := runs[p.Phase]
		if !ok {
			t.Fatalf("scenario.json: unknown phase %q", p.Phase)
		}
		phases = append(phases, phaseRun{p.Phase, run})
	}
	for _, phase := range phases {
		if failed {
			h.logf("== phase %s: not run (an earlier phase failed)", phase.name)
			continue
		}
		first := h.recordLines() + 1
		h.logf("== phase %s", phase.name)
		err := phase.run()
		h.settleRecord()
		last := h.recordLines()
		h.phases = append(h.phases, phaseRange{phase.name, first, last})
		h.logf("== phase %s: record lines %d-%d", phase.name, first, last)
		if err != nil {
			h.logf("== phase %s FAILED: %v", phase.name, err)
			t.Errorf("phase %s: %v", phase.name, err)
			failed = true
		}
	}
	h.stopProcesses()
	h.writeGolden()
	h.unmountLeftovers()
}

func setUpKlog(t *testing.T) {
	fs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(fs)
	_ = fs.Set("v", "4")
	_ = fs.Set("logtostderr", "false")
	_ = fs.Set("alsologtostderr", "false")
	_ = fs.Set("stderrthreshold", "FATAL")
	if path := os.Getenv("KG_KLOG"); path != "" {
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		klog.SetOutput(f)
	}
}

func gateSummary() string {
	var parts []string
	for _, g := range []string{"SELinuxMountReadWriteOncePod", "SELinuxMount", "SELinuxChangePolicy",
		"RecoverVolumeExpansionFailure", "CSIVolumeHealth", "MutableCSINodeAllocatableCount", "ReadWriteOncePod",
		"CSINodeExpandSecret", "NewVolumeManagerReconstruction",
		"CSIServiceAccountTokenSecrets"} {
		if !gateKnown(g) {
			parts = append(parts, g+"=(none)")
			continue
		}
		parts = append(parts, fmt.Sprintf("%s=%v", g, gateEnabled(g)))
	}
	return strings.Join(parts, " ")
}

// --- set-up -------------------------------------------------------------------------------------

// The demo objects, with this scenario's two changes made as text so that objects/ diffs cleanly
// against test/demo.
func (h *harness) loadObjects() []runtime.Object {
	dir := env(h.t, "KG_OBJECTS")
	objDir := filepath.Join(h.out, "objects")
	if err := os.MkdirAll(objDir, 0755); err != nil {
		h.t.Fatal(err)
	}
	edits := map[string][2]string{
		"csidriver.yaml": {"  requiresRepublish: true\n", "  requiresRepublish: true\n  seLinuxMount: true\n"},
		"pod.yaml": {"  serviceAccountName: demo-sa\n",
			"  serviceAccountName: demo-sa\n  securityContext:\n    seLinuxOptions: {level: \"s0:c1,c2\"}\n"},
		"volume.yaml": {"", ""},
	}
	if h.sc.Name != "demo" {
		edits = nil
	}
	var objs []runtime.Object
	for _, name := range h.sc.ObjectFiles {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			h.t.Fatal(err)
		}
		text := string(data)
		if e := edits[name]; e[0] != "" {
			added := strings.TrimPrefix(e[1], e[0])
			switch {
			case strings.Contains(text, added):
				h.logf("objects: %s has this scenario's change already (%q)", name, strings.TrimSpace(added))
			case strings.Count(text, e[0]) == 1:
				text = strings.Replace(text, e[0], e[1], 1)
				h.logf("objects: %s changed for this scenario (%q added)", name, strings.TrimSpace(added))
			default:
				h.t.Fatalf("%s: cannot make this scenario's change (no single %q)", name, e[0])
			}
		}
		if err := os.WriteFile(filepath.Join(objDir, name), []byte(text), 0644); err != nil {
			h.t.Fatal(err)
		}
		reader := utilyaml.NewYAMLReader(bufio.NewReader(strings.NewReader(text)))
		for {
			doc, err := reader.Read()
			if err == io.EOF {
				break
			}
			if err != nil {
				h.t.Fatal(err)
			}
			if len(bytes.TrimSpace(stripComments(doc))) == 0 {
				continue
			}
			obj, _, err := scheme.Codecs.UniversalDeserializer().Decode(doc, nil, nil)
			if err != nil {
				h.t.Fatalf("%s: %v", name, err)
			}
			// The API server's defaults (a PV's volumeMode, a CSIDriver's fsGroupPolicy, ...), from
			// the release's own defaulting functions.
			defaults.Default(obj)
			logDecoded(h, name, doc, obj)
			objs = append(objs, obj)
		}
	}
	return objs
}

var defaults = func() *runtime.Scheme {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{apicorev1.AddToScheme, apistoragev1.AddToScheme} {
		if err := add(s); err != nil {
			panic(err)
		}
	}
	return s
}()

// logDecoded notes the fields of a CSIDriver's spec in the YAML that this release's type has not:
// the decoding is lenient (unknown fields are dropped, as this release's API server would drop
// them), so serviceAccountTokenInSecrets reaches only 1.35 and later.
func logDecoded(h *harness, name string, doc []byte, obj runtime.Object) {
	d, ok := obj.(*storagev1.CSIDriver)
	if !ok {
		return
	}
	var raw struct {
		Spec map[string]interface{} `json:"spec"`
	}
	if err := utilyaml.Unmarshal(doc, &raw); err != nil {
		return
	}
	known := map[string]bool{}
	st := reflect.TypeOf(d.Spec)
	for i := 0; i < st.NumField(); i++ {
		known[strings.Split(st.Field(i).Tag.Get("json"), ",")[0]] = true
	}
	var keys []string
	for k := range raw.Spec {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if !known[k] {
			h.logf("objects: %s: CSIDriver spec.%s is not in this release's storage/v1 type: dropped", name, k)
		}
	}
	spec, _ := json.Marshal(d.Spec)
	h.logf("objects: %s: CSIDriver %s spec as this release has it (defaults applied): %s", name, d.Name, spec)
}

func stripComments(doc []byte) []byte {
	var b bytes.Buffer
	for _, line := range strings.Split(string(doc), "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "#") {
			continue
		}
		b.WriteString(line + "\n")
	}
	return b.Bytes()
}

func (h *harness) setUp() {
	for _, d := range []string{h.root, h.registry, filepath.Join(h.root, "plugins"), filepath.Join(h.root, "pods")} {
		if err := os.MkdirAll(d, 0750); err != nil {
			h.t.Fatal(err)
		}
	}
	var clientObjs []runtime.Object
	for _, obj := range h.loadObjects() {
		switch o := obj.(type) {
		case *v1.Pod:
			h.pod = o
		default:
			clientObjs = append(clientObjs, obj)
		}
	}
	if h.pod == nil {
		h.t.Fatal("no pod in the objects")
	}
	h.podName = util.GetUniquePodName(h.pod)
	// The Node as the API server has it when kubelet has registered it (name, UID); kubelet's CSI
	// plugin adds its annotation and the driver's topology labels at registration.
	clientObjs = append(clientObjs, &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: nodeName, UID: "7d1c9a3e-2b4f-4e6a-9c8d-1f2e3d4c5b6a"}})
	h.client = fake.NewSimpleClientset(clientObjs...)
	// TokenRequest (kubelet's token manager asks the API server): any token, with the expiration
	// asked for. The driver's record redacts tokens.
	h.client.PrependReactor("create", "serviceaccounts", func(action k8stesting.Action) (bool, runtime.Object, error) {
		create, ok := action.(k8stesting.CreateAction)
		if !ok || action.GetSubresource() != "token" {
			return false, nil, nil
		}
		tr, ok := create.GetObject().(*authenticationv1.TokenRequest)
		if !ok {
			return false, nil, nil
		}
		tr = tr.DeepCopy()
		seconds := int64(3600)
		if tr.Spec.ExpirationSeconds != nil {
			seconds = *tr.Spec.ExpirationSeconds
		}
		tr.Status = authenticationv1.TokenRequestStatus{
			Token:               "harness-token-for-" + strings.Join(tr.Spec.Audiences, ","),
			ExpirationTimestamp: metav1.NewTime(time.Now().Add(time.Duration(seconds) * time.Second)),
		}
		saName := ""
		if impl, ok := action.(k8stesting.CreateActionImpl); ok {
			saName = impl.Name
		}
		h.logf("TokenRequest for service account %s/%s, audiences %v, expirationSeconds %d, bound to %s %s",
			create.GetNamespace(), saName, tr.Spec.Audiences, seconds, boundKind(tr), boundName(tr))
		return true, tr, nil
	})

	factory := informers.NewSharedInformerFactory(h.client, 0)
	csiDriverLister := factory.Storage().V1().CSIDrivers().Lister()
	vaLister := factory.Storage().V1().VolumeAttachments().Lister()
	factory.Start(h.ctx.Done())
	factory.WaitForCacheSync(h.ctx.Done())

	plugins := append(csi.ProbeVolumePlugins(), emptydir.ProbeVolumePlugins()...)
	host := volumetest.NewFakeKubeletVolumeHostWithCSINodeName(h.t, h.root, h.client, plugins, nodeName, csiDriverLister, vaLister)
	h.host = host
	h.kubeletHost = host
	h.plugMgr = host.GetPluginMgr()
	h.recorder = record.NewFakeRecorder(10000)
	go func() {
		for {
			select {
			case e := <-h.recorder.Events:
				h.logf("event: %s", e)
			case <-h.ctx.Done():
				return
			}
		}
	}()
	h.dsw = cache.NewDesiredStateOfWorld(h.plugMgr, util.NewFakeSELinuxLabelTranslator())
	h.asw = cache.NewActualStateOfWorld(nodeName, h.plugMgr)
	h.oe = operationexecutor.NewOperationExecutor(operationexecutor.NewOperationGenerator(
		h.client, h.plugMgr, h.recorder, &pathHandler{}))
	h.pop = newPopulator(h)
	go runPopulator(h.ctx, h.pop, sourcesReady{})
	setNodeForHost(host, h.getNode())
	h.logf("set-up: fake clientset with %d objects (CSIDriver, PVCs, PVs, VolumeAttachments, Secret, ServiceAccount, Node); "+
		"CSIDriver and VolumeAttachment listers from an informer on it; volumetesting's fake kubelet volume host "+
		"(FakeMounter, FakeHostUtil) with the CSI and emptyDir plugins; volume manager caches with "+
		"util.NewFakeSELinuxLabelTranslator (SELinux enabled); operation executor with a block volume path handler "+
		"that makes kubelet's files and symlinks but no bind mount and no loop device",
		len(clientObjs))
}

func boundKind(tr *authenticationv1.TokenRequest) string {
	if tr.Spec.BoundObjectRef == nil {
		return "nothing"
	}
	return tr.Spec.BoundObjectRef.Kind
}

func boundName(tr *authenticationv1.TokenRequest) string {
	if tr.Spec.BoundObjectRef == nil {
		return ""
	}
	return tr.Spec.BoundObjectRef.Name
}

func (h *harness) getNode() *v1.Node {
	node, err := h.client.CoreV1().Nodes().Get(context.TODO(), nodeName, metav1.GetOptions{})
	if err != nil {
		h.t.Fatal(err)
	}
	return node
}

// --- processes ----------------------------------------------------------------------------------

func (h *harness) start(name, bin string, args ...string) *exec.Cmd {
	logFile, err := os.Create(filepath.Join(h.scratch, name+".log"))
	if err != nil {
		h.t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	if err := cmd.Start(); err != nil {
		h.t.Fatalf("starting %s: %v", name, err)
	}
	h.logf("started %s: %s %s", name, filepath.Base(bin), strings.Join(args, " "))
	return cmd
}

func (h *harness) stopProcesses() {
	for _, p := range []struct {
		name string
		cmd  **exec.Cmd
	}{{"registrar", &h.registrar}, {"driver", &h.driver}} {
		cmd := *p.cmd
		if cmd == nil {
			continue
		}
		*p.cmd = nil
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			h.logf("stopped %s (SIGTERM): %v", p.name, err)
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			h.logf("killed %s: no exit 10 s after SIGTERM", p.name)
		}
	}
}

func (h *harness) recordLines() int {
	data, err := os.ReadFile(h.record)
	if err != nil {
		return 0
	}
	return bytes.Count(data, []byte("\n"))
}

// settleRecord waits until the driver's record has not grown for half a second.
func (h *harness) settleRecord() {
	last, stable := h.recordLines(), time.Now()
	for time.Since(stable) < 500*time.Millisecond {
		time.Sleep(50 * time.Millisecond)
		if n := h.recordLines(); n != last {
			last, stable = n, time.Now()
		}
	}
}

func waitFor(timeout time.Duration, what string, cond func() (bool, error)) error {
	deadline := time.Now().Add(timeout)
	for {
		ok, err := cond()
		if ok {
			return nil
		}
		if time.Now().After(deadline) {
			if err != nil {
				return fmt.Errorf("%s: not within %s: %v", what, timeout, err)
			}
			return fmt.Errorf("%s: not within %s", what, timeout)
		}
		time.Sleep(loopPeriod)
	}
}

// --- phase 1: registration ----------------------------------------------------------------------

func (h *harness) phaseRegistration() error {
	h.driver = h.start("driver", os.Getenv("KG_DRIVER_BIN"),
		append(append([]string{"--endpoint=unix://" + h.socket}, h.sc.DriverFlags...), "--record="+h.record)...)
	if err := waitFor(30*time.Second, "driver socket", func() (bool, error) {
		_, err := os.Stat(h.socket)
		return err == nil, err
	}); err != nil {
		return err
	}
	// As kubelet.go wires it: NewPluginManager(<root>/plugins_registry, recorder), the CSI
	// plugin's PluginHandler for "CSIPlugin", Run.
	pm := pluginmanager.NewPluginManager(h.registry, h.recorder)
	pm.AddHandler(pluginwatcherapi.CSIPlugin, plugincache.PluginHandler(csi.PluginHandler))
	go runPluginManager(h.ctx, pm, sourcesReady{})
	h.logf("plugin manager running, watching %s", h.registry)
	h.registrar = h.start("registrar", os.Getenv("KG_REGISTRAR_BIN"),
		append([]string{"--csi-address=" + h.socket, "--kubelet-registration-path=" + h.socket,
			"--plugin-registration-path=" + h.registry}, h.sc.RegistrarFlagsRecord...)...)
	if err := waitFor(60*time.Second, "CSINode with the driver", func() (bool, error) {
		cn, err := h.client.StorageV1().CSINodes().Get(context.TODO(), nodeName, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, d := range cn.Spec.Drivers {
			if d.Name == driverName {
				return true, nil
			}
		}
		return false, nil
	}); err != nil {
		return err
	}
	// NotifyRegistrationStatus follows RegisterPlugin; give it its moment.
	time.Sleep(time.Second)
	h.logf("registered: CSINode %s lists %s", nodeName, driverName)
	cn, err := h.client.StorageV1().CSINodes().Get(context.TODO(), nodeName, metav1.GetOptions{})
	if err != nil {
		return err
	}
	cn.TypeMeta = metav1.TypeMeta{APIVersion: "storage.k8s.io/v1", Kind: "CSINode"}
	h.writeJSON("csinode.json", cn)
	node := h.getNode()
	node.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "Node"}
	h.writeJSON("node.json", node)
	return nil
}

// --- phase: allocatable -------------------------------------------------------------------------

// allocatableCount: the driver's allocatable count in the CSINode, -1 for none.
func (h *harness) allocatableCount() int32 {
	cn, err := h.client.StorageV1().CSINodes().Get(context.TODO(), nodeName, metav1.GetOptions{})
	if err != nil {
		return -1
	}
	for _, d := range cn.Spec.Drivers {
		if d.Name == driverName && d.Allocatable != nil && d.Allocatable.Count != nil {
			return *d.Allocatable.Count
		}
	}
	return -1
}

// phaseAllocatable: kubelet's CSINode updater, when the release has one, asks the driver's
// NodeGetInfo again every CSIDriver nodeAllocatableUpdatePeriodSeconds (--period=, the same as
// the scenario's CSIDriver) and puts the new count into the CSINode: the phase waits for the
// count to change (at most three periods). Where the release has none, it watches for two
// periods and two seconds, time for two rounds, and nothing may come. The CSINode after it is
// csinode-after-allocatable.json.
func (h *harness) phaseAllocatable() error {
	period := time.Duration(0)
	for _, p := range h.sc.Phases {
		for _, a := range p.Args {
			if p.Phase == "allocatable" && strings.HasPrefix(a, "--period=") {
				d, err := time.ParseDuration(strings.TrimPrefix(a, "--period="))
				if err != nil {
					return fmt.Errorf("scenario.json: allocatable %s: %v", a, err)
				}
				period = d
			}
		}
	}
	if period <= 0 {
		return fmt.Errorf("scenario.json: the allocatable phase needs --period=, the CSIDriver's nodeAllocatableUpdatePeriodSeconds")
	}
	before := h.allocatableCount()
	started, what, err := startCSINodeUpdater(h)
	if err != nil {
		return err
	}
	h.logf("%s; allocatable count %d at registration", what, before)
	if started {
		if err := waitFor(3*period, "the CSINode's allocatable count to change", func() (bool, error) {
			return h.allocatableCount() != before, nil
		}); err != nil {
			return err
		}
	} else {
		time.Sleep(2*period + 2*time.Second)
		if after := h.allocatableCount(); after != before {
			return fmt.Errorf("the allocatable count changed (%d to %d) without a CSINode updater", before, after)
		}
	}
	h.settleRecord()
	h.logf("allocatable count %d after the phase", h.allocatableCount())
	cn, err := h.client.StorageV1().CSINodes().Get(context.TODO(), nodeName, metav1.GetOptions{})
	if err != nil {
		return err
	}
	cn.TypeMeta = metav1.TypeMeta{APIVersion: "storage.k8s.io/v1", Kind: "CSINode"}
	h.writeJSON("csinode-after-allocatable.json", cn)
	return nil
}

// --- the reconciler, one volume at a time -------------------------------------------------------

func (h *harness) volumeToMount(podVolume string) (cache.VolumeToMount, bool) {
	for _, v := range h.dsw.GetVolumesToMount() {
		if v.PodName != h.podName {
			continue
		}
		for _, n := range outerNames(v.VolumeToMount) {
			if n == podVolume {
				return v, true
			}
		}
	}
	return cache.VolumeToMount{}, false
}

// errGaveUp: an operation on the volume failed and the harness does not retry it (kubelet's
// reconciler would, with exponential backoff, for as long as the pod exists).
type errGaveUp struct{ msg string }

func (e errGaveUp) Error() string { return e.msg }

// reconcileVolume does what reconciler.mountOrAttachVolumes does for one volume of the pod, again
// and again (every loopPeriod, as the reconciler's loop) until the actual state of the world
// needs nothing more for it: VerifyControllerAttachedVolume, MountVolume (MapVolume for a block
// volume; with isRemount when a remount is required) or ExpandInUseVolume. A MountVolume or
// ExpandInUseVolume that fails is not started again: errGaveUp.
func (h *harness) reconcileVolume(podVolume string) error {
	deadline := time.Now().Add(stepDeadline)
	started := 0
	for {
		if time.Now().After(deadline) {
			return fmt.Errorf("volume %s: not reconciled within %s (%d operations started)", podVolume, stepDeadline, started)
		}
		vtm, ok := h.volumeToMount(podVolume)
		if !ok {
			return fmt.Errorf("volume %s is not in the desired state of world", podVolume)
		}
		if h.oe.IsOperationPending(vtm.VolumeName, nestedpendingoperations.EmptyUniquePodName, nestedpendingoperations.EmptyNodeName) {
			time.Sleep(loopPeriod)
			continue
		}
		mounted, devicePath, err := podExistsInVolume(h.asw, vtm.PodName, vtm.VolumeName, desiredSize(vtm), vtm.SELinuxLabel)
		vtm.DevicePath = devicePath
		var opErr error
		var op string
		driverOp := true
		switch {
		case cache.IsSELinuxMountMismatchError(err):
			return fmt.Errorf("volume %s: %v", podVolume, err)
		case cache.IsVolumeNotAttachedError(err):
			if vtm.PluginIsAttachable && !vtm.ReportedInUse {
				time.Sleep(loopPeriod)
				continue
			}
			op, driverOp = "VerifyControllerAttachedVolume", false
			opErr = verifyAttached(h, vtm)
		case !mounted || cache.IsRemountRequiredError(err):
			isRemount := cache.IsRemountRequiredError(err)
			op = fmt.Sprintf("MountVolume(isRemount=%v)", isRemount)
			opErr = h.oe.MountVolume(waitForAttachTimeout, vtm.VolumeToMount, h.asw, isRemount)
		case cache.IsFSResizeRequiredError(err):
			current := err.(cache.FsResizeRequiredError).CurrentSize
			op = fmt.Sprintf("ExpandInUseVolume(currentSize=%s, desired=%s)", current.String(), sizeString(desiredSize(vtm)))
			opErr = h.oe.ExpandInUseVolume(vtm.VolumeToMount, h.asw, current)
		default:
			h.logf("volume %s (%s): in the actual state of world as desired", podVolume, vtm.VolumeName)
			return nil
		}
		if opErr != nil {
			if !isExpectedError(opErr) {
				h.logf("volume %s: %s not started: %v", podVolume, op, opErr)
			}
			time.Sleep(loopPeriod)
			continue
		}
		started++
		h.logf("volume %s (%s): operationExecutor.%s started (SELinuxLabel %q, devicePath %q)", podVolume, vtm.VolumeName, op, vtm.SELinuxLabel, vtm.DevicePath)
		h.waitOperation(vtm.VolumeName)
		if !driverOp {
			continue
		}
		// Did it do what it was started for?
		mounted2, _, err2 := podExistsInVolume(h.asw, vtm.PodName, vtm.VolumeName, desiredSize(vtm), vtm.SELinuxLabel)
		if mounted2 == mounted && ((err2 == nil) == (err == nil)) && (err2 == nil || err2.Error() == err.Error()) {
			return errGaveUp{fmt.Sprintf("volume %s: operationExecutor.%s failed (events above); not started again "+
				"(kubelet's reconciler retries it with exponential backoff, 500 ms doubling up to 2 min 2 s, while the pod exists)", podVolume, op)}
		}
	}
}

func isExpectedError(err error) bool {
	return nestedpendingoperations.IsAlreadyExists(err) || isExponentialBackoff(err) || operationexecutor.IsMountFailedPreconditionError(err)
}

func (h *harness) waitOperation(name v1.UniqueVolumeName) {
	for h.oe.IsOperationPending(name, nestedpendingoperations.EmptyUniquePodName, nestedpendingoperations.EmptyNodeName) ||
		h.oe.IsOperationPending(name, h.podName, nestedpendingoperations.EmptyNodeName) {
		time.Sleep(20 * time.Millisecond)
	}
}

// --- phase 2: publish ---------------------------------------------------------------------------

func (h *harness) phasePublish() error {
	h.pods.mu.Lock()
	h.pods.pods = []*v1.Pod{h.pod}
	h.pods.mu.Unlock()
	h.logf("pod %s/%s (uid %s) given to the populator (kubelet's pod manager); its volumes: %s", h.pod.Namespace, h.pod.Name, h.pod.UID, podVolumeList(h.pod))
	if err := waitFor(30*time.Second, "the populator adding the pod's volumes", func() (bool, error) {
		for _, v := range h.pod.Spec.Volumes {
			if _, ok := h.volumeToMount(v.Name); !ok {
				return false, nil
			}
		}
		return true, nil
	}); err != nil {
		return err
	}
	h.volNames = map[string]v1.UniqueVolumeName{}
	var attachable []v1.UniqueVolumeName
	for _, v := range h.pod.Spec.Volumes {
		vtm, _ := h.volumeToMount(v.Name)
		plugin, _ := h.plugMgr.FindPluginBySpec(vtm.VolumeSpec)
		pluginName := ""
		if plugin != nil {
			pluginName = plugin.GetPluginName()
		}
		h.logf("desired state: volume %s -> %s (plugin %s, attachable %v, device-mountable %v, SELinuxLabel %q, desired size %s)",
			v.Name, vtm.VolumeName, pluginName, vtm.PluginIsAttachable, vtm.PluginIsDeviceMountable, vtm.SELinuxLabel, sizeString(desiredSize(vtm)))
		if pluginName != csi.CSIPluginName {
			h.logf("volume %s: not the CSI plugin's; left unmounted by this harness (kubelet would mount it; it sends nothing to the driver)", v.Name)
			continue
		}
		h.volNames[v.Name] = vtm.VolumeName
		h.csiVols = append(h.csiVols, v.Name)
		if vtm.PluginIsAttachable {
			attachable = append(attachable, vtm.VolumeName)
		}
	}
	// What kubelet's node status loop and the attach/detach controller do meanwhile: kubelet
	// reports the attachable volumes in use (node.status.volumesInUse, and MarkVolumesReportedInUse),
	// the controller attaches them (the VolumeAttachments exist already) and lists them in
	// node.status.volumesAttached with an empty device path, as it does for CSI.
	node := h.getNode()
	for _, name := range attachable {
		node.Status.VolumesInUse = append(node.Status.VolumesInUse, name)
		node.Status.VolumesAttached = append(node.Status.VolumesAttached, v1.AttachedVolume{Name: name, DevicePath: ""})
	}
	node, err := h.client.CoreV1().Nodes().UpdateStatus(context.TODO(), node, metav1.UpdateOptions{})
	if err != nil {
		return err
	}
	setNodeForHost(h.host, node)
	h.dsw.MarkVolumesReportedInUse(attachable)
	h.logf("node status: volumesInUse and volumesAttached %v", attachable)
	for _, name := range h.csiVols {
		h.logf("-- volume %s", name)
		if err := h.reconcileVolume(name); err != nil {
			if _, ok := err.(errGaveUp); !ok {
				return err
			}
			h.logf("%v; left out of the later phases", err)
			h.failedVols = append(h.failedVols, name)
		}
		h.settleRecord()
		h.logOwnership(name)
	}
	h.copyFiles("files-after-publish")
	return nil
}

// logOwnership: the group and mode of the volume's target directory after publish, in the
// harness log and, one line per CSI volume in the pod's order, in ownership-after-publish.txt
// ("<volume> <target, relative to the root> gid=<gid> mode=<permission bits, octal>", or
// "<volume> not-mounted"). kubelet applies the pod's fsGroup itself (volume.SetVolumeOwnership
// after NodePublishVolume, when the CSIDriver's fsGroupPolicy lets it) unless the driver has
// VOLUME_MOUNT_GROUP, when the driver gets the group (volume_mount_group) and applies it. Either
// way the group and the setgid bit show on the directory. Neither the fake mounter nor the fake
// host util takes part: the directory is real, and it is what the harness reads.
func (h *harness) logOwnership(name string) {
	line := name + " not-mounted"
	defer func() {
		f, err := os.OpenFile(filepath.Join(h.out, "ownership-after-publish.txt"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0644)
		if err != nil {
			h.t.Fatal(err)
		}
		defer f.Close()
		fmt.Fprintln(f, line)
	}()
	var fsGroup *int64
	if h.pod.Spec.SecurityContext != nil {
		fsGroup = h.pod.Spec.SecurityContext.FSGroup
	}
	for _, mv := range h.asw.GetMountedVolumesForPod(h.podName) {
		if mv.VolumeName != h.volNames[name] || mv.Mounter == nil {
			continue
		}
		dir := mv.Mounter.GetPath()
		fi, err := os.Stat(dir)
		if err != nil {
			h.logf("ownership: volume %s: %v", name, err)
			return
		}
		st := fi.Sys().(*syscall.Stat_t)
		rel := strings.TrimPrefix(dir, h.root+"/")
		line = fmt.Sprintf("%s %s gid=%d mode=%04o", name, rel, st.Gid, st.Mode&07777)
		verdict := "no fsGroup in the pod"
		if fsGroup != nil {
			verdict = "the pod's fsGroup not applied (group and setgid bit untouched)"
			if int64(st.Gid) == *fsGroup && fi.Mode()&os.ModeSetgid != 0 {
				verdict = fmt.Sprintf("the pod's fsGroup %d applied (by kubelet, or by the driver when it was given volume_mount_group)", *fsGroup)
			}
		}
		h.logf("ownership: volume %s: target %s: uid %d gid %d mode %s: %s", name, rel, st.Uid, st.Gid, fi.Mode(), verdict)
		return
	}
	h.logf("ownership: volume %s: not mounted", name)
}

func (h *harness) publishedVols() []string {
	var vols []string
	for _, name := range h.csiVols {
		failed := false
		for _, f := range h.failedVols {
			failed = failed || f == name
		}
		if !failed {
			vols = append(vols, name)
		}
	}
	return vols
}

// blockNote: for a block volume, the operation executor runs the Unmap variant.
func blockNote(spec *volume.Spec, op string) string {
	if fs, err := util.CheckVolumeModeFilesystem(spec); err == nil && !fs {
		return " (a block volume: the executor's " + op + ")"
	}
	return ""
}

func podVolumeList(pod *v1.Pod) string {
	var names []string
	for _, v := range pod.Spec.Volumes {
		names = append(names, v.Name)
	}
	return strings.Join(names, ", ")
}

// --- phase 3: stats -----------------------------------------------------------------------------

func (h *harness) phaseStats() error {
	if err := setGate("CSIVolumeHealth", true); err != nil {
		return err
	}
	defer func() {
		if err := setGate("CSIVolumeHealth", false); err != nil {
			h.logf("CSIVolumeHealth back off: %v", err)
		}
	}()
	h.logf("CSIVolumeHealth on for this phase (%s)", gateSummary())
	mounted := map[v1.UniqueVolumeName]cache.MountedVolume{}
	for _, mv := range h.asw.GetMountedVolumesForPod(h.podName) {
		mounted[mv.VolumeName] = mv
	}
	for _, name := range h.publishedVols() {
		mv, ok := mounted[h.volNames[name]]
		if !ok {
			return fmt.Errorf("volume %s is not mounted", name)
		}
		// As kubelet's ListVolumesForPod / ListBlockVolumesForPod and the stats package's
		// volumeStatCalculator.calcAndStoreStats call them.
		var provider volume.MetricsProvider
		kind := ""
		if mv.Mounter != nil {
			provider, kind = mv.Mounter, "Mounter"
		} else if mv.BlockVolumeMapper != nil {
			if mp, ok := mv.BlockVolumeMapper.(volume.MetricsProvider); ok && mv.BlockVolumeMapper.SupportsMetrics() {
				provider, kind = mp, "BlockVolumeMapper"
			}
		}
		if provider == nil {
			h.logf("volume %s: no metrics provider", name)
			continue
		}
		m, err := provider.GetMetrics()
		if err != nil {
			h.logf("volume %s: %s.GetMetrics: error %v", name, kind, err)
			continue
		}
		h.logf("volume %s: %s.GetMetrics: %s", name, kind, describeMetrics(m))
	}
	h.settleRecord()
	if what := probeHealth(h); what != "" {
		h.logf("%s", what)
	}
	return nil
}

func describeMetrics(m *volume.Metrics) string {
	q := func(x *resource.Quantity) string {
		if x == nil {
			return "-"
		}
		return x.String()
	}
	s := fmt.Sprintf("capacity %s used %s available %s inodes %s inodesUsed %s inodesFree %s",
		q(m.Capacity), q(m.Used), q(m.Available), q(m.Inodes), q(m.InodesUsed), q(m.InodesFree))
	return s + metricsHealth(m)
}

// --- phase 4: expand ----------------------------------------------------------------------------

func (h *harness) phaseExpand() error {
	if h.sc.Name != "demo" {
		return h.phaseExpandFromFile()
	}
	const claim, pvName = "demo-data", "pv-demo-data"
	ns := h.pod.Namespace
	two := resource.MustParse("2Gi")
	// What the external resizer leaves: the PV grown, the claim's request 2Gi, its status
	// capacity still 1Gi, allocatedResources 2Gi and NodeResizePending.
	pv, err := h.client.CoreV1().PersistentVolumes().Get(context.TODO(), pvName, metav1.GetOptions{})
	if err != nil {
		return err
	}
	pv.Spec.Capacity[v1.ResourceStorage] = two
	if _, err := h.client.CoreV1().PersistentVolumes().Update(context.TODO(), pv, metav1.UpdateOptions{}); err != nil {
		return err
	}
	pvc, err := h.client.CoreV1().PersistentVolumeClaims(ns).Get(context.TODO(), claim, metav1.GetOptions{})
	if err != nil {
		return err
	}
	pvc.Spec.Resources.Requests[v1.ResourceStorage] = two
	pvc.Status.AllocatedResources = v1.ResourceList{v1.ResourceStorage: two}
	h.logf("PVC %s: %s", claim, setNodeResizePending(pvc))
	if pvc, err = h.client.CoreV1().PersistentVolumeClaims(ns).Update(context.TODO(), pvc, metav1.UpdateOptions{}); err != nil {
		return err
	}
	if _, err = h.client.CoreV1().PersistentVolumeClaims(ns).UpdateStatus(context.TODO(), pvc, metav1.UpdateOptions{}); err != nil {
		return err
	}
	h.logf("PV %s capacity 2Gi; PVC %s/%s requests 2Gi, status.capacity 1Gi, allocatedResources 2Gi, allocatedResourceStatuses NodeResizePending", pvName, ns, claim)
	// The populator's processPodVolumes for this volume when kubelet next syncs the pod
	// (createVolumeSpec from the PVC and PV read again, AddPodToVolume, checkVolumeFSResize:
	// UpdatePersistentVolumeSize(PV capacity), InitializeClaimSize(PVC status capacity)), but not
	// its MarkRemountRequired: see README (a requiresRepublish driver's resize comes with a remount).
	pvc, err = h.client.CoreV1().PersistentVolumeClaims(ns).Get(context.TODO(), claim, metav1.GetOptions{})
	if err != nil {
		return err
	}
	pv, err = h.client.CoreV1().PersistentVolumes().Get(context.TODO(), pvc.Spec.VolumeName, metav1.GetOptions{})
	if err != nil {
		return err
	}
	var podVol *v1.Volume
	for i := range h.pod.Spec.Volumes {
		if h.pod.Spec.Volumes[i].Name == "data" {
			podVol = &h.pod.Spec.Volumes[i]
		}
	}
	spec := volume.NewSpecFromPersistentVolume(pv, podVol.PersistentVolumeClaim.ReadOnly)
	gid := pv.Annotations[util.VolumeGidAnnotationKey]
	name, err := addPodToVolume(h.dsw, h.podName, h.pod, spec, "data", gid, podSELinuxContexts(h.pod)["data"])
	if err != nil {
		return err
	}
	updatePVSize(h.dsw, name, pv.Spec.Capacity.Storage().DeepCopy())
	initClaimSize(h.asw, name, pvc.Status.Capacity.Storage().DeepCopy())
	h.logf("desired state: volume data desired size %s", pv.Spec.Capacity.Storage().String())
	if err := h.reconcileVolume("data"); err != nil {
		return err
	}
	pvc, err = h.client.CoreV1().PersistentVolumeClaims(ns).Get(context.TODO(), claim, metav1.GetOptions{})
	if err != nil {
		return err
	}
	pvc.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "PersistentVolumeClaim"}
	h.writeJSON("pvc-after-expand.json", pvc)
	return nil
}

// phaseExpandFromFile: the expand phase of a scenario whose resized objects are a file
// (scenario.json resized_objects): the claim of the pod volume named by the phase's --volume=
// argument and its PV are updated to that file's (the PV's spec, the claim's spec and status),
// then the populator's steps and the reconciler's resize branch as for the demo.
func (h *harness) phaseExpandFromFile() error {
	podVolName := ""
	for _, p := range h.sc.Phases {
		if p.Phase == "expand" {
			for _, a := range p.Args {
				if strings.HasPrefix(a, "--volume=") {
					podVolName = strings.TrimPrefix(a, "--volume=")
				}
			}
		}
	}
	var podVol *v1.Volume
	for i := range h.pod.Spec.Volumes {
		if h.pod.Spec.Volumes[i].Name == podVolName {
			podVol = &h.pod.Spec.Volumes[i]
		}
	}
	if podVol == nil || podVol.PersistentVolumeClaim == nil {
		return fmt.Errorf("expand: no claim volume %q in the pod", podVolName)
	}
	claim, ns := podVol.PersistentVolumeClaim.ClaimName, h.pod.Namespace
	data, err := os.ReadFile(filepath.Join(h.scDir, h.sc.ResizedObjects))
	if err != nil {
		return err
	}
	_ = os.WriteFile(filepath.Join(h.out, "objects", h.sc.ResizedObjects), data, 0644)
	var newPVC *v1.PersistentVolumeClaim
	var newPV *v1.PersistentVolume
	newPVs := map[string]*v1.PersistentVolume{}
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for {
		doc, err := reader.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		if len(bytes.TrimSpace(stripComments(doc))) == 0 {
			continue
		}
		obj, _, err := scheme.Codecs.UniversalDeserializer().Decode(doc, nil, nil)
		if err != nil {
			return err
		}
		defaults.Default(obj)
		switch o := obj.(type) {
		case *v1.PersistentVolumeClaim:
			if o.Name == claim {
				newPVC = o
			}
		case *v1.PersistentVolume:
			newPVs[o.Name] = o
		}
	}
	if newPVC == nil {
		return fmt.Errorf("expand: %s has no claim %s", h.sc.ResizedObjects, claim)
	}
	pvc, err := h.client.CoreV1().PersistentVolumeClaims(ns).Get(context.TODO(), claim, metav1.GetOptions{})
	if err != nil {
		return err
	}
	pv, err := h.client.CoreV1().PersistentVolumes().Get(context.TODO(), pvc.Spec.VolumeName, metav1.GetOptions{})
	if err != nil {
		return err
	}
	newPV = newPVs[pv.Name]
	if newPV == nil {
		return fmt.Errorf("expand: %s has no PV %s", h.sc.ResizedObjects, pv.Name)
	}
	pv.Spec = newPV.Spec
	if _, err := h.client.CoreV1().PersistentVolumes().Update(context.TODO(), pv, metav1.UpdateOptions{}); err != nil {
		return err
	}
	pvc.Spec = newPVC.Spec
	pvc.Status = newPVC.Status
	if newPVC.Status.AllocatedResources == nil {
		pvc.Status.AllocatedResources = nil
	}
	resizeNote := setNodeResizePending(pvc)
	if pvc, err = h.client.CoreV1().PersistentVolumeClaims(ns).Update(context.TODO(), pvc, metav1.UpdateOptions{}); err != nil {
		return err
	}
	if _, err = h.client.CoreV1().PersistentVolumeClaims(ns).UpdateStatus(context.TODO(), pvc, metav1.UpdateOptions{}); err != nil {
		return err
	}
	status, _ := json.Marshal(pvc.Status)
	h.logf("PV %s capacity %s; PVC %s/%s requests %s, status %s (%s), from %s", pv.Name, pv.Spec.Capacity.Storage().String(),
		ns, claim, pvc.Spec.Resources.Requests.Storage().String(), status, resizeNote, h.sc.ResizedObjects)
	pvc, err = h.client.CoreV1().PersistentVolumeClaims(ns).Get(context.TODO(), claim, metav1.GetOptions{})
	if err != nil {
		return err
	}
	pv, err = h.client.CoreV1().PersistentVolumes().Get(context.TODO(), pvc.Spec.VolumeName, metav1.GetOptions{})
	if err != nil {
		return err
	}
	spec := volume.NewSpecFromPersistentVolume(pv, podVol.PersistentVolumeClaim.ReadOnly)
	gid := pv.Annotations[util.VolumeGidAnnotationKey]
	name, err := addPodToVolume(h.dsw, h.podName, h.pod, spec, podVolName, gid, podSELinuxContexts(h.pod)[podVolName])
	if err != nil {
		return err
	}
	updatePVSize(h.dsw, name, pv.Spec.Capacity.Storage().DeepCopy())
	initClaimSize(h.asw, name, pvc.Status.Capacity.Storage().DeepCopy())
	h.logf("desired state: volume %s desired size %s", podVolName, pv.Spec.Capacity.Storage().String())
	if err := h.reconcileVolume(podVolName); err != nil {
		return err
	}
	pvc, err = h.client.CoreV1().PersistentVolumeClaims(ns).Get(context.TODO(), claim, metav1.GetOptions{})
	if err != nil {
		return err
	}
	pvc.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "PersistentVolumeClaim"}
	h.writeJSON("pvc-after-expand.json", pvc)
	return nil
}

// --- phase 5: republish -------------------------------------------------------------------------

func (h *harness) phaseRepublish() error {
	// A pod sync: WaitForAttachAndMount -> populator.ReprocessPod; the populator then adds the
	// pod's volumes again and marks those of a requiresRepublish driver remount-required.
	h.pop.ReprocessPod(h.podName)
	h.logf("populator.ReprocessPod(%s), as a pod sync does", h.podName)
	if err := waitFor(10*time.Second, "remount required for every CSI volume", func() (bool, error) {
		for _, name := range h.publishedVols() {
			vtm, ok := h.volumeToMount(name)
			if !ok {
				return false, nil
			}
			_, _, err := podExistsInVolume(h.asw, vtm.PodName, vtm.VolumeName, desiredSize(vtm), vtm.SELinuxLabel)
			if !cache.IsRemountRequiredError(err) {
				return false, fmt.Errorf("volume %s: %v", name, err)
			}
		}
		return true, nil
	}); err != nil {
		h.logf("%v (reconciling anyway)", err)
	}
	for _, name := range h.publishedVols() {
		h.logf("-- volume %s", name)
		if err := h.reconcileVolume(name); err != nil {
			return err
		}
		h.settleRecord()
	}
	return nil
}

// --- phase 6: unpublish -------------------------------------------------------------------------

func (h *harness) phaseUnpublish() error {
	// The pod is deleted and its containers have stopped: the populator removes its volumes from
	// the desired state of world.
	h.pods.mu.Lock()
	h.pods.pods = nil
	h.pods.removed[h.pod.UID] = true
	h.pods.mu.Unlock()
	if err := waitFor(30*time.Second, "the populator removing the pod's volumes", func() (bool, error) {
		for _, v := range h.dsw.GetVolumesToMount() {
			if v.PodName == h.podName {
				return false, nil
			}
		}
		return true, nil
	}); err != nil {
		return err
	}
	h.logf("pod removed from the pod manager; the populator removed its volumes from the desired state")
	podsDir := filepath.Join(h.root, "pods")
	// reconciler.unmountVolumes, one volume at a time.
	for _, name := range h.csiVols {
		h.logf("-- volume %s", name)
		uv := h.volNames[name]
		deadline := time.Now().Add(stepDeadline)
		for {
			var mv *cache.MountedVolume
			for _, m := range h.asw.GetAllMountedVolumes() {
				if m.PodName == h.podName && m.VolumeName == uv {
					m := m
					mv = &m
				}
			}
			if mv == nil {
				h.logf("volume %s: no longer mounted for the pod", name)
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("volume %s: not unmounted within %s", name, stepDeadline)
			}
			if h.oe.IsOperationPending(uv, h.podName, nestedpendingoperations.EmptyNodeName) {
				time.Sleep(loopPeriod)
				continue
			}
			if dswPodExistsInVolume(h.dsw, h.podName, uv, mv.SELinuxMountContext) {
				return fmt.Errorf("volume %s: still desired", name)
			}
			if err := h.oe.UnmountVolume(mv.MountedVolume, h.asw, podsDir); err != nil {
				if !isExpectedError(err) {
					h.logf("volume %s: UnmountVolume not started: %v", name, err)
				}
				time.Sleep(loopPeriod)
				continue
			}
			h.logf("volume %s: operationExecutor.UnmountVolume started%s", name, blockNote(mv.VolumeSpec, "UnmapVolume"))
			h.waitOperation(uv)
		}
		h.settleRecord()
	}
	// reconciler.unmountDetachDevices, one volume at a time.
	hu := h.kubeletHost.GetHostUtil()
	for _, name := range h.csiVols {
		uv := h.volNames[name]
		deadline := time.Now().Add(stepDeadline)
		for {
			var av *cache.AttachedVolume
			for _, a := range h.asw.GetUnmountedVolumes() {
				if a.VolumeName == uv {
					a := a
					av = &a
				}
			}
			if av == nil {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("volume %s: device not unmounted within %s", name, stepDeadline)
			}
			if dswVolumeExists(h.dsw, uv, av.SELinuxMountContext) || h.oe.IsOperationPending(uv, nestedpendingoperations.EmptyUniquePodName, nestedpendingoperations.EmptyNodeName) {
				time.Sleep(loopPeriod)
				continue
			}
			if a, ok := getAttachedVolume(h.asw, uv); ok {
				av = &a
			}
			if av.DeviceMayBeMounted() {
				if err := h.oe.UnmountDevice(av.AttachedVolume, h.asw, hu); err != nil {
					if !isExpectedError(err) {
						h.logf("volume %s: UnmountDevice not started: %v", name, err)
					}
					time.Sleep(loopPeriod)
					continue
				}
				h.logf("volume %s: operationExecutor.UnmountDevice started%s", name, blockNote(av.VolumeSpec, "UnmapDevice"))
				h.waitOperation(uv)
				continue
			}
			h.asw.MarkVolumeAsDetached(uv, nodeName)
			h.logf("volume %s: marked detached (the attach/detach controller detaches it)", name)
			break
		}
		h.settleRecord()
	}
	h.copyFiles("files-after-unpublish")
	h.listDirs("dirs-after-unpublish.txt")
	return nil
}

// listDirs writes the directories left under plugins/kubernetes.io/csi (paths relative to kubelet's
// root, one a line, sorted; an empty file if none), e.g. the empty globalmount/ that 1.34 and later
// leave for a driver without STAGE_UNSTAGE_VOLUME.
func (h *harness) listDirs(name string) {
	base := filepath.Join(h.root, "plugins", "kubernetes.io", "csi")
	var dirs []string
	_ = filepath.WalkDir(base, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() || path == base {
			return nil
		}
		rel, _ := filepath.Rel(h.root, path)
		entries, _ := os.ReadDir(path)
		dirs = append(dirs, rel)
		h.logf("%s: %s left (%d entries)", name, rel, len(entries))
		return nil
	})
	sort.Strings(dirs)
	text := ""
	for _, d := range dirs {
		text += d + "\n"
	}
	if len(dirs) == 0 {
		h.logf("%s: no directory left under plugins/kubernetes.io/csi", name)
	}
	if err := os.WriteFile(filepath.Join(h.out, name), []byte(text), 0644); err != nil {
		h.t.Error(err)
	}
}

// --- output -------------------------------------------------------------------------------------

func (h *harness) normalize(data []byte) []byte {
	return bytes.ReplaceAll(data, []byte(h.root), []byte(goldenRoot))
}

// writeJSON writes an object as the API server would serve it. A zero creationTimestamp (the fake
// clientset sets none) is left out: apimachinery before 1.33 writes it as null, later ones omit it.
func (h *harness) writeJSON(name string, obj interface{}) {
	data, err := json.Marshal(obj)
	if err != nil {
		h.t.Fatal(err)
	}
	var generic map[string]interface{}
	if err := json.Unmarshal(data, &generic); err != nil {
		h.t.Fatal(err)
	}
	if meta, ok := generic["metadata"].(map[string]interface{}); ok {
		if ts, ok := meta["creationTimestamp"]; ok && ts == nil {
			delete(meta, "creationTimestamp")
		}
	}
	data, err = json.MarshalIndent(generic, "", "  ")
	if err != nil {
		h.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(h.out, name), append(h.normalize(data), '\n'), 0644); err != nil {
		h.t.Fatal(err)
	}
}

// copyFiles copies every regular file under the kubelet root, keeping relative paths, except
// those the driver wrote into its own directories (a target's mount/, a staging globalmount/, a
// block volume's staging directory and publish file), which are only listed.
func (h *harness) copyFiles(dirName string) {
	dst := filepath.Join(h.out, dirName)
	var copied []string
	err := filepath.WalkDir(h.root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(h.root, path)
		if d.IsDir() || !d.Type().IsRegular() {
			if !d.IsDir() && rel != "." {
				h.logf("%s: %s is not a regular file (%s); not copied", dirName, rel, d.Type())
			}
			return nil
		}
		if driverWritten(rel) {
			h.skipped = append(h.skipped, dirName+": "+rel+" (the driver's)")
			h.logf("%s: %s is the driver's; not copied", dirName, rel)
			return nil
		}
		if deviceBindTarget(rel) {
			h.skipped = append(h.skipped, dirName+": "+rel+" (kubelet's bind mount of the device; an empty file here)")
			h.logf("%s: %s is where kubelet bind-mounts the device (an empty file in this harness); not copied", dirName, rel)
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		if err := os.MkdirAll(filepath.Dir(target), 0755); err != nil {
			return err
		}
		copied = append(copied, rel)
		return os.WriteFile(target, h.normalize(data), 0644)
	})
	if err != nil {
		h.logf("%s: %v", dirName, err)
	}
	if len(copied) == 0 {
		h.logf("%s: no regular file of kubelet's to copy", dirName)
	} else {
		h.logf("%s: copied %s", dirName, strings.Join(copied, ", "))
	}
	if len(copied) == 0 {
		_ = os.MkdirAll(dst, 0755)
	}
}

// plugins/kubernetes.io/csi/volumeDevices/<pv>/dev/<pod uid>: MapBlockVolume's bind mount of the
// device.
func deviceBindTarget(rel string) bool {
	parts := strings.Split(filepath.ToSlash(rel), "/")
	n := len(parts)
	return n >= 4 && parts[n-2] == "dev" && parts[n-4] == "volumeDevices"
}

func driverWritten(rel string) bool {
	parts := strings.Split(filepath.ToSlash(rel), "/")
	for i, p := range parts[:len(parts)-1] {
		if p == "mount" || p == "globalmount" {
			return true
		}
		if p == "volumeDevices" && i+1 < len(parts)-1 && (parts[i+1] == "staging" || parts[i+1] == "publish") {
			return true
		}
	}
	return false
}

func (h *harness) writeGolden() {
	data, err := os.ReadFile(h.record)
	if err != nil {
		h.logf("no driver record: %v", err)
	}
	if err := os.WriteFile(filepath.Join(h.out, "record.jsonl"), canonicalRecord(h.t, h.normalize(data)), 0644); err != nil {
		h.t.Error(err)
	}
	phases := map[string]interface{}{
		"convention": "1-based inclusive line numbers of record.jsonl; [n, n-1] is an empty phase",
	}
	for _, p := range h.phases {
		phases[p.name] = []int{p.first, p.last}
	}
	h.writeJSON("phases.json", phases)
	sort.Strings(h.skipped)
	if err := os.WriteFile(filepath.Join(h.out, "files-skipped.txt"),
		h.normalize([]byte(strings.Join(h.skipped, "\n")+"\n")), 0644); err != nil {
		h.t.Error(err)
	}
	h.logMu.Lock()
	_ = h.logW.Sync()
	h.logMu.Unlock()
	logData, _ := os.ReadFile(h.logW.Name())
	if err := os.WriteFile(filepath.Join(h.out, "harness-log.txt"), h.normalize(logData), 0644); err != nil {
		h.t.Error(err)
	}
}

// Protobuf map fields of the requests: kubelet fills them from Go maps, so their order on the wire
// (and in the driver's record) changes from run to run. canonicalRecord sorts their keys and keeps
// everything else of each line as the driver wrote it.
var mapFields = map[string]bool{"volume_context": true, "publish_context": true, "secrets": true, "parameters": true}

type jsonKV struct {
	key   string
	value interface{}
}

type jsonObject []jsonKV

func canonicalRecord(t *testing.T, data []byte) []byte {
	var out bytes.Buffer
	for _, line := range strings.SplitAfter(string(data), "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		dec := json.NewDecoder(strings.NewReader(line))
		dec.UseNumber()
		v, err := decodeOrdered(dec)
		if err != nil {
			t.Errorf("record line %q: %v", line, err)
			out.WriteString(line)
			continue
		}
		encodeOrdered(&out, v, false)
		out.WriteString("\n")
	}
	return out.Bytes()
}

func decodeOrdered(dec *json.Decoder) (interface{}, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch tok {
	case json.Delim('{'):
		var obj jsonObject
		for dec.More() {
			k, err := dec.Token()
			if err != nil {
				return nil, err
			}
			v, err := decodeOrdered(dec)
			if err != nil {
				return nil, err
			}
			obj = append(obj, jsonKV{k.(string), v})
		}
		_, err := dec.Token()
		return obj, err
	case json.Delim('['):
		list := []interface{}{}
		for dec.More() {
			v, err := decodeOrdered(dec)
			if err != nil {
				return nil, err
			}
			list = append(list, v)
		}
		_, err := dec.Token()
		return list, err
	}
	return tok, nil
}

func encodeOrdered(out *bytes.Buffer, v interface{}, sortKeys bool) {
	switch x := v.(type) {
	case jsonObject:
		if sortKeys {
			x = append(jsonObject(nil), x...)
			sort.SliceStable(x, func(i, j int) bool { return x[i].key < x[j].key })
		}
		out.WriteByte('{')
		for i, kv := range x {
			if i > 0 {
				out.WriteByte(',')
			}
			out.Write(marshalString(kv.key))
			out.WriteByte(':')
			encodeOrdered(out, kv.value, mapFields[kv.key])
		}
		out.WriteByte('}')
	case []interface{}:
		out.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				out.WriteByte(',')
			}
			encodeOrdered(out, e, false)
		}
		out.WriteByte(']')
	case json.Number:
		out.WriteString(x.String())
	case string:
		out.Write(marshalString(x))
	default:
		b, _ := json.Marshal(x)
		out.Write(b)
	}
}

func marshalString(s string) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// unmountLeftovers unmounts what a failed run left mounted under the scratch directory.
func (h *harness) unmountLeftovers() {
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return
	}
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) > 4 && strings.HasPrefix(f[4], h.scratch+"/") {
			err := syscall.Unmount(f[4], syscall.MNT_DETACH)
			h.t.Logf("left mounted: %s; unmounted: %v", f[4], err)
		}
	}
}

// --- helpers that are the same in every release read -------------------------------------------

// pathHandler is kubelet's BlockVolumePathHandler (pkg/volume/util/volumepathhandler) without
// mounts and loop devices: MapDevice makes the same directory and, for a bind mount, the same empty
// file that kubelet would bind-mount the device on (left a plain file here), and for a link the same
// symlink; UnmapDevice and RemoveMapPath remove them as kubelet does. Loop devices
// (AttachFileDevice, which holds the device open) and the bind-mount queries are
// volumetesting.FakeVolumePathHandler's.
type pathHandler struct {
	volumetest.FakeVolumePathHandler
}

func (p *pathHandler) MapDevice(devicePath, mapPath, linkName string, bindMount bool) error {
	if devicePath == "" || mapPath == "" || !filepath.IsAbs(mapPath) {
		return fmt.Errorf("MapDevice: bad arguments %q %q", devicePath, mapPath)
	}
	if err := os.MkdirAll(mapPath, 0750); err != nil {
		return err
	}
	linkPath := filepath.Join(mapPath, linkName)
	if bindMount {
		f, err := os.OpenFile(linkPath, os.O_CREATE|os.O_RDWR, 0750)
		if err != nil {
			return err
		}
		return f.Close()
	}
	if err := os.Remove(linkPath); err != nil && !os.IsNotExist(err) {
		return err
	}
	return os.Symlink(devicePath, linkPath)
}

func (p *pathHandler) UnmapDevice(mapPath, linkName string, bindMount bool) error {
	if err := os.Remove(filepath.Join(mapPath, linkName)); err != nil && !os.IsNotExist(err) {
		return err
	}
	return nil
}

func (p *pathHandler) RemoveMapPath(mapPath string) error {
	if err := os.RemoveAll(mapPath); err != nil && !os.IsNotExist(err) {
		return err
	}
	return nil
}

func isExponentialBackoff(err error) bool { return exponentialbackoff.IsExponentialBackoff(err) }

func gateKnown(name string) bool {
	_, ok := utilfeature.DefaultMutableFeatureGate.GetAll()[featuregate.Feature(name)]
	return ok
}

func gateEnabled(name string) bool {
	return utilfeature.DefaultFeatureGate.Enabled(featuregate.Feature(name))
}

func setGate(name string, on bool) error {
	return utilfeature.DefaultMutableFeatureGate.SetFromMap(map[string]bool{name: on})
}

// setNodeForHost gives the fake kubelet volume host the Node (its GetAttachedVolumesFromNodeStatus
// reads node.status.volumesAttached from it, as kubelet's reads its node lister).
func setNodeForHost(host volumetest.FakeVolumeHost, node *v1.Node) {
	m := reflect.ValueOf(host).MethodByName("WithNode")
	if !m.IsValid() {
		panic("the fake kubelet volume host has no WithNode")
	}
	m.Call([]reflect.Value{reflect.ValueOf(node)})
}

// setNodeResizePending: status.allocatedResourceStatuses {storage: NodeResizePending} (1.28+);
// 1.26 and 1.27's API has instead status.resizeStatus, whose NodeExpansionPending is set.
func setNodeResizePending(pvc *v1.PersistentVolumeClaim) string {
	st := reflect.ValueOf(&pvc.Status).Elem()
	if f := st.FieldByName("AllocatedResourceStatuses"); f.IsValid() {
		m := reflect.MakeMap(f.Type())
		m.SetMapIndex(reflect.ValueOf(v1.ResourceStorage).Convert(f.Type().Key()),
			reflect.ValueOf("NodeResizePending").Convert(f.Type().Elem()))
		f.Set(m)
		return "allocatedResourceStatuses NodeResizePending"
	}
	if f := st.FieldByName("ResizeStatus"); f.IsValid() {
		v := reflect.New(f.Type().Elem())
		v.Elem().SetString("NodeExpansionPending")
		f.Set(v)
		return "resizeStatus NodeExpansionPending (this release's API has no allocatedResourceStatuses)"
	}
	return "no resize status field in this release's API"
}

// --- calls whose signatures vary, made by reflection where a shim per variant would multiply ----

// callVarying calls fn (a func value or a bound method) with args, putting klog.Background() first
// when fn's first parameter is a klog.Logger that args lack, and passing a resource.Quantity as a
// pointer where fn takes *resource.Quantity (releases before 1.32).
func callVarying(fn reflect.Value, args ...interface{}) []reflect.Value {
	ft := fn.Type()
	var in []reflect.Value
	loggerType := reflect.TypeOf((*klog.Logger)(nil)).Elem()
	if ft.NumIn() == len(args)+1 && ft.In(0) == loggerType {
		in = append(in, reflect.ValueOf(klog.Background()))
	}
	for _, a := range args {
		v := reflect.ValueOf(a)
		want := ft.In(len(in))
		if q, ok := a.(resource.Quantity); ok && want == reflect.TypeOf(&q) {
			v = reflect.ValueOf(&q)
		}
		if !v.IsValid() {
			v = reflect.Zero(want)
		}
		in = append(in, v)
	}
	return fn.Call(in)
}

// desiredSize: the volume's desired size, VolumeToMount.DesiredPersistentVolumeSize (1.28+;
// PersistentVolumeSize in 1.26 and 1.27).
func desiredSize(vtm cache.VolumeToMount) resource.Quantity {
	v := reflect.ValueOf(vtm)
	f := v.FieldByName("DesiredPersistentVolumeSize")
	if !f.IsValid() {
		f = v.FieldByName("PersistentVolumeSize")
	}
	return f.Interface().(resource.Quantity)
}

func sizeString(q resource.Quantity) string { return q.String() }

func initClaimSize(asw cache.ActualStateOfWorld, name v1.UniqueVolumeName, q resource.Quantity) {
	callVarying(reflect.ValueOf(asw).MethodByName("InitializeClaimSize"), name, q)
}

func verifyAttached(h *harness, vtm cache.VolumeToMount) error {
	out := callVarying(reflect.ValueOf(h.oe).MethodByName("VerifyControllerAttachedVolume"),
		vtm.VolumeToMount, types.NodeName(nodeName), h.asw)
	if err, _ := out[0].Interface().(error); err != nil {
		return err
	}
	return nil
}

// newPopulator: populator.NewDesiredStateOfWorldPopulator as kubelet's volume manager calls it, its
// parameters filled by type (they changed in 1.27, 1.28, 1.31, 1.34): the client, the loop period
// (and, 1.26 only, getPodStatusRetryDuration, kubelet's 2 s), the pod manager and pod state
// provider (h.pods; 1.26 and 1.27 want kubelet's whole pod.Manager: podManager, which answers the
// two calls the populator makes), the caches, the container runtime (nil: never called here),
// keepTerminatedPodVolumes (to 1.30: false, kubelet's default), the CSI migration plugin manager
// (csimigration.NewPluginManager, with the feature gate until 1.35), the translator, the plugin
// manager.
func newPopulator(h *harness) populator.DesiredStateOfWorldPopulator {
	translator := csitrans.New()
	migration := callVaryingGate(reflect.ValueOf(csimigration.NewPluginManager), translator)
	fn := reflect.ValueOf(populator.NewDesiredStateOfWorldPopulator)
	ft := fn.Type()
	var in []reflect.Value
	durations := []time.Duration{loopPeriod, 2 * time.Second}
	for i := 0; i < ft.NumIn(); i++ {
		t := ft.In(i)
		var v interface{}
		implements := func(x interface{}) bool {
			return t.Kind() == reflect.Interface && reflect.TypeOf(x).Implements(t)
		}
		switch {
		case t == reflect.TypeOf(time.Duration(0)):
			v, durations = durations[0], durations[1:]
		case t == reflect.TypeOf(false):
			v = false
		case t == reflect.TypeOf(h.plugMgr):
			v = h.plugMgr
		case implements(h.client) && t.Name() == "Interface":
			v = h.client
		case implements(h.dsw) && strings.Contains(t.Name(), "DesiredStateOfWorld"):
			v = h.dsw
		case implements(h.asw) && strings.Contains(t.Name(), "ActualStateOfWorld"):
			v = h.asw
		case implements(h.pods):
			v = h.pods
		case implements(podManager{}) && strings.Contains(t.String(), "pod.Manager"):
			v = podManager{src: h.pods}
		case implements(translator) && strings.Contains(t.Name(), "Translator"):
			v = translator
		case t == migration.Type():
			in = append(in, migration)
			continue
		}
		if v == nil {
			in = append(in, reflect.Zero(t)) // the container runtime
			continue
		}
		in = append(in, reflect.ValueOf(v))
	}
	return fn.Call(in)[0].Interface().(populator.DesiredStateOfWorldPopulator)
}

// callVaryingGate calls fn(arg) or, when it takes a feature gate too (before 1.36),
// fn(arg, utilfeature.DefaultFeatureGate).
func callVaryingGate(fn reflect.Value, arg interface{}) reflect.Value {
	in := []reflect.Value{reflect.ValueOf(arg)}
	if fn.Type().NumIn() == 2 {
		in = append(in, reflect.ValueOf(utilfeature.DefaultFeatureGate))
	}
	return fn.Call(in)[0]
}

// podManager: kubelet's pod.Manager for 1.26 and 1.27's populator, which calls GetPods and
// GetPodByUID only (anything else would panic on the nil embedded interface).
type podManager struct {
	kubepod.Manager
	src *podSource
}

func (p podManager) GetPods() []*v1.Pod                        { return p.src.GetPods() }
func (p podManager) GetPodByUID(uid types.UID) (*v1.Pod, bool) { return p.src.GetPodByUID(uid) }

// metricsHealth: the volume condition of NodeGetVolumeStats (CSIVolumeHealth), in volume.Metrics
// until 1.36 (1.37 has none: VOLUME_CONDITION is reserved in its CSI spec).
func metricsHealth(m *volume.Metrics) string {
	s := ""
	mv := reflect.ValueOf(m).Elem()
	if f := mv.FieldByName("Abnormal"); f.IsValid() && !f.IsNil() {
		s += fmt.Sprintf(" abnormal %v", f.Elem().Interface())
	}
	if f := mv.FieldByName("Message"); f.IsValid() && !f.IsNil() {
		s += fmt.Sprintf(" message %q", f.Elem().Interface())
	}
	return s
}

func getAttachedVolume(asw cache.ActualStateOfWorld, name v1.UniqueVolumeName) (cache.AttachedVolume, bool) {
	for _, a := range asw.GetAttachedVolumes() {
		if a.VolumeName == name {
			return a, true
		}
	}
	return cache.AttachedVolume{}, false
}
