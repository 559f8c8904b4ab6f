// SPDX-License-Identifier: Apache-2.0

package cluster

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
)

// A binary is a program built from one of the wrapper modules in modules/, or from this checkout.
type binary struct {
	name    string // the cached file's name
	module  string // the folder in modules/; "" for this checkout's own module
	pkg     string // the Go package of its main
	version string
}

var (
	etcd                  = binary{"etcd", "etcd", "go.etcd.io/etcd/server/v3", EtcdVersion}
	kubeAPIServer         = binary{"kube-apiserver", "kubernetes", "k8s.io/kubernetes/cmd/kube-apiserver", KubernetesVersion}
	kubeControllerManager = binary{"kube-controller-manager", "kubernetes", "k8s.io/kubernetes/cmd/kube-controller-manager", KubernetesVersion}
	kubeScheduler         = binary{"kube-scheduler", "kubernetes", "k8s.io/kubernetes/cmd/kube-scheduler", KubernetesVersion}
	lwsControllers        = map[string]binary{
		LWSVersion: {"lws-controller-manager", "lws", "sigs.k8s.io/lws/cmd", LWSVersion},
		"v0.8.0":   {"lws-controller-manager", "lws-v0.8.0", "sigs.k8s.io/lws/cmd", "v0.8.0"},
	}
	volcanoScheduler   = binary{"vc-scheduler", "volcano", "volcano.sh/volcano/cmd/scheduler", VolcanoVersion}
	volcanoControllers = binary{"vc-controller-manager", "volcano", "volcano.sh/volcano/cmd/controller-manager", VolcanoVersion}
	kwok               = binary{"kwok", "kwok", "sigs.k8s.io/kwok/cmd/kwok", KwokVersion}
	kedaOperator       = binary{"keda-operator", "keda", "github.com/kedacore/keda/v2/cmd/operator", KEDAVersion}
	kedaAdapter        = binary{"keda-adapter", "keda", "github.com/kedacore/keda/v2/cmd/adapter", KEDAVersion}
	// The programs that stand for container images (images.go).
	inferenceSim                 = binary{"llm-d-inference-sim", "inference-sim", "github.com/llm-d/llm-d-inference-sim/cmd/llm-d-inference-sim", InferenceSimVersion}
	gieEndpointPicker            = binary{"gie-epp", gieOracleModule, "sigs.k8s.io/gateway-api-inference-extension/cmd/epp", GIEEndpointPickerVersion}
	gieLightweightEndpointPicker = binary{"gie-lwepp", "gie-lwepp-v1.6.0", "sigs.k8s.io/gateway-api-inference-extension/cmd/lwepp", GIELightweightEndpointPickerVersion}
	loraLoader                   = binary{"fusioninfer-lora-loader", "", "./cmd/fusioninfer-lora-loader", "checkout"}
	envoyStandin                 = binary{"envoy-standin", "", "./tests/gateway/cmd/envoy-standin", "checkout"}
	// The engine's plugin (provider.go).
	kubernetesProvider = binary{"pulumi-resource-kubernetes", "pulumi-kubernetes", ".", KubernetesProviderVersion}
)

// buildEnvironment is what a wrapper module's build adds to this process's environment:
// llm-d-inference-sim builds without cgo (its Dockerfile's CGO_ENABLED=0; its ZMQ is pure Go).
var buildEnvironment = map[string][]string{"inference-sim": {"CGO_ENABLED=0"}}

// buildTags are a wrapper module's build tags: Prometheus' plugins/ link every service discovery
// unless remove_all_sd, and then only those enabled (plugins/plugin_kubernetes.go's constraint).
var buildTags = map[string]string{"prometheus": "remove_all_sd,enable_kubernetes_sd"}

// alignedModules are wrapper modules built against one version of each module their programs
// share (tests/cluster TestAlignedModulesShareTheirDependencies): the Go build cache compiles a
// package once for all of them only when its source and every dependency's are the same, so
// k8s.io/api and client-go, otherwise compiled again for each program, are compiled once a group
// (issue 54). The first of a group leads, its versions as its upstream chose them; the others'
// shared dependencies are raised to its (or, in a group of equals, to the highest any needs).
// Each group is one minor of k8s.io. kubernetes pins its staging modules by replace, at its group's
// version; volcano and the provider pin theirs by replace too, each alone on its minor.
var alignedModules = [][]string{
	{"keda", "kwok", "lws", "gie-lwepp-v1.6.0", "kubernetes"},
	{"lws-v0.8.0", "karpenter", "prometheus-operator"},
}

// moduleSources are the files of a wrapper module's own programs: their content names the build
// beside go.sum's.
var moduleSources = map[string][]string{"prometheus-operator": {"cmd/prometheus-config/main.go"}}

// The versions the wrapper modules pin.
const (
	EtcdVersion       = "v3.6.5"
	KubernetesVersion = "v1.36.4"
	LWSVersion        = "v0.9.0"
	VolcanoVersion    = "v1.14.1"
	KwokVersion       = "v0.8.0"
	KEDAVersion       = "v2.21.0"
	// llm-d-inference-sim stands for vLLM; GIE v1.5.0 is the last release with cmd/epp; the module
	// proxy serves GIE v1.6.0 and refuses v1.6.1 to v1.6.3.
	InferenceSimVersion                 = "v0.10.2"
	GIEEndpointPickerVersion            = "v1.5.0"
	GIELightweightEndpointPickerVersion = "v1.6.0"
	// The module proxy serves pulumi-kubernetes' provider module at its v4.25.0 tag's
	// pseudo-version (v4.0.0-20260115033456-f47bc2d6f199) and no tagged version.
	KubernetesProviderVersion = "v4.25.0"
)

// gieOracleModule is GIE v1.5.0's module: api/eppconfig's tests build its loader from it (the
// oracle of eppconfig's check), and the suites its cmd/epp. One module, so the build cache
// compiles GIE and its dependencies once for both (issue 54: two modules built them twice).
const gieOracleModule = "api/eppconfig/oracle/gie-v1.5.0"

// moduleDir is the folder of a wrapper module: modules/{module}, or a folder of the repository
// when module is a path in it (gieOracleModule).
func moduleDir(module string) string {
	if strings.Contains(module, "/") {
		return filepath.Join(RepositoryRoot(), module)
	}
	_, here, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(here), "modules", module)
}

// build builds the binary once: it is kept in the user cache under the hash of its module's
// go.sum, and the Go build cache makes a rebuild after a change cheap.
func (b binary) build() (string, error) {
	if b.module == "" {
		return b.buildFromCheckout()
	}
	dir := moduleDir(b.module)
	sum, err := os.ReadFile(filepath.Join(dir, "go.sum"))
	if err != nil {
		return "", err
	}
	for _, source := range moduleSources[b.module] {
		data, err := os.ReadFile(filepath.Join(dir, source))
		if err != nil {
			return "", err
		}
		sum = append(sum, data...)
	}
	hash := sha256.Sum256(sum)
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	path := filepath.Join(cache, "pulumi-fusioninfer", b.name+"-"+b.version+"-"+hex.EncodeToString(hash[:6]))
	if _, err := os.Stat(path); err == nil {
		return path, nil
	}
	// One build of a binary at a time on this machine: suites of other worktrees share the cache
	// and may want the same binary at once; the second waits for the first's instead of building it
	// again (a lock on a file beside it, released when this process ends, whatever happens).
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return "", err
	}
	lock, err := os.OpenFile(path+".lock", os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return "", err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return "", err
	}
	defer func() { _ = syscall.Flock(int(lock.Fd()), syscall.LOCK_UN) }()
	if _, err := os.Stat(path); err == nil {
		return path, nil // built while this process waited
	}
	Progress("building %s %s (a cold build takes minutes)", b.pkg, b.version)
	start := time.Now()
	// A file of this process's own, renamed into place when whole.
	tmp := fmt.Sprintf("%s.tmp-%d", path, os.Getpid())
	// No symbol table or DWARF: nothing here debugs them, and linking is the longest step left
	// once the dependencies are cached (the provider is a 300 MB binary with them).
	cmd := exec.Command("go", "build", "-ldflags=-s -w", "-tags", buildTags[b.module], "-o", tmp, b.pkg)
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), "GOFLAGS=-mod=mod"), buildEnvironment[b.module]...)
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building %s: %v\n%s", b.pkg, err, out)
	}
	Progress("built %s in %s", b.pkg, time.Since(start).Round(time.Second))
	return path, os.Rename(tmp, path)
}

// checkoutPrograms is where this process keeps the programs it built from this checkout (which
// changes under it, so no go.sum names a build), removed when its cluster stops.
var checkoutPrograms = struct {
	sync.Mutex
	dir string
}{dir: filepath.Join(os.TempDir(), fmt.Sprintf("fusioninfer-checkout-programs-%d", os.Getpid()))}

// buildFromCheckout builds a program of this checkout once for this process (the Go build cache
// makes it seconds).
func (b binary) buildFromCheckout() (string, error) {
	checkoutPrograms.Lock()
	defer checkoutPrograms.Unlock()
	path := filepath.Join(checkoutPrograms.dir, b.name)
	if _, err := os.Stat(path); err == nil {
		return path, nil
	}
	_, here, _, _ := runtime.Caller(0)
	cmd := exec.Command("go", "build", "-o", path, b.pkg)
	cmd.Dir = filepath.Join(filepath.Dir(here), "..", "..")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building %s: %v\n%s", b.pkg, err, out)
	}
	return path, nil
}

// removeCheckoutPrograms removes what buildFromCheckout built.
func removeCheckoutPrograms() {
	checkoutPrograms.Lock()
	defer checkoutPrograms.Unlock()
	_ = os.RemoveAll(checkoutPrograms.dir)
}

// programs are every program the suites run, in the order make conformance and make e2e's
// packages first need them (BuildPrograms): the control plane, then tests/e2e's controllers and
// the engine's provider, autoscaling's KEDA, Karpenter, lwsv080's LWS, metrics' Prometheus and kube-state-metrics, routing's servers and
// Endpoint Pickers; but those of this checkout, which each suite's process builds.
func programs() []binary {
	var out []binary
	for _, b := range append([]binary{etcd, kubeAPIServer, kubeControllerManager, kubeScheduler, lwsControllers[LWSVersion],
		volcanoScheduler, volcanoControllers, kwok, kubernetesProvider, kedaOperator, kedaAdapter, karpenterKwok, lwsControllers["v0.8.0"],
		prometheusServer, prometheusConfig, kubeStateMetrics},
		containerPrograms()...) {
		if b.module != "" {
			out = append(out, b)
		}
	}
	return out
}

// BuildPrograms builds every program the suites run (or only those named, by their cached file's
// name) into the user cache, at most parallel at once, in the order they are first needed. CI runs it in the background while make test runs
// (make cluster-programs), so the builds fill the time the tests leave the cores idle; a suite
// that needs a program still being built waits for it (the lock in build).
//
// The programs of one wrapper module are built one after the other by the same worker: the
// second links what the first compiled (KEDA's operator and adapter, built at once, each
// compiled the same 11 minutes of dependencies in a cold CI).
func BuildPrograms(parallel int, only ...string) error {
	queue := make(chan []binary)
	errs := make(chan error, len(programs()))
	chosen := programs()
	if len(only) > 0 {
		chosen = slices.DeleteFunc(chosen, func(b binary) bool { return !slices.Contains(only, b.name) })
		if len(chosen) == 0 {
			return fmt.Errorf("no program is named %v", only)
		}
	}
	var wg sync.WaitGroup
	for range max(parallel, 1) {
		wg.Go(func() {
			for module := range queue {
				for _, b := range module {
					if _, err := b.build(); err != nil {
						errs <- err
					}
				}
			}
		})
	}
	for _, module := range byModule(chosen) {
		queue <- module
	}
	close(queue)
	wg.Wait()
	close(errs)
	var all []error
	for err := range errs {
		all = append(all, err)
	}
	return errors.Join(all...)
}

// buildAll builds the binaries at once, each in its own go build, and returns their errors:
// their module downloads and link steps overlap with each other's compiles.
func buildAll(binaries ...binary) error {
	errs := make([]error, len(binaries))
	var wg sync.WaitGroup
	for i, b := range binaries {
		wg.Go(func() { _, errs[i] = b.build() })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// moduleFile is a file inside a dependency of a wrapper module, from the module cache (CRDs,
// webhook manifests, the scheduler's configuration, kwok's stages).
func moduleFile(module, dependency, path string) (string, error) {
	dir, err := dependencyDir(moduleDir(module), dependency)
	return filepath.Join(dir, path), err
}

// dependencyDir is where the module cache holds a dependency of the module in moduleRoot,
// downloaded first if it is not there yet.
func dependencyDir(moduleRoot, dependency string) (string, error) {
	goCommand := func(args ...string) ([]byte, error) {
		cmd := exec.Command("go", args...)
		cmd.Dir = moduleRoot
		cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod")
		out, err := cmd.Output()
		if err != nil {
			return nil, fmt.Errorf("go %s in %s: %w", strings.Join(args, " "), moduleRoot, err)
		}
		return out, nil
	}
	out, err := goCommand("list", "-m", "-f", "{{.Dir}}", dependency)
	if err != nil {
		return "", err
	}
	if dir := strings.TrimSpace(string(out)); dir != "" {
		return dir, nil
	}
	if _, err := goCommand("mod", "download", dependency); err != nil { // listed, not downloaded yet
		return "", err
	}
	return dependencyDir(moduleRoot, dependency)
}

// byModule groups binaries by their wrapper module, each group where its first binary was.
func byModule(binaries []binary) [][]binary {
	var groups [][]binary
	at := map[string]int{}
	for _, b := range binaries {
		i, ok := at[b.module]
		if !ok {
			i = len(groups)
			at[b.module] = i
			groups = append(groups, nil)
		}
		groups[i] = append(groups[i], b)
	}
	return groups
}
