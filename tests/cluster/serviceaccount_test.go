// SPDX-License-Identifier: Apache-2.0

package cluster

import (
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/tools/clientcmd"
)

// Two pods of one ServiceAccount start at once (a picker Deployment's replicas): whichever
// reads the account's kubeconfig while the other's start writes it must read it whole, or its
// program finds "no configuration" and never starts (seen in CI: a picker that never ran).
func TestServiceAccountKubeconfigIsWholeWhileAnotherPodWritesIt(t *testing.T) {
	dir := t.TempDir()
	c := &Cluster{Dir: dir, Kubeconfig: filepath.Join(dir, "kubeconfig")}
	require.NoError(t, os.WriteFile(c.Kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:6443"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`), 0o600))
	path, err := c.serviceAccountKubeconfig("ns", "picker")
	require.NoError(t, err)

	var writers sync.WaitGroup
	for range 4 {
		writers.Go(func() {
			for range 200 {
				_, err := c.serviceAccountKubeconfig("ns", "picker")
				assert.NoError(t, err)
			}
		})
	}
	done := make(chan struct{})
	go func() { writers.Wait(); close(done) }()
	for reads := 0; ; reads++ {
		select {
		case <-done:
			t.Logf("%d reads", reads)
			return
		default:
		}
		config, err := clientcmd.BuildConfigFromFlags("", path)
		require.NoError(t, err, "read %d", reads)
		require.Equal(t, "system:serviceaccount:ns:picker", config.Impersonate.UserName)
	}
}
