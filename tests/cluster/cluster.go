// SPDX-License-Identifier: Apache-2.0

// Package cluster runs a real Kubernetes control plane for the project's suites, with no container
// runtime: etcd and a kube-apiserver built from go.etcd.io/etcd and k8s.io/kubernetes (enough for
// tests/conformance); with Options, also kube-controller-manager and kube-scheduler, the
// LeaderWorkerSet controller with its webhooks, Volcano's scheduler and controllers, and kwok,
// which simulates GPU nodes and makes scheduled pods Running and Ready (tests/e2e).
//
// Every program is built from a wrapper module in modules/ and cached in the user cache dir
// under the hash of its go.sum; every process runs in its own process group on loopback ports
// picked at run time and is ended by its PID. Logs stay in Dir when the caller keeps them.
package cluster

import (
	"cmp"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/fusioninfer/pulumi-fusioninfer/core/platform"
)

// Progress prints what a suite is doing, so a person watching knows it is alive.
func Progress(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "[cluster %s] %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}

// Options say which controllers run beside the API server.
type Options struct {
	// Controllers runs kube-controller-manager (garbage collector, StatefulSets, Deployments,
	// Jobs, namespaces, endpoints) and kube-scheduler.
	Controllers bool
	// LeaderWorkerSet runs the LWS controller manager with its webhooks, and installs its CRDs:
	// LWSVersion, or LeaderWorkerSetVersion ("v0.8.0").
	LeaderWorkerSet        bool
	LeaderWorkerSetVersion string
	// Volcano runs vc-controller-manager and vc-scheduler with Volcano's default scheduler
	// configuration, and installs Volcano's CRDs.
	Volcano bool
	// Kwok runs kwok for the nodes AddNodes makes. PodReadyDelay is how long a scheduled pod
	// stays Pending before kwok makes it Running and Ready: the time a model takes to load.
	Kwok          bool
	PodReadyDelay time.Duration
	// Containers gives pods addresses of a network local to this machine (which needs
	// CAP_NET_ADMIN) and runs, for each Running pod, the programs that stand for its containers'
	// images, reachable at the pod's address and ports: vLLM's is llm-d-inference-sim, the
	// Endpoint Pickers' are GIE's (containers.go). It needs Kwok.
	Containers bool
	// KEDA runs KEDA's operator and metrics server (its external metrics API, through the API
	// server's aggregation layer) and kube-controller-manager's HPA controller, which acts on
	// the HPAs KEDA makes.
	KEDA bool
	// Prometheus runs Prometheus (PrometheusVersion, only Kubernetes discovery) on loopback,
	// reaching the pods' addresses; ScrapePodMonitors configures it from the cluster's PodMonitors
	// as prometheus-operator would, beside kube-state-metrics (KubeStateMetricsVersion, for the
	// StatefulSets). Meant with Containers: without them no pod serves metrics.
	Prometheus bool
	// Karpenter runs Karpenter's kwok cloud provider (KarpenterVersion), which launches kwok
	// nodes of GPUInstanceTypes for the NodePools' pending pods; it needs Kwok.
	Karpenter bool
	// Platform installs every object `fusioninfer platform render` prints for WholePlatform (the controllers'
	// Deployments and webhook configurations too, with no controller running), and no other CRD
	// in a version of its own: what tests/conformance/platform checks. Not with the others.
	Platform bool
}

// Cluster is a running control plane.
type Cluster struct {
	// CRDs are the project's CRDs as the server stored them (Start installs them: the
	// Platform's, then those of the other kinds the project emits or reads).
	CRDs []*unstructured.Unstructured
	// Dir holds the data, the certificates, the kubeconfig and every process's log.
	Dir        string
	Config     *rest.Config
	Dynamic    dynamic.Interface
	Clientset  kubernetes.Interface
	Kubeconfig string // a kubeconfig file for the API server
	// PrometheusURL is Prometheus' address when Options.Prometheus runs it.
	PrometheusURL string

	processes []*exec.Cmd
	names     []string
	// containers runs the pods' programs (Options.Containers) on podNetwork.
	containers *containers
	podNetwork string
	// platform is what installPlatform rendered (platform.go).
	platform []platform.Object
}

// Start starts etcd and kube-apiserver and whatever opts asks for, and waits until each is
// ready. The caller must Stop it, whatever happens (Start returns the cluster with its error).
// The calling goroutine must hold its OS thread (runtime.LockOSThread): the children get SIGKILL
// when the thread that started them ends.
func Start(ctx context.Context, opts Options) (*Cluster, error) {
	dir, err := os.MkdirTemp("", "fusioninfer-cluster-")
	if err != nil {
		return nil, err
	}
	c := &Cluster{Dir: dir}
	var programs chan error
	if opts.Containers { // built beside the control plane's programs, which come first
		programs = make(chan error, 1)
		go func() { programs <- buildAll(containerPrograms()...) }()
	}
	if err := c.startAPIServer(); err != nil {
		return c, err
	}
	switch {
	case opts.Platform:
		if err := c.installPlatform(ctx, WholePlatform(), func(platform.Object) bool { return false }); err != nil {
			return c, err
		}
	case usesPlatform(opts):
		if err := c.installPlatform(ctx, platformSpec(opts), processControllers); err != nil {
			return c, err
		}
	}
	if opts.Controllers {
		if err := c.startKubeControllers(opts.KEDA); err != nil {
			return c, err
		}
	}
	if opts.LeaderWorkerSet {
		if err := c.startLeaderWorkerSet(ctx, cmp.Or(opts.LeaderWorkerSetVersion, LWSVersion), usesPlatform(opts) && platformLWS(opts)); err != nil {
			return c, err
		}
	}
	if opts.Volcano {
		if err := c.startVolcano(ctx); err != nil {
			return c, err
		}
	}
	projectCRDs, err := c.installProjectCRDs(ctx, opts)
	if err != nil {
		return c, err
	}
	c.CRDs = append(c.CRDs, projectCRDs...)
	if opts.Kwok {
		podCIDR, programPods := "", ""
		if opts.Containers {
			var err error
			if podCIDR, err = c.addPodNetwork(); err != nil {
				return c, err
			}
			programPods = programPodsQuery()
		}
		if err := c.startKwok(opts.PodReadyDelay, podCIDR, programPods); err != nil {
			return c, err
		}
	}
	if opts.Containers {
		if err := <-programs; err != nil {
			return c, err
		}
		if err := c.startContainers(ctx); err != nil {
			return c, err
		}
	}
	if opts.Prometheus {
		if err := c.startPrometheus(); err != nil {
			return c, err
		}
	}
	if opts.KEDA {
		if err := c.startKEDA(ctx); err != nil {
			return c, err
		}
	}
	if opts.Karpenter {
		if err := c.startKarpenter(ctx); err != nil {
			return c, err
		}
	}
	return c, nil
}

// frontProxyClient is the name the API server's aggregation layer presents to extension API servers.
const frontProxyClient = "front-proxy-client"

// startAPIServer starts etcd and kube-apiserver and waits until the API server is ready.
func (c *Cluster) startAPIServer() error {
	apiServer, err := kubeAPIServer.build()
	if err != nil {
		return err
	}
	etcdBinary, err := etcd.build()
	if err != nil {
		return err
	}
	etcdPort, err1 := freePort()
	peerPort, err2 := freePort()
	apiPort, err3 := freePort()
	if err := errors.Join(err1, err2, err3); err != nil {
		return err
	}
	etcdURL := fmt.Sprintf("http://127.0.0.1:%d", etcdPort)
	peerURL := fmt.Sprintf("http://127.0.0.1:%d", peerPort)
	Progress("starting etcd on %s", etcdURL)
	if err := c.start("etcd", etcdBinary, "--name", "cluster", "--data-dir", filepath.Join(c.Dir, "etcd"),
		"--listen-client-urls", etcdURL, "--advertise-client-urls", etcdURL,
		"--listen-peer-urls", peerURL, "--initial-advertise-peer-urls", peerURL,
		"--initial-cluster", "cluster="+peerURL); err != nil {
		return err
	}
	if err := WaitFor(30*time.Second, func() error { return httpOK(http.DefaultClient, etcdURL+"/health", "") }); err != nil {
		return fmt.Errorf("etcd did not become healthy: %w\n%s", err, c.LogTail("etcd"))
	}

	token := "cluster-" + randomHex(16)
	if err := os.WriteFile(filepath.Join(c.Dir, "tokens.csv"), []byte(token+`,admin,admin,"system:masters"`+"\n"), 0o600); err != nil {
		return err
	}
	if err := writeServiceAccountKey(filepath.Join(c.Dir, "sa.key")); err != nil {
		return err
	}
	// The aggregation layer's front proxy: how the API server authenticates to an extension API
	// server (KEDA's external metrics), which trusts the CA for the X-Remote-User headers.
	frontProxy := filepath.Join(c.Dir, "front-proxy")
	if _, err := writeCertificate(frontProxy, "client", frontProxyClient, nil); err != nil {
		return err
	}
	apiURL := fmt.Sprintf("https://127.0.0.1:%d", apiPort)
	Progress("starting kube-apiserver %s on %s", KubernetesVersion, apiURL)
	if err := c.start("kube-apiserver", apiServer,
		"--etcd-servers", etcdURL,
		"--bind-address", "127.0.0.1", "--advertise-address", "127.0.0.1", "--secure-port", fmt.Sprint(apiPort),
		"--cert-dir", filepath.Join(c.Dir, "certs"),
		"--token-auth-file", filepath.Join(c.Dir, "tokens.csv"),
		"--authorization-mode", "RBAC",
		"--service-account-issuer", "https://kubernetes.default.svc",
		"--service-account-key-file", filepath.Join(c.Dir, "sa.key"),
		"--service-account-signing-key-file", filepath.Join(c.Dir, "sa.key"),
		"--service-cluster-ip-range", "10.0.0.0/24",
		// No ServiceAccount tokens to mount (no kubelet), and no not-ready taint on new nodes: the
		// node-lifecycle controller that would lift it is off (kwok's nodes send no heartbeats).
		"--disable-admission-plugins", "ServiceAccount,TaintNodesByCondition",
		"--enable-priority-and-fairness=false",
		"--requestheader-client-ca-file", filepath.Join(frontProxy, "ca.crt"),
		"--requestheader-allowed-names", frontProxyClient,
		"--requestheader-username-headers", "X-Remote-User",
		"--requestheader-group-headers", "X-Remote-Group",
		"--requestheader-extra-headers-prefix", "X-Remote-Extra-",
		"--proxy-client-cert-file", filepath.Join(frontProxy, "client.crt"),
		"--proxy-client-key-file", filepath.Join(frontProxy, "client.key"),
	); err != nil {
		return err
	}
	insecure := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	if err := WaitFor(120*time.Second, func() error { return httpOK(insecure, apiURL+"/readyz", token) }); err != nil {
		return fmt.Errorf("kube-apiserver did not become ready: %w\n%s", err, c.LogTail("kube-apiserver"))
	}
	Progress("kube-apiserver ready")
	c.Config = &rest.Config{Host: apiURL, BearerToken: token, TLSClientConfig: rest.TLSClientConfig{Insecure: true}, QPS: 500, Burst: 1000}
	c.Kubeconfig = filepath.Join(c.Dir, "kubeconfig")
	kubeconfig := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: cluster, cluster: {server: %q, insecure-skip-tls-verify: true}}]
users: [{name: admin, user: {token: %q}}]
contexts: [{name: cluster, context: {cluster: cluster, user: admin}}]
current-context: cluster
`, apiURL, token)
	if err := os.WriteFile(c.Kubeconfig, []byte(kubeconfig), 0o600); err != nil {
		return err
	}
	if c.Dynamic, err = dynamic.NewForConfig(c.Config); err != nil {
		return err
	}
	c.Clientset, err = kubernetes.NewForConfig(c.Config)
	return err
}

// start runs a process in its own process group, logging to Dir/{name}.log; it is killed if
// this process dies (Pdeathsig, tied to the calling OS thread).
func (c *Cluster) start(name, path string, args ...string) error {
	return c.startCommand(name, exec.Command(path, args...), nil)
}

// startCommand starts cmd as start does, with env as its environment (nil: this process's).
func (c *Cluster) startCommand(name string, cmd *exec.Cmd, env []string) error {
	logFile, err := os.Create(filepath.Join(c.Dir, name+".log"))
	if err != nil {
		return err
	}
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return err
	}
	c.processes = append(c.processes, cmd)
	c.names = append(c.names, name)
	return nil
}

// LogTail is the end of a process's log, for error messages.
func (c *Cluster) LogTail(name string) string {
	data, _ := os.ReadFile(filepath.Join(c.Dir, name+".log"))
	if len(data) > 4000 {
		data = data[len(data)-4000:]
	}
	return string(data)
}

// Stop ends every process (TERM, then KILL after 10 s), last started first, and removes Dir
// unless keepLogs (then it says where they are).
func (c *Cluster) Stop(keepLogs bool) {
	if c == nil {
		return
	}
	c.containers.stopAll()
	for i := len(c.processes) - 1; i >= 0; i-- {
		cmd := c.processes[i]
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
		}
	}
	c.removePodNetwork()
	removeCheckoutPrograms()
	if keepLogs {
		Progress("stopped %v; logs kept in %s", c.names, c.Dir)
		return
	}
	_ = os.RemoveAll(c.Dir)
	Progress("stopped %v", c.names)
}

// givenPorts are the loopback ports freePort has handed out in this process.
var (
	givenPorts   = map[int]bool{}
	givenPortsMu sync.Mutex
)

// freePort is a loopback port nothing listens on and that no earlier call handed out: the port is
// free only until its program binds it, and the kernel may pick a port it just closed again for
// the next bind to port 0 (two ranks of one pod got the same port once, and one of them could not
// listen).
func freePort() (int, error) {
	givenPortsMu.Lock()
	defer givenPortsMu.Unlock()
	for range 100 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, err
		}
		port := l.Addr().(*net.TCPAddr).Port
		_ = l.Close()
		if !givenPorts[port] {
			givenPorts[port] = true
			return port, nil
		}
	}
	return 0, errors.New("no loopback port that was not handed out already, in 100 tries")
}

func httpOK(client *http.Client, url, token string) error {
	req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", url, resp.Status)
	}
	return nil
}

// WaitFor calls check until it returns nil or timeout has passed.
func WaitFor(timeout time.Duration, check func() error) error {
	deadline := time.Now().Add(timeout)
	for {
		err := check()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return err
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func writeServiceAccountKey(path string) error {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return err
	}
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}), 0o600)
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
