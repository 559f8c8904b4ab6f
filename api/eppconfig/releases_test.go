// SPDX-License-Identifier: Apache-2.0

package eppconfig

import (
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/fusioninfer/pulumi-fusioninfer/api/vllm"
)

// TestArgsAreFlagsOfTheRelease: every flag the router renders for a release is one its EPP
// defines (the release table, each list from the EPP's own options), none is one it refuses, and
// a release without a configuration, tracing or leader election gets no such flag. GIE v1.5.0's
// flags are also parsed by its own flag set (TestGIE150ArgsAreTheEPPs); lwepp's and v1.5.0's run
// in make e2e.
func TestArgsAreFlagsOfTheRelease(t *testing.T) {
	for _, release := range Releases() {
		for _, elect := range []bool{false, true} {
			args := release.Args(Flags{PoolName: "p", PoolNamespace: "ns", PoolGroup: GroupInferenceV1, ConfigFile: "/config/config.yaml",
				GRPCPort: 9002, GRPCHealthPort: 9003, MetricsPort: 9090, LeaderElection: elect})
			var flags []string
			for _, arg := range args {
				if name, ok := strings.CutPrefix(arg, "--"); ok {
					name, _, _ = strings.Cut(name, "=")
					flags = append(flags, name)
				}
			}
			for _, flag := range flags {
				assert.Contains(t, releases[release].flags, flag, "%s has --%s", release, flag)
				assert.NotContains(t, releases[release].refused, flag, "%s refuses --%s", release, flag)
			}
			assert.Equal(t, release.ReadsConfig(), slices.Contains(flags, "config-file"), release)
			assert.Equal(t, elect && release.ElectsLeader(), slices.Contains(args, FlagLeaderElection), "%s, leader election %v", release, elect)
		}
	}
	assert.False(t, ReleaseLWEPP.ElectsLeader(), "lwepp has no leader election")
	assert.NotContains(t, releases[ReleaseLWEPP].flags, "config-file")
}

// TestGIE120ArgsNameVLLMsKVCacheMetric: GIE v1.2.0's EPP (and llm-d-inference-scheduler v0.4.0's,
// its runner) reads the KV-cache metric's name from --kv-cache-usage-percentage-metric alone, whose
// default is vLLM's old name (pkg/epp/server/runserver.go DefaultKvCacheUsagePercentageMetric);
// the router passes the name vLLM v0.33.0 exports. The later releases refuse the flag.
func TestGIE120ArgsNameVLLMsKVCacheMetric(t *testing.T) {
	for _, release := range Releases() {
		args := release.Args(Flags{PoolName: "p", PoolNamespace: "ns", PoolGroup: GroupInferenceV1, ConfigFile: "/config/config.yaml",
			GRPCPort: 9002, GRPCHealthPort: 9003, MetricsPort: 9090})
		i := slices.Index(args, "--kv-cache-usage-percentage-metric")
		if release != ReleaseGIE {
			assert.Equal(t, -1, i, "%s: %v", release, args)
			continue
		}
		if assert.NotEqual(t, -1, i, "%s: %v", release, args) && assert.Less(t, i+1, len(args)) {
			assert.Equal(t, vllm.MetricKVCacheUsage, args[i+1])
		}
	}
}

// TestWatchedGroupFollowsTheReleaseAndTheServedGroups: the group whose objectives and rewrites
// each release's EPP watches, on a cluster that serves their CRDs in the Inference Extension's
// group, llm-d's, both or neither: llm-d-router v0.10.0 prefers llm-d.ai and falls back to the
// Inference Extension's group, GIE v1.5.0 knows only its own, GIE v1.2.0 watches its objectives
// without asking the cluster and reads no rewrite, lwepp reads neither.
func TestWatchedGroupFollowsTheReleaseAndTheServedGroups(t *testing.T) {
	x, llmd := GroupInferenceX, GroupLLMD
	servedSets := map[string][]string{"x-k8s": {x}, "llm-d.ai": {llmd}, "both": {llmd, x}, "none": nil}
	// want: release, kind, served set -> the group watched ("" none)
	want := map[Release]map[string]map[string]string{
		ReleaseRouter: {
			KindObjective:    {"x-k8s": x, "llm-d.ai": llmd, "both": llmd, "none": ""},
			KindModelRewrite: {"x-k8s": x, "llm-d.ai": llmd, "both": llmd, "none": ""},
		},
		ReleaseGIE150: {
			KindObjective:    {"x-k8s": x, "llm-d.ai": "", "both": x, "none": ""},
			KindModelRewrite: {"x-k8s": x, "llm-d.ai": "", "both": x, "none": ""},
		},
		ReleaseGIE: {
			KindObjective:    {"x-k8s": x, "llm-d.ai": x, "both": x, "none": x},
			KindModelRewrite: {"x-k8s": "", "llm-d.ai": "", "both": "", "none": ""},
		},
		ReleaseLWEPP: {
			KindObjective:    {"x-k8s": "", "llm-d.ai": "", "both": "", "none": ""},
			KindModelRewrite: {"x-k8s": "", "llm-d.ai": "", "both": "", "none": ""},
		},
	}
	for _, release := range Releases() {
		for _, kind := range []string{KindObjective, KindModelRewrite} {
			for name, served := range servedSets {
				group, watched := release.WatchedGroup(kind, served)
				assert.Equal(t, want[release][kind][name], group, "%s, %s, CRDs in %s", release, kind, name)
				assert.Equal(t, group != "", watched, "%s, %s, CRDs in %s", release, kind, name)
			}
		}
	}
}
