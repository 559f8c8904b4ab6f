// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fusioninfer/pulumi-fusioninfer/core/diagnosis"
)

// loraCluster is an API server with two running replicas of a service whose pods run the LoRA
// loader: the first pod's loader answers through the API server's pod proxy with its state, the
// second's proxy fails (a pod the API server cannot reach).
func loraCluster(t *testing.T) (string, *[]string) {
	t.Helper()
	var asked []string
	pod := func(i int) string {
		return fmt.Sprintf(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"svc-server-%d-0","namespace":"llm","labels":{"fusioninfer.io/service":"svc",`+
			`"leaderworkerset.sigs.k8s.io/name":"svc-server-%d","leaderworkerset.sigs.k8s.io/worker-index":"0"}},`+
			`"spec":{"nodeName":"n","containers":[{"name":"vllm","image":"vllm/vllm-openai:v0.33.0"},{"name":"lora-loader","image":"x"}]},`+
			`"status":{"phase":"Running","podIP":"10.0.0.%d","conditions":[{"type":"Ready","status":"True"}],`+
			`"containerStatuses":[{"name":"vllm","ready":true,"state":{"running":{}}},{"name":"lora-loader","ready":true,"state":{"running":{}}}]}}`, i, i, i)
	}
	lws := func(i int) string {
		return fmt.Sprintf(`{"apiVersion":"leaderworkerset.x-k8s.io/v1","kind":"LeaderWorkerSet","metadata":{"name":"svc-server-%d","namespace":"llm",`+
			`"labels":{"fusioninfer.io/service":"svc","fusioninfer.io/role-name":"server"}},"spec":{"replicas":1},`+
			`"status":{"replicas":1,"readyReplicas":1,"conditions":[{"type":"Available","status":"True","reason":"AllGroupsReady","message":"ok","lastTransitionTime":"2026-01-01T00:00:00Z"}]}}`, i)
	}
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/api/v1/namespaces/llm/pods":
			fmt.Fprintf(w, `{"kind":"PodList","apiVersion":"v1","metadata":{},"items":[%s,%s]}`, pod(0), pod(1))
		case "/apis/leaderworkerset.x-k8s.io/v1/namespaces/llm/leaderworkersets":
			fmt.Fprintf(w, `{"kind":"LeaderWorkerSetList","apiVersion":"leaderworkerset.x-k8s.io/v1","metadata":{},"items":[%s,%s]}`, lws(0), lws(1))
		case "/api/v1/namespaces/llm/pods/svc-server-0-0:8091/proxy/adapters":
			asked = append(asked, r.URL.Path)
			fmt.Fprint(w, `{"adapters":[{"name":"sql","path":"/models/hf/org/sql","loaded":true},`+
				`{"name":"gone","path":"/models/hf/org/gone","loaded":false,"error":"no adapter_config.json in /models/hf/org/gone"}],`+
				`"problem":"adapter gone (/models/hf/org/gone) failed to load: no adapter_config.json in /models/hf/org/gone"}`)
		case "/api/v1/namespaces/llm/pods/svc-server-1-0:8091/proxy/adapters":
			asked = append(asked, r.URL.Path)
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprint(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","message":"error trying to reach service: dial tcp 10.0.0.1:8091: connect: connection refused","code":503}`)
		default:
			fmt.Fprint(w, `{"kind":"List","apiVersion":"v1","metadata":{},"items":[]}`)
		}
	}))
	t.Cleanup(server.Close)
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	data := fmt.Sprintf("apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: %s}}]\nusers: [{name: u, user: {token: t}}]\n"+
		"contexts: [{name: c, context: {cluster: c, user: u}}]\ncurrent-context: c\n", server.URL)
	require.NoError(t, os.WriteFile(kubeconfig, []byte(data), 0o600))
	return kubeconfig, &asked
}

// TestStatusListsEachPodsAdapters: status asks each server pod's loader, through the API
// server's pod proxy, which adapters it loaded and which failed and why; a pod whose loader
// cannot be reached is said so, and the status still reports.
func TestStatusListsEachPodsAdapters(t *testing.T) {
	kubeconfig, asked := loraCluster(t)
	var out, errOut bytes.Buffer
	code := runMain([]string{"status", "--name", "svc", "-n", "llm", "--kubeconfig", kubeconfig}, strings.NewReader(""), &out, &errOut)
	assert.Equal(t, 0, code, errOut.String())
	assert.Len(t, *asked, 2, "each pod's loader asked")
	text := out.String()
	assert.Contains(t, text, "svc-server-0-0  loaded: sql\n")
	assert.Contains(t, text, "failed: gone (/models/hf/org/gone): no adapter_config.json in /models/hf/org/gone\n")
	assert.Contains(t, text, "svc-server-1-0  not known: its loader could not be asked: ")
	assert.Contains(t, text, "connection refused")

	out.Reset()
	code = runMain([]string{"status", "--name", "svc", "-n", "llm", "--kubeconfig", kubeconfig, "-o", "json"}, strings.NewReader(""), &out, &errOut)
	assert.Equal(t, 0, code)
	var report diagnosis.Report
	require.NoError(t, json.Unmarshal(out.Bytes(), &report), out.String())
	require.Len(t, report.Roles, 1)
	require.Len(t, report.Roles[0].Replicas, 2)
	assert.Equal(t, []diagnosis.PodAdapters{{Pod: "svc-server-0-0", Loaded: []string{"sql"},
		Failed: []diagnosis.FailedAdapter{{Name: "gone", Path: "/models/hf/org/gone", Cause: "no adapter_config.json in /models/hf/org/gone"}}}},
		report.Roles[0].Replicas[0].Adapters)
	require.Len(t, report.Roles[0].Replicas[1].Adapters, 1)
	assert.Contains(t, report.Roles[0].Replicas[1].Adapters[0].Unknown, "its loader could not be asked")
}
