//go:build conformance

package conformance

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
)

// kubernetesVersion is the kube-apiserver the suite runs; tests/conformance/kubeapiserver pins it.
const kubernetesVersion = "v1.35.1"

// progress prints what the suite is doing, so a person watching knows it is alive.
func progress(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "[conformance %s] %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}

// cluster is a real etcd and kube-apiserver on loopback ports chosen at run time.
type cluster struct {
	dir       string
	processes []*exec.Cmd
	config    *rest.Config
	client    dynamic.Interface
}

// buildKubeAPIServer builds kube-apiserver from the wrapper module once; the binary is kept in
// the user cache under the hash of the wrapper's go.sum, and the Go build cache makes a rebuild
// after a change cheap.
func buildKubeAPIServer() (string, error) {
	_, here, _, _ := runtime.Caller(0)
	wrapper := filepath.Join(filepath.Dir(here), "kubeapiserver")
	sum, err := os.ReadFile(filepath.Join(wrapper, "go.sum"))
	if err != nil {
		return "", err
	}
	hash := sha256.Sum256(sum)
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	binary := filepath.Join(cache, "pulumi-fusioninfer", "kube-apiserver-"+kubernetesVersion+"-"+hex.EncodeToString(hash[:6]))
	if _, err := os.Stat(binary); err == nil {
		progress("kube-apiserver %s: cached at %s", kubernetesVersion, binary)
		return binary, nil
	}
	progress("building kube-apiserver %s from k8s.io/kubernetes (a cold build takes several minutes)", kubernetesVersion)
	start := time.Now()
	cmd := exec.Command("go", "build", "-o", binary+".tmp", "k8s.io/kubernetes/cmd/kube-apiserver")
	cmd.Dir = wrapper
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building kube-apiserver: %v\n%s", err, out)
	}
	progress("built kube-apiserver in %s", time.Since(start).Round(time.Second))
	return binary, os.Rename(binary+".tmp", binary)
}

// ensureEtcd finds etcd, installing Debian's etcd-server when it is missing.
func ensureEtcd() (string, error) {
	if path, err := exec.LookPath("etcd"); err == nil {
		return path, nil
	}
	progress("etcd not found: installing Debian's etcd-server with apt-get")
	for _, args := range [][]string{{"update", "-qq"}, {"install", "-y", "-qq", "etcd-server"}} {
		cmd := exec.Command("apt-get", args...)
		cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
		if out, err := cmd.CombinedOutput(); err != nil {
			return "", fmt.Errorf("apt-get %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	return exec.LookPath("etcd")
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// start runs a process in its own process group; it is killed if this process dies (the caller
// holds its OS thread, which Pdeathsig is tied to).
func (c *cluster) start(name string, args ...string) error {
	logFile, err := os.Create(filepath.Join(c.dir, filepath.Base(name)+".log"))
	if err != nil {
		return err
	}
	cmd := exec.Command(name, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return err
	}
	c.processes = append(c.processes, cmd)
	return nil
}

// logTail is the end of a process's log, for error messages.
func (c *cluster) logTail(name string) string {
	data, _ := os.ReadFile(filepath.Join(c.dir, name+".log"))
	if len(data) > 4000 {
		data = data[len(data)-4000:]
	}
	return string(data)
}

// startCluster starts etcd and kube-apiserver and waits until the API server is ready. The caller
// must stop it, whatever happens.
func startCluster(kubeAPIServer, etcd string) (*cluster, error) {
	dir, err := os.MkdirTemp("", "fusioninfer-conformance-")
	if err != nil {
		return nil, err
	}
	c := &cluster{dir: dir}
	etcdPort, err1 := freePort()
	peerPort, err2 := freePort()
	apiPort, err3 := freePort()
	if err := firstError(err1, err2, err3); err != nil {
		return c, err
	}
	etcdURL := fmt.Sprintf("http://127.0.0.1:%d", etcdPort)
	peerURL := fmt.Sprintf("http://127.0.0.1:%d", peerPort)
	progress("starting etcd on %s", etcdURL)
	if err := c.start(etcd, "--name", "conformance", "--data-dir", filepath.Join(dir, "etcd"),
		"--listen-client-urls", etcdURL, "--advertise-client-urls", etcdURL,
		"--listen-peer-urls", peerURL, "--initial-advertise-peer-urls", peerURL,
		"--initial-cluster", "conformance="+peerURL); err != nil {
		return c, err
	}
	if err := waitFor(30*time.Second, func() error { return httpOK(http.DefaultClient, etcdURL+"/health", "") }); err != nil {
		return c, fmt.Errorf("etcd did not become healthy: %w\n%s", err, c.logTail("etcd"))
	}

	token := "conformance-" + randomHex(16)
	if err := os.WriteFile(filepath.Join(dir, "tokens.csv"), []byte(token+`,conformance,conformance,"system:masters"`+"\n"), 0o600); err != nil {
		return c, err
	}
	if err := writeServiceAccountKey(filepath.Join(dir, "sa.key")); err != nil {
		return c, err
	}
	apiURL := fmt.Sprintf("https://127.0.0.1:%d", apiPort)
	progress("starting kube-apiserver %s on %s", kubernetesVersion, apiURL)
	if err := c.start(kubeAPIServer,
		"--etcd-servers", etcdURL,
		"--bind-address", "127.0.0.1", "--advertise-address", "127.0.0.1", "--secure-port", fmt.Sprint(apiPort),
		"--cert-dir", filepath.Join(dir, "certs"),
		"--token-auth-file", filepath.Join(dir, "tokens.csv"),
		"--authorization-mode", "RBAC",
		"--service-account-issuer", "https://kubernetes.default.svc",
		"--service-account-key-file", filepath.Join(dir, "sa.key"),
		"--service-account-signing-key-file", filepath.Join(dir, "sa.key"),
		"--service-cluster-ip-range", "10.0.0.0/24",
		"--disable-admission-plugins", "ServiceAccount",
		"--enable-priority-and-fairness=false",
	); err != nil {
		return c, err
	}
	insecure := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	if err := waitFor(120*time.Second, func() error { return httpOK(insecure, apiURL+"/readyz", token) }); err != nil {
		return c, fmt.Errorf("kube-apiserver did not become ready: %w\n%s", err, c.logTail("kube-apiserver"))
	}
	progress("kube-apiserver ready")
	c.config = &rest.Config{Host: apiURL, BearerToken: token, TLSClientConfig: rest.TLSClientConfig{Insecure: true}, QPS: 500, Burst: 1000}
	c.client, err = dynamic.NewForConfig(c.config)
	return c, err
}

// stop ends every process (TERM, then KILL) and removes the data directory.
func (c *cluster) stop() {
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
	_ = os.RemoveAll(c.dir)
	progress("stopped etcd and kube-apiserver")
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

func waitFor(timeout time.Duration, check func() error) error {
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

func firstError(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
