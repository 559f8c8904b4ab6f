// SPDX-License-Identifier: Apache-2.0

package harness

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/fusioninfer/pulumi-fusioninfer/api"
	"github.com/fusioninfer/pulumi-fusioninfer/internal/observe"
	testcluster "github.com/fusioninfer/pulumi-fusioninfer/tests/cluster"
	"github.com/fusioninfer/pulumi-fusioninfer/tests/kit/testcli"
)

// recordFixtures (FUSIONINFER_RECORD_FIXTURES=1) makes RecordFixture write the states the tests
// observe to core/diagnosis/testdata, where the diagnosis' table tests read them.
var recordFixtures = os.Getenv("FUSIONINFER_RECORD_FIXTURES") == "1"

// Status runs `fusioninfer status` on the service's manifest against the cluster, and returns
// what it printed (stdout, then stderr) and its exit status.
func Status(t *testing.T, svc *api.InferenceService, args ...string) (string, int) {
	t.Helper()
	data, err := yaml.Marshal(svc)
	require.NoError(t, err)
	manifest := filepath.Join(t.TempDir(), svc.Name+".yaml")
	require.NoError(t, os.WriteFile(manifest, data, 0o600))
	stdout, stderr, code := runStatus(t, append([]string{"-f", manifest}, args...))
	t.Logf("fusioninfer status (exit %d):\n%s%s", code, stdout, stderr)
	return stdout + stderr, code
}

// StatusOf runs `fusioninfer status --name name -n namespace` against the cluster, quietly (a
// test that polls logs what it settles on), and returns its stdout, its stderr and its exit
// status.
func StatusOf(t testing.TB, name, namespace string, args ...string) (string, string, int) {
	t.Helper()
	return runStatus(t, append([]string{"--name", name, "-n", namespace}, args...))
}

func runStatus(t testing.TB, args []string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(testcli.Binary(t), append([]string{"status", "--kubeconfig", Cluster.Kubeconfig}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatal(err)
	}
	return stdout.String(), stderr.String(), cmd.ProcessState.ExitCode()
}

// RunStatus runs the CLI at binary (testcli.Binary) as `fusioninfer status` with args against the
// cluster, from any goroutine; an exit status other than 0 is no error.
func RunStatus(binary string, args []string) (string, string, error) {
	cmd := exec.Command(binary, append([]string{"status", "--kubeconfig", Cluster.Kubeconfig}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		err = nil
	}
	return stdout.String(), stderr.String(), err
}

// RecordFixture writes the service's observed state as the diagnosis fixture name, with
// FUSIONINFER_RECORD_FIXTURES=1.
func RecordFixture(t *testing.T, svc *api.InferenceService, name string) {
	t.Helper()
	if !recordFixtures {
		return
	}
	clients, err := observe.NewClients(Cluster.Kubeconfig, "", 30*time.Second)
	require.NoError(t, err)
	observed, err := clients.Service(context.Background(), svc.Name, svc.Namespace, svc)
	require.NoError(t, err)
	data, err := observed.YAML()
	require.NoError(t, err)
	path := filepath.Join(testcluster.RepositoryRoot(), "core", "diagnosis", "testdata", name+".yaml")
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, data, 0o644))
}
