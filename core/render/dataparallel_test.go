// SPDX-License-Identifier: Apache-2.0

package render_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	inferencev1 "sigs.k8s.io/gateway-api-inference-extension/api/v1"
	lwsv1 "sigs.k8s.io/lws/api/leaderworkerset/v1"

	"github.com/fusioninfer/pulumi-fusioninfer/api"
	"github.com/fusioninfer/pulumi-fusioninfer/core/render"
)

const wideEP = "deepseek-wide-ep-pd.yaml"

// runRanks runs a data parallel script in a real /bin/sh with a fake `vllm` that writes, per
// process, its visible GPUs and every argument it received, then serves until stopped; once the
// n ranks have written, the shell gets TERM (as a pod's stop). It returns what each rank was
// started with, ordered by rank.
func runRanks(t *testing.T, n int, script string, env ...string) []string {
	t.Helper()
	bin, out := t.TempDir(), t.TempDir()
	stub := "#!/bin/sh\n{ printf 'CUDA_VISIBLE_DEVICES=%s\\n' \"$CUDA_VISIBLE_DEVICES\"; for a in \"$@\"; do printf '[%s]\\n' \"$a\"; done; } > " +
		out + "/$$.tmp && mv " + out + "/$$.tmp " + out + "/$$.argv\nexec sleep 60\n"
	require.NoError(t, os.WriteFile(filepath.Join(bin, "vllm"), []byte(stub), 0o755))
	cmd := exec.Command("/bin/sh", "-c", script)
	cmd.Env = append([]string{"PATH=" + bin + ":/usr/bin:/bin"}, env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // so a failed test leaves no rank behind
	var output strings.Builder
	cmd.Stdout, cmd.Stderr = &output, &output
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
	var files []string
	require.Eventually(t, func() bool {
		files, _ = filepath.Glob(filepath.Join(out, "*.argv"))
		return len(files) == n
	}, 5*time.Second, 20*time.Millisecond, "%d ranks start", n)
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	require.NoError(t, cmd.Wait(), output.String())
	var ranks []string
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		ranks = append(ranks, string(b))
	}
	sort.Slice(ranks, func(i, j int) bool { return rankOf(ranks[i]) < rankOf(ranks[j]) })
	return ranks
}

func rankOf(argv string) string { return argValue(argv, "--data-parallel-rank") }

// TestDataParallelScriptStartsEveryLocalRank: each rank with its GPUs, its global rank and its
// own port, given once (the server's own --port is rank 0's, the base of the others).
func TestDataParallelScriptStartsEveryLocalRank(t *testing.T) {
	role := &api.Role{Multinode: &api.Multinode{NodeCount: 2}, Parallelism: &api.Parallelism{Data: 4, Tensor: 2, Expert: true, DataRPCPort: 5555}}
	server := &corev1.Container{Args: []string{"--model", "deepseek-ai/DeepSeek-R1", "--served-model-name", "it's $HOME `id`", "--port", "9000"}}
	script := render.DataParallelScript(server, role, 9000)
	ranks := runRanks(t, 2, script, "LWS_WORKER_INDEX=1", "LWS_LEADER_ADDRESS=r-0.r.llm")
	require.Len(t, ranks, 2, script)
	for i, want := range []struct{ gpus, rank, port string }{{"0,1", "2", "9000"}, {"2,3", "3", "9001"}} {
		assert.Equal(t, "CUDA_VISIBLE_DEVICES="+want.gpus+"\n"+
			"[serve]\n[--model]\n[deepseek-ai/DeepSeek-R1]\n[--served-model-name]\n[it's $HOME `id`]\n"+
			"[--data-parallel-size]\n[4]\n[--data-parallel-rpc-port]\n[5555]\n[--tensor-parallel-size]\n[2]\n[--enable-expert-parallel]\n"+
			"[--data-parallel-address]\n[r-0.r.llm]\n[--data-parallel-rank]\n["+want.rank+"]\n[--port]\n["+want.port+"]\n", ranks[i])
	}
	leader := runRanks(t, 2, script, "LWS_LEADER_ADDRESS=r-0.r.llm") // the leader has index 0
	assert.Equal(t, []string{"0", "1"}, []string{rankOf(leader[0]), rankOf(leader[1])})
}

func TestWideEPRendersNoRayAndRoutesEveryRank(t *testing.T) {
	tree := story(t, wideEP)
	lwss := leaderWorkerSets(tree)
	require.Len(t, lwss, 2) // one LWS a replica, as without parallelism
	for _, lws := range lwss {
		require.NotNil(t, lws.Spec.LeaderWorkerTemplate.LeaderTemplate)
		for _, tpl := range podTemplates(lws) {
			server := tpl.Spec.Containers[api.ServingContainerIndex(&tpl.Spec)]
			script := strings.Join(server.Args, " ")
			assert.NotContains(t, script, "ray ")
			assert.Contains(t, script, "--data-parallel-rank")
			assert.Contains(t, script, "${LWS_WORKER_INDEX:-0} * 8")
			assert.Equal(t, "true", tpl.Labels[render.LabelServing], "every pod of a data parallel replica serves and is in the pool")
			var ports []int32
			for _, p := range server.Ports {
				ports = append(ports, p.ContainerPort)
			}
			base := int32(8000)
			if strings.Contains(lws.Name, "decode") {
				base = api.DecodeVLLMPort
				sidecar := tpl.Spec.InitContainers[len(tpl.Spec.InitContainers)-1]
				assert.Equal(t, api.RoutingSidecarName, sidecar.Name)
				assert.Contains(t, sidecar.Args, "--data-parallel-size=8")
				assert.Len(t, sidecar.Ports, 8)
				assert.Equal(t, int32(8007), sidecar.Ports[7].ContainerPort)
			}
			assert.Equal(t, api.RankPorts(base, 8), ports)
		}
	}
	pool := objectOf[*inferencev1.InferencePool](t, tree, "")
	var targets []int32
	for _, p := range pool.Spec.TargetPorts {
		targets = append(targets, int32(p.Number))
	}
	assert.Equal(t, api.RankPorts(8000, 8), targets)
}

func TestWideEPPodMonitorsScrapeEveryRank(t *testing.T) {
	svc := story(t, wideEP).Service
	svc.Spec.Monitoring = &api.Monitoring{PodMonitors: true}
	tree := build(t, svc)
	monitor := objectOf[*monitoringv1.PodMonitor](t, tree, "")
	assert.NotContains(t, monitor.Spec.Selector.MatchLabels, lwsv1.WorkerIndexLabelKey, "every pod of a data parallel replica runs ranks")
	var ports []int32
	for _, e := range monitor.Spec.PodMetricsEndpoints {
		ports = append(ports, *e.PortNumber)
	}
	assert.Equal(t, api.RankPorts(8000, 8), ports)
}

// TestDataParallelScriptPassesTERMToTheRanks: the shell is the container's PID 1, so a pod's stop
// reaches the ranks only through it: each rank gets TERM, and the shell waits for them to drain.
func TestDataParallelScriptPassesTERMToTheRanks(t *testing.T) {
	bin, out := t.TempDir(), t.TempDir()
	stub := "#!/bin/sh\ntrap 'sleep 0.2; echo drained > " + out + "/$$; exit 0' TERM\necho started > " + out + "/$$\nwhile :; do sleep 0.05; done\n"
	require.NoError(t, os.WriteFile(filepath.Join(bin, "vllm"), []byte(stub), 0o755))
	role := &api.Role{Parallelism: &api.Parallelism{Data: 2}}
	cmd := exec.Command("/bin/sh", "-c", render.DataParallelScript(&corev1.Container{}, role, 8000))
	cmd.Env = []string{"PATH=" + bin + ":/usr/bin:/bin"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // so a failed test leaves no rank behind
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
	states := func() []string {
		files, _ := os.ReadDir(out)
		var s []string
		for _, f := range files {
			b, _ := os.ReadFile(filepath.Join(out, f.Name()))
			s = append(s, strings.TrimSpace(string(b)))
		}
		return s
	}
	require.Eventually(t, func() bool { return len(states()) == 2 }, 5*time.Second, 20*time.Millisecond, "both ranks start")
	// The stop comes once the shell watches its ranks (its loop's sleep is a third child): a rank
	// can start before the shell has noted it, and a TERM then would miss it (a kubelet's grace
	// period ends that with SIGKILL; here the test would wait for ever).
	children := fmt.Sprintf("/proc/%d/task/%d/children", cmd.Process.Pid, cmd.Process.Pid)
	require.Eventually(t, func() bool {
		b, _ := os.ReadFile(children)
		return len(strings.Fields(string(b))) == 3
	}, 5*time.Second, 20*time.Millisecond, "the shell watches its ranks")
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	require.NoError(t, cmd.Wait(), "the shell ends once its ranks have")
	assert.Equal(t, []string{"drained", "drained"}, states(), "each rank drained before the shell ended")
}

// TestDataParallelScriptEndsWhenARankEnds: a rank whose server ends (here killed, as a crash or
// the OOM killer would) takes the container with it: the shell stops the other ranks (TERM, and
// waits for them) and ends non-zero, so the kubelet restarts the container and LWS recreates the
// group; the pod is not Ready meanwhile, and the router takes all its ranks out.
func TestDataParallelScriptEndsWhenARankEnds(t *testing.T) {
	bin, out := t.TempDir(), t.TempDir()
	stub := "#!/bin/sh\ntrap 'echo stopped > " + out + "/$$; exit 0' TERM\necho started > " + out + "/$$\nwhile :; do sleep 0.05; done\n"
	require.NoError(t, os.WriteFile(filepath.Join(bin, "vllm"), []byte(stub), 0o755))
	role := &api.Role{Parallelism: &api.Parallelism{Data: 3}}
	cmd := exec.Command("/bin/sh", "-c", render.DataParallelScript(&corev1.Container{}, role, 8000))
	cmd.Env = []string{"PATH=" + bin + ":/usr/bin:/bin"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // so a failed test leaves no rank behind
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
	var pids []int
	require.Eventually(t, func() bool {
		files, _ := os.ReadDir(out)
		pids = pids[:0]
		for _, f := range files {
			pid, err := strconv.Atoi(f.Name())
			require.NoError(t, err)
			pids = append(pids, pid)
		}
		return len(pids) == 3
	}, 5*time.Second, 20*time.Millisecond, "the 3 ranks start")
	sort.Ints(pids)
	crashed := pids[1] // not local rank 0's: the one no readiness probe watches
	require.NoError(t, syscall.Kill(crashed, syscall.SIGKILL))

	ended := make(chan error, 1)
	go func() { ended <- cmd.Wait() }()
	select {
	case err := <-ended:
		var exit *exec.ExitError
		require.ErrorAs(t, err, &exit, "the shell ends non-zero")
		assert.NotZero(t, exit.ExitCode())
	case <-time.After(10 * time.Second):
		t.Fatal("the shell still runs 10 s after one of its ranks ended")
	}
	for _, pid := range pids {
		assert.ErrorIs(t, syscall.Kill(pid, 0), syscall.ESRCH, "rank process %d is gone", pid)
		if pid != crashed {
			b, err := os.ReadFile(filepath.Join(out, strconv.Itoa(pid)))
			require.NoError(t, err)
			assert.Equal(t, "stopped", strings.TrimSpace(string(b)), "rank process %d got TERM", pid)
		}
	}
}

// TestDataParallelReadinessProbeChecksEveryRank: a data parallel server's readiness probe is the
// HTTP GET of the template's probe (GET /health without one) sent to every local rank's port, by
// the image's python3, with the probe's timings kept; the pod's address comes from POD_IP.
func TestDataParallelReadinessProbeChecksEveryRank(t *testing.T) {
	cases := []struct {
		name  string
		probe *corev1.Probe
		// args are the script's: scheme, host, path, seconds for the GETs, first port, ranks, headers
		prefill, decode []string
		timings         corev1.Probe
	}{{
		name:    "the example's GET /health on the server's port",
		probe:   &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/health", Port: intstr.FromInt32(8000)}}},
		prefill: []string{"HTTP", "", "/health", "0.6", "8000", "8"},
		decode:  []string{"HTTP", "", "/health", "0.6", "8200", "8"},
	}, {
		name:    "no probe: vLLM's GET /health, as every server's default readiness probe",
		prefill: []string{"HTTP", "", "/health", "4", "8000", "8"},
		decode:  []string{"HTTP", "", "/health", "4", "8200", "8"},
		timings: corev1.Probe{PeriodSeconds: 5, TimeoutSeconds: 5},
	}, {
		name: "the port by name, HTTPS, a header and the probe's timings",
		probe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/ready", Port: intstr.FromString("http"),
			Scheme: corev1.URISchemeHTTPS, HTTPHeaders: []corev1.HTTPHeader{{Name: "X-Probe", Value: "a: b"}}}},
			InitialDelaySeconds: 7, PeriodSeconds: 2, TimeoutSeconds: 3, FailureThreshold: 4, SuccessThreshold: 1},
		prefill: []string{"HTTPS", "", "/ready", "2.4", "8000", "8", "X-Probe: a: b"},
		decode:  []string{"HTTPS", "", "/ready", "2.4", "8200", "8", "X-Probe: a: b"},
		timings: corev1.Probe{InitialDelaySeconds: 7, PeriodSeconds: 2, TimeoutSeconds: 3, FailureThreshold: 4, SuccessThreshold: 1},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			svc := story(t, wideEP).Service
			for i := range svc.Spec.Roles {
				if tpl := svc.Spec.Roles[i].Template; tpl != nil {
					tpl.Spec.Containers[0].ReadinessProbe = tc.probe.DeepCopy()
				}
			}
			lwss := leaderWorkerSets(build(t, svc))
			require.Len(t, lwss, 2)
			for _, lws := range lwss {
				want := tc.prefill
				if strings.Contains(lws.Name, "decode") {
					want = tc.decode
				}
				for _, tpl := range podTemplates(lws) {
					server := tpl.Spec.Containers[api.ServingContainerIndex(&tpl.Spec)]
					probe := server.ReadinessProbe
					require.NotNil(t, probe, lws.Name)
					require.NotNil(t, probe.Exec, "%s: an exec probe, not %+v", lws.Name, probe.ProbeHandler)
					assert.Nil(t, probe.HTTPGet)
					require.Greater(t, len(probe.Exec.Command), 5)
					assert.Equal(t, []string{"python3", "-I", "-S", "-c"}, probe.Exec.Command[:4])
					assert.Equal(t, want, probe.Exec.Command[5:], lws.Name)
					timings := *probe
					timings.ProbeHandler = corev1.ProbeHandler{}
					assert.Equal(t, tc.timings, timings, "the probe's timings are the template's")
					var podIP []corev1.EnvVar
					for _, v := range server.Env {
						if v.Name == "POD_IP" {
							podIP = append(podIP, v)
						}
					}
					assert.Equal(t, []corev1.EnvVar{{Name: "POD_IP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIP"}}}},
						podIP, "the pod's address, once")
				}
			}
		})
	}
}

// rankServers are n HTTP servers on consecutive ports of host, the ranks of a pod: rank i answers
// GET path with 200 unless hang[i], when its port takes connections and never answers, as a
// stopped (SIGSTOPped) server's does. held is the longest a client kept a hung rank's
// connection open before giving up.
func rankServers(t *testing.T, host string, n int, hang map[int]bool) (base int32, held func() time.Duration) {
	t.Helper()
	for attempt := 0; attempt < 50; attempt++ {
		first, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
		require.NoError(t, err)
		base := first.Addr().(*net.TCPAddr).Port
		listeners := []net.Listener{first}
		for i := 1; i < n; i++ {
			l, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(base+i)))
			if err != nil {
				break
			}
			listeners = append(listeners, l)
		}
		if len(listeners) < n {
			closeListeners(listeners)
			continue
		}
		t.Cleanup(func() { closeListeners(listeners) })
		var mu sync.Mutex
		var longest time.Duration
		for i, l := range listeners {
			if hang[i] {
				go func() { // takes each connection and answers nothing, until the client closes it
					for {
						conn, err := l.Accept()
						if err != nil {
							return
						}
						go func() {
							began := time.Now()
							_, _ = io.Copy(io.Discard, conn)
							mu.Lock()
							longest = max(longest, time.Since(began))
							mu.Unlock()
							_ = conn.Close()
						}()
					}
				}()
				continue
			}
			go func() {
				_ = http.Serve(l, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					if r.URL.Path != "/health" {
						w.WriteHeader(http.StatusNotFound)
					}
				}))
			}()
		}
		return int32(base), func() time.Duration {
			mu.Lock()
			defer mu.Unlock()
			return longest
		}
	}
	t.Fatal("no run of free ports")
	return 0, nil
}

func closeListeners(listeners []net.Listener) {
	for _, l := range listeners {
		_ = l.Close()
	}
}

// TestRankReadinessProbeNamesTheRankThatDoesNotAnswer runs the rendered probe's command with this
// machine's python3 in place of the image's: it passes when every rank answers, and otherwise
// fails within the probe's timeout, naming the first rank that did not (its output is the
// kubelet's event message).
func TestRankReadinessProbeNamesTheRankThatDoesNotAnswer(t *testing.T) {
	// 5 s, the rendered default's: its budget of 4 s is wide enough that a loaded machine's
	// scheduling cannot move the hung rank's wait across budget/2.
	const hungProbeTimeout = 5
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("no python3 here to run the probe with")
	}
	for _, host := range []string{"127.0.0.1", "::1"} {
		if l, err := net.Listen("tcp", net.JoinHostPort(host, "0")); err != nil {
			continue // no IPv6 here
		} else {
			_ = l.Close()
		}
		for _, tc := range []struct {
			name string
			hang map[int]bool
			path string
			want string // "" for a pass
		}{
			{name: "every rank answers", path: "/health"},
			{name: "local rank 1 hangs", path: "/health", hang: map[int]bool{1: true, 2: true}, want: "data parallel rank 4 (local rank 1, port %d) did not answer GET /health: timed out"},
			{name: "a path no rank serves", path: "/nope", want: "data parallel rank 3 (local rank 0, port %d) did not answer GET /nope: HTTP 404"},
		} {
			t.Run(host+" "+tc.name, func(t *testing.T) {
				base, held := rankServers(t, host, 3, tc.hang)
				server := &corev1.Container{ReadinessProbe: &corev1.Probe{TimeoutSeconds: hungProbeTimeout, ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
					Path: tc.path, Port: intstr.FromInt32(base)}}}}
				probe := render.RankReadinessProbe(server, base, 3)
				// As the kubelet runs it: a command still running at the probe's timeout is cut
				// short (k8s.io/kubernetes pkg/probe/exec/exec.go), and its output is lost.
				ctx, cancel := context.WithTimeout(context.Background(), hungProbeTimeout*time.Second)
				defer cancel()
				cmd := exec.CommandContext(ctx, python, probe.Exec.Command[1:]...)
				cmd.Env = []string{"POD_IP=" + host, "LWS_WORKER_INDEX=1"}
				out, err := cmd.CombinedOutput()
				require.NoError(t, ctx.Err(), "the script gave up before the kubelet's timeout cut it short: %s", out)
				if tc.want == "" {
					require.NoError(t, err, "%s", out)
					return
				}
				require.Error(t, err)
				failed := base
				if tc.hang[1] {
					failed = base + 1
				}
				// The message is the script's own, so it named the rank before the kubelet's cut.
				assert.Equal(t, fmt.Sprintf(tc.want, failed), strings.TrimSpace(string(out)))
				if tc.hang[1] {
					// ... and it waited for the hung rank for most of its budget (the timeout
					// less the margin for python's start), not a fixed short while: order, not a
					// window a loaded machine's scheduling breaks (issue 54).
					budget := time.Duration(float64(hungProbeTimeout)*0.8) * time.Second
					assert.Greater(t, held(), budget/2, "a hung rank is waited for until the GETs' budget of %s", budget)
				}
			})
		}
	}
}
