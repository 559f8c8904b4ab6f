// SPDX-License-Identifier: Apache-2.0

package render_test

import (
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"

	"github.com/fusioninfer/pulumi-fusioninfer/api"
	"github.com/fusioninfer/pulumi-fusioninfer/core/render"
)

// servingPod is a pod of a rendered tree whose server serves: an LWS pod template that is no Ray
// worker (a worker only joins its leader's Ray cluster), or the server pod FMA makes from a
// dual-pods requester.
type servingPod struct {
	name string
	role *api.Role
	spec *corev1.PodSpec
}

func servingPods(t *testing.T, tree *render.Tree) []servingPod {
	t.Helper()
	roles := map[string]*api.Role{}
	for i := range tree.Service.Spec.Roles {
		roles[tree.Service.Spec.Roles[i].Name] = &tree.Service.Spec.Roles[i]
	}
	var pods []servingPod
	for _, lws := range leaderWorkerSets(tree) {
		role := roles[lws.Labels[render.LabelRoleName]]
		if role.DualPods() {
			pods = append(pods, servingPod{lws.Name + " (FMA's server)", role, &serverRunningPod(t, requesterPod(lws), "node-0").Spec})
			continue
		}
		for _, tpl := range podTemplates(lws) {
			server := tpl.Spec.Containers[api.ServingContainerIndex(&tpl.Spec)]
			if len(server.Args) == 1 && server.Args[0] == render.RayWorkerScript {
				continue
			}
			pods = append(pods, servingPod{lws.Name, role, &tpl.Spec})
		}
	}
	return pods
}

// listenPort is the port the server's process (rank 0's, with data parallel) listens on, read
// from what the pod runs: the first --port of its server's command line, a shell script's words
// too, else
// vLLM's default.
func listenPort(server *corev1.Container) int32 {
	var words []string
	for _, w := range append(append([]string{}, server.Command...), server.Args...) {
		words = append(words, strings.Fields(w)...)
	}
	if i := slices.Index(words, "exec"); i >= 0 { // the Ray leader's: the Ray head's --port comes first
		words = words[i:]
	}
	for i, w := range words {
		if w == "--port" && i+1 < len(words) {
			n, _ := strconv.Atoi(strings.Trim(words[i+1], "'\""))
			return int32(n)
		}
		if v, ok := strings.CutPrefix(w, "--port="); ok {
			n, _ := strconv.Atoi(strings.Trim(v, "'\""))
			return int32(n)
		}
	}
	return api.DefaultServingPort
}

// declares reports whether a container of the pod declares the port.
func declares(spec *corev1.PodSpec, port int32) bool {
	for _, c := range append(append([]corev1.Container{}, spec.InitContainers...), spec.Containers...) {
		for _, p := range c.Ports {
			if p.ContainerPort == port {
				return true
			}
		}
	}
	return false
}

// probedPorts are the ports a server's probe asks: its HTTP GET's or TCP socket's, as the kubelet
// resolves a named one, or the ranks' ports a data parallel pod's exec probe sends its GET to.
func probedPorts(t *testing.T, server *corev1.Container, probe *corev1.Probe) []int32 {
	t.Helper()
	switch {
	case probe.HTTPGet != nil:
		port, ok := api.ProbePort(server, probe.HTTPGet.Port)
		require.True(t, ok, "%s: the probe's port %s is declared", server.Name, probe.HTTPGet.Port.String())
		return []int32{port}
	case probe.TCPSocket != nil:
		port, ok := api.ProbePort(server, probe.TCPSocket.Port)
		require.True(t, ok)
		return []int32{port}
	case probe.Exec != nil && len(probe.Exec.Command) > 10 && probe.Exec.Command[0] == "python3":
		base, err := strconv.Atoi(probe.Exec.Command[9])
		require.NoError(t, err)
		ranks, err := strconv.Atoi(probe.Exec.Command[10])
		require.NoError(t, err)
		return api.RankPorts(int32(base), int32(ranks))
	}
	return nil
}

// checkServingPods: every serving pod's server has a readiness probe and a startup probe, each of
// the server's own process (the port it listens on, every rank's with data parallel, never the
// routing sidecar's in front of it), on ports the pod declares; a startup probe the render gives
// allows the role's awaitTimeout for the model to load.
func checkServingPods(t *testing.T, tree *render.Tree) {
	t.Helper()
	for _, pod := range servingPods(t, tree) {
		server := &pod.spec.Containers[api.ServingContainerIndex(pod.spec)]
		port := listenPort(server)
		ranks := int32(1)
		if pod.role.DataParallel() {
			ranks = pod.role.LocalRanks()
		}
		for _, p := range api.RankPorts(port, ranks) {
			assert.True(t, declares(pod.spec, p), "%s: the server listens on %d, which the pod declares", pod.name, p)
		}
		for kind, probe := range map[string]*corev1.Probe{"readiness": server.ReadinessProbe, "startup": server.StartupProbe} {
			if !assert.NotNil(t, probe, "%s: the server has a %s probe", pod.name, kind) {
				continue
			}
			if probed := probedPorts(t, server, probe); probed != nil {
				if pod.role.DataParallel() && kind == "readiness" {
					assert.Equal(t, api.RankPorts(port, ranks), probed, "%s: the %s probe asks every rank", pod.name, kind)
				} else {
					assert.Contains(t, api.RankPorts(port, ranks), probed[0], "%s: the %s probe asks the server", pod.name, kind)
				}
			}
		}
		for _, c := range pod.spec.Containers {
			if c.Name != render.LoRALoaderContainerName {
				continue
			}
			i := slices.Index(c.Args, "--server")
			require.Greater(t, i, -1, "%s: the loader names its server", pod.name)
			assert.Equal(t, "http://localhost:"+strconv.Itoa(int(port)), c.Args[i+1], "%s: the loader calls vLLM itself", pod.name)
		}
		if user := pod.role.Template.Spec.Containers[api.ServingContainerIndex(&pod.role.Template.Spec)].StartupProbe; user == nil && server.StartupProbe != nil {
			await := tree.Service.Spec.RoleAwaitTimeout(pod.role).Seconds()
			p := server.StartupProbe
			assert.Equal(t, int32(math.Ceil(await/float64(p.PeriodSeconds))), p.FailureThreshold,
				"%s: the startup probe allows awaitTimeout (%vs) for the model to load", pod.name, await)
		}
	}
}

// checkScrapedPortsDeclared: every port a PodMonitor scrapes is one every pod it selects declares
// (Prometheus' pod discovery has a target only for a declared port).
func checkScrapedPortsDeclared(t *testing.T, tree *render.Tree) {
	t.Helper()
	for _, o := range tree.Objects {
		pm, ok := o.Object.(*monitoringv1.PodMonitor)
		if !ok {
			continue
		}
		for _, lws := range leaderWorkerSets(tree) {
			for _, tpl := range podTemplates(lws) {
				labels := map[string]string{lwsv1.WorkerIndexLabelKey: "0"}
				if tpl != lws.Spec.LeaderWorkerTemplate.LeaderTemplate && lws.Spec.LeaderWorkerTemplate.LeaderTemplate != nil {
					labels[lwsv1.WorkerIndexLabelKey] = "1"
				}
				for k, v := range tpl.Labels {
					labels[k] = v
				}
				if !matches(pm.Spec.Selector.MatchLabels, labels) {
					continue
				}
				for _, e := range pm.Spec.PodMetricsEndpoints {
					if e.PortNumber != nil {
						assert.True(t, declares(&tpl.Spec, *e.PortNumber), "%s scrapes port %d of %s, which it does not declare", pm.Name, *e.PortNumber, lws.Name)
					}
				}
			}
		}
	}
}

// bare makes a service as a user may write it: its servers with no ports and no probes.
func bare(out *api.InferenceService) *api.InferenceService {
	for i := range out.Spec.Roles {
		tpl := out.Spec.Roles[i].Template
		if tpl == nil || len(tpl.Spec.Containers) == 0 {
			continue
		}
		server := &tpl.Spec.Containers[api.ServingContainerIndex(&tpl.Spec)]
		if out.Spec.Roles[i].ComponentType == api.ComponentTypeRouter {
			continue
		}
		server.Ports, server.ReadinessProbe, server.StartupProbe, server.LivenessProbe = nil, nil, nil, nil
	}
	return out
}

// TestEveryServingPodIsReadyOnlyWhenItsServerAnswers over every example, as written and bare.
func TestEveryServingPodIsReadyOnlyWhenItsServerAnswers(t *testing.T) {
	files, err := filepath.Glob(manifests + "*.yaml")
	require.NoError(t, err)
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			data, err := os.ReadFile(file)
			require.NoError(t, err)
			docs, errs := api.Decode(data)
			require.Empty(t, errs)
			again, _ := api.Decode(data)
			for d, doc := range docs {
				for variant, svc := range map[string]*api.InferenceService{"as written": doc.Service, "bare": bare(again[d].Service)} {
					tree, verrs := render.Build(svc)
					require.Empty(t, verrs, "%s: %v", variant, verrs)
					t.Run(variant, func(t *testing.T) {
						checkServingPods(t, tree)
						checkScrapedPortsDeclared(t, tree)
					})
				}
			}
		})
	}
}

// example decodes an example manifest of one service.
func example(t *testing.T, file string) *api.InferenceService {
	t.Helper()
	data, err := os.ReadFile(manifests + file)
	require.NoError(t, err)
	docs, errs := api.Decode(data)
	require.Empty(t, errs)
	require.Len(t, docs, 1)
	return docs[0].Service
}

// TestAUsersProbesAreKept: a template's own readiness and startup probes reach the server as given.
func TestAUsersProbesAreKept(t *testing.T) {
	svc := example(t, "llama-router.yaml") // a copy of its own, to change
	var role *api.Role
	for i := range svc.Spec.Roles {
		if svc.Spec.Roles[i].ComponentType != api.ComponentTypeRouter {
			role = &svc.Spec.Roles[i]
		}
	}
	server := &role.Template.Spec.Containers[api.ServingContainerIndex(&role.Template.Spec)]
	require.NotNil(t, server.ReadinessProbe)
	server.StartupProbe = server.ReadinessProbe.DeepCopy()
	server.StartupProbe.FailureThreshold = 7
	for _, lws := range leaderWorkerSets(build(t, svc)) {
		if lws.Labels[render.LabelRoleName] != role.Name {
			continue
		}
		rendered := lws.Spec.LeaderWorkerTemplate.WorkerTemplate.Spec.Containers[api.ServingContainerIndex(&lws.Spec.LeaderWorkerTemplate.WorkerTemplate.Spec)]
		assert.Equal(t, server.ReadinessProbe, rendered.ReadinessProbe)
		assert.Equal(t, server.StartupProbe, rendered.StartupProbe)
	}
}

// TestATLSServerIsProbedOverHTTPS: a server given --ssl-certfile answers only HTTPS, so the probes
// the render gives it ask over HTTPS (issue 55: plain-HTTP probes left it never Ready), in its
// args and in a shell script alike.
func TestATLSServerIsProbedOverHTTPS(t *testing.T) {
	for name, tls := range map[string]func(*corev1.Container){
		"args": func(c *corev1.Container) {
			c.Args = append(c.Args, "--ssl-keyfile", "/tls/tls.key", "--ssl-certfile", "/tls/tls.crt")
		},
		"a shell script": func(c *corev1.Container) {
			c.Command = []string{"sh", "-c", "exec vllm serve Qwen/Qwen3-8B --ssl-keyfile /tls/tls.key --ssl-certfile /tls/tls.crt"}
			c.Args = nil
		},
		"none": func(*corev1.Container) {},
	} {
		t.Run(name, func(t *testing.T) {
			svc := example(t, "story1-monolithic.yaml")
			role := &svc.Spec.Roles[0]
			tls(&role.Template.Spec.Containers[api.ServingContainerIndex(&role.Template.Spec)])
			want := corev1.URISchemeHTTPS
			if name == "none" {
				want = ""
			}
			lwss := leaderWorkerSets(build(t, svc))
			require.NotEmpty(t, lwss)
			for _, lws := range lwss {
				spec := &lws.Spec.LeaderWorkerTemplate.WorkerTemplate.Spec
				server := spec.Containers[api.ServingContainerIndex(spec)]
				for _, probe := range []*corev1.Probe{server.ReadinessProbe, server.StartupProbe} {
					require.NotNil(t, probe.HTTPGet)
					assert.Equal(t, want, probe.HTTPGet.Scheme, "%s", lws.Name)
				}
			}
		})
	}
}

// TestTheLoRALoaderOfADecodePodCallsVLLM: behind a router, the routing sidecar takes the decode
// pod's serving port and vLLM moves to 8200; the loader loads adapters into vLLM there.
func TestTheLoRALoaderOfADecodePodCallsVLLM(t *testing.T) {
	svc := example(t, "qwen-pd-router.yaml") // a copy of its own, to change
	svc.Spec.Model = &api.Model{Source: "hf://Qwen/Qwen3-32B@9216db5781bf21249d130ec9da846c4624c16137",
		Cache:    &api.ModelCache{Size: "100Gi", StorageClassName: "shared-rwx"},
		Adapters: []api.LoRAAdapter{{Name: "sql", Source: "hf://org/qwen3-32b-sql-lora@v1"}}}
	for i := range svc.Spec.Roles {
		if tpl := svc.Spec.Roles[i].Template; tpl != nil {
			server := &tpl.Spec.Containers[api.ServingContainerIndex(&tpl.Spec)]
			server.Args = slices.DeleteFunc(server.Args, func(a string) bool { return a == "--model" || a == "Qwen/Qwen3-32B" })
		}
	}
	tree := build(t, svc)
	decoders := 0
	for _, pod := range servingPods(t, tree) {
		if pod.role.ComponentType == api.ComponentTypeDecoder {
			decoders++
		}
	}
	require.Positive(t, decoders)
	checkServingPods(t, tree)
}

// sharedMemory is the volume a container mounts at /dev/shm, nil if none.
func sharedMemory(spec *corev1.PodSpec, c *corev1.Container) *corev1.Volume {
	for _, m := range c.VolumeMounts {
		if m.MountPath == "/dev/shm" {
			for i := range spec.Volumes {
				if spec.Volumes[i].Name == m.Name {
					return &spec.Volumes[i]
				}
			}
		}
	}
	return nil
}

// TestDataParallelServersHaveSharedMemory: NCCL and the ranks' all-to-all need more /dev/shm than
// a container's 64 MiB: a data parallel pod's server mounts a memory-backed emptyDir there,
// unless its template mounts its own.
func TestDataParallelServersHaveSharedMemory(t *testing.T) {
	for _, own := range []bool{false, true} {
		svc := example(t, wideEP)
		if own {
			for i := range svc.Spec.Roles {
				if tpl := svc.Spec.Roles[i].Template; tpl != nil {
					tpl.Spec.Volumes = append(tpl.Spec.Volumes, corev1.Volume{Name: "dshm", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory}}})
					tpl.Spec.Containers[0].VolumeMounts = append(tpl.Spec.Containers[0].VolumeMounts, corev1.VolumeMount{Name: "dshm", MountPath: "/dev/shm"})
				}
			}
		}
		pods := servingPods(t, build(t, svc))
		require.NotEmpty(t, pods)
		for _, pod := range pods {
			server := &pod.spec.Containers[api.ServingContainerIndex(pod.spec)]
			shm := sharedMemory(pod.spec, server)
			if !assert.NotNil(t, shm, "%s mounts /dev/shm", pod.name) {
				continue
			}
			require.NotNil(t, shm.EmptyDir)
			assert.Equal(t, corev1.StorageMediumMemory, shm.EmptyDir.Medium)
			mounts := 0
			for _, m := range server.VolumeMounts {
				if m.MountPath == "/dev/shm" {
					mounts++
				}
			}
			assert.Equal(t, 1, mounts, "%s: one /dev/shm", pod.name)
			if own {
				assert.Equal(t, "dshm", shm.Name, "%s: the template's own", pod.name)
			}
		}
	}
}
