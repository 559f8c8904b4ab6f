// SPDX-License-Identifier: Apache-2.0

package main

// The state contract (design 0025): a stack keeps, for each child, its URN (the component's name,
// the child's name, its type token) and the state the kubernetes provider returned. An upgrade of
// this project that changes a URN makes Pulumi delete the old child and create a new one, and one
// that changes a field the provider replaces on (an object's name, namespace, kind) replaces it;
// for an LWS either one tears down a serving replica and reloads its model. So, in the manner of
// the upgrade tests of Pulumi's providers, pulumi-eks's among them (pulumi/providertest:
// PreviewProviderUpgrade previews with the new code a stack recorded at the baseline release;
// assertpreview.HasNoReplacements), the stacks of every example manifest are recorded here at a release
// (testdata/state/vVERSION/, with -record) and each is previewed with the code of today, which
// must leave every resource as it is.
//
// v0.1.0's states were recorded from the tree after it was laid out by layer (issue 33): that
// change renamed packages, not children (the goldens of core/render did not change), so those
// states are what v0.1.0's code leaves in a stack.

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pulumi/pulumi/pkg/v3/display"
	"github.com/pulumi/pulumi/pkg/v3/engine"
	lt "github.com/pulumi/pulumi/pkg/v3/engine/lifecycletest/framework"
	"github.com/pulumi/pulumi/pkg/v3/resource/deploy"
	"github.com/pulumi/pulumi/pkg/v3/resource/plugin"
	"github.com/pulumi/pulumi/pkg/v3/resource/stack"
	"github.com/pulumi/pulumi/sdk/v3/go/common/apitype"
	"github.com/pulumi/pulumi/sdk/v3/go/common/providers"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource/config"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource/sig"
	"github.com/pulumi/pulumi/sdk/v3/go/common/workspace"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/mod/semver"

	"github.com/fusioninfer/pulumi-fusioninfer/tests/kit/enginetest"
)

var record = flag.Bool("record", false, "record the stack of every example manifest, deployed with this tree's code, as the state of version VERSION (testdata/state/vVERSION)")

// The stack the states are recorded as: Pulumi.yaml's project, a stack named as a user's would be.
const (
	stateProject = "pulumi-fusioninfer"
	stateStack   = "dev"
)

// recordedProviderID is the ID of the kubernetes provider in a recorded state, for the random one
// the engine gave it.
const recordedProviderID = "0e3f719a-be56-4215-ad94-d6bec2e928a4"

// statePlan is `pulumi up` or `preview` of this program, the root program, with its configuration
// set to the example manifest (as `pulumi config set manifest examples/manifests/...`), against the
// kubernetes provider stand-in whose states are the real provider's (enginetest.Clusterless).
func statePlan(t *testing.T, example string) (*lt.TestPlan, *enginetest.Log) {
	t.Helper()
	plan, log := enginetest.Plan(t, func(string) plugin.Provider { return enginetest.Clusterless() }, program)
	plan.Project, plan.Stack = stateProject, stateStack
	plan.Config = config.Map{config.MustMakeKey(stateProject, "manifest"): config.NewValue("examples/manifests/" + example + ".yaml")}
	return plan, log
}

// TestRecordState, with -record, deploys every example manifest and writes its stack's state as
// `pulumi stack export` would (exported) into testdata/state/vVERSION/{example}.json. Record at a
// release, from the release's commit: the recorded states of a released version are never
// recorded again.
func TestRecordState(t *testing.T) {
	if !*record {
		t.Skip("records only with -record")
	}
	version, err := os.ReadFile("../VERSION")
	require.NoError(t, err)
	dir := filepath.Join("testdata", "state", "v"+strings.TrimSpace(string(version)))
	require.NoError(t, os.MkdirAll(dir, 0o755))
	for _, example := range examples(t) {
		plan, log := statePlan(t, example)
		snap, err := lt.TestOp(engine.Update).RunStep(plan.GetProject(), plan.GetTarget(t, nil), plan.Options, false, nil, nil, "record")
		require.NoError(t, err, "%s: %s", example, log)
		require.NoError(t, os.WriteFile(filepath.Join(dir, example+".json"), exported(t, snap), 0o644))
	}
}

// exported is the stack's state as `pulumi stack export` writes it, less what tells one
// recording from another and not one state from another, so that recording the same code again,
// on any machine, writes the same file: the times, where in this checkout each resource was
// registered, the provider's random ID, the order of sets and the order the engine finished the
// resources in. No secrets provider: the stack holds no secret (checked), and a recorded secret
// would need the secrets provider of the stack that recorded it.
func exported(t *testing.T, snap *deploy.Snapshot) []byte {
	t.Helper()
	deployment, err := stack.SerializeDeployment(context.Background(), snap, false)
	require.NoError(t, err)
	deployment.Manifest.Time = time.Time{}
	deployment.SecretsProviders = nil
	// Every provider's references are rewritten (a stack with a Stash has two, the kubernetes
	// provider and the engine's own; v0.3.0 was recorded rewriting the last one's only, and its
	// states were repaired to what this writes).
	var pairs []string
	for i := range deployment.Resources {
		if r := &deployment.Resources[i]; providers.IsProviderType(r.Type) {
			random, err := providers.NewReference(r.URN, r.ID)
			require.NoError(t, err)
			r.ID = recordedProviderID
			fixed, err := providers.NewReference(r.URN, r.ID)
			require.NoError(t, err)
			pairs = append(pairs, random.String(), fixed.String())
		}
	}
	ids := strings.NewReplacer(pairs...)
	for i := range deployment.Resources {
		r := &deployment.Resources[i]
		r.Created, r.Modified, r.SourcePosition, r.StackTrace = nil, nil, "", nil
		r.Provider = ids.Replace(r.Provider)
		slices.Sort(r.Dependencies) // sets, which the SDK sends in the order of a Go map's keys
		for _, urns := range r.PropertyDependencies {
			slices.Sort(urns)
		}
	}
	deployment.Resources = inDependencyOrder(t, deployment.Resources)
	data, err := json.MarshalIndent(apitype.UntypedDeployment{Version: apitype.DeploymentSchemaVersionCurrent,
		Deployment: mustJSON(t, deployment)}, "", "  ")
	require.NoError(t, err)
	require.NotContains(t, string(data), sig.Secret, "a recorded state holds no secret")
	return append(data, '\n')
}

// inDependencyOrder is the resources of a state in the one order a state needs (each after
// what it names: its parent, provider and dependencies), ties in the order of their URNs, for
// the order the engine finished them in, which changes from run to run.
func inDependencyOrder(t *testing.T, resources []apitype.ResourceV3) []apitype.ResourceV3 {
	t.Helper()
	slices.SortFunc(resources, func(a, b apitype.ResourceV3) int { return strings.Compare(string(a.URN), string(b.URN)) })
	placed := map[resource.URN]bool{}
	ready := func(r apitype.ResourceV3) bool {
		needs := append([]resource.URN{r.Parent, r.DeletedWith}, r.Dependencies...)
		needs = append(needs, r.ReplaceWith...)
		for _, urns := range r.PropertyDependencies {
			needs = append(needs, urns...)
		}
		if r.Provider != "" {
			ref, err := providers.ParseReference(r.Provider)
			require.NoError(t, err)
			needs = append(needs, ref.URN())
		}
		for _, urn := range needs {
			if urn != "" && !placed[urn] && slices.ContainsFunc(resources, func(o apitype.ResourceV3) bool { return o.URN == urn }) {
				return false
			}
		}
		return true
	}
	var ordered []apitype.ResourceV3
	for len(ordered) < len(resources) {
		next := slices.IndexFunc(resources, func(r apitype.ResourceV3) bool { return !placed[r.URN] && ready(r) })
		require.GreaterOrEqual(t, next, 0, "the state's dependencies form a cycle")
		placed[resources[next].URN] = true
		ordered = append(ordered, resources[next])
	}
	return ordered
}

// TestUpgradeKeepsState previews, with the code of today, every stack recorded at a release.
// None may create, delete or replace a resource (a renamed child, a new type token, a new object
// name: the contract is broken, and the fix for the first two is an alias, design 0025). Against
// the newest recorded release none may update one either: an LWS updated in place rolls its
// replicas, and today's code renders what that release rendered; an older release's stacks may
// see the updates of releases since. A failure lists, per example, each resource the upgrade would
// touch and how.
func TestUpgradeKeepsState(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "state", "v*", "*.json"))
	require.NoError(t, err)
	require.NotEmpty(t, files, "no recorded state: record one with make record-state")
	newest := ""
	for _, file := range files {
		if version := filepath.Base(filepath.Dir(file)); newest == "" || semver.Compare(version, newest) > 0 {
			newest = version
		}
	}
	for _, file := range files {
		version, example := filepath.Base(filepath.Dir(file)), strings.TrimSuffix(filepath.Base(file), ".json")
		t.Run(version+"/"+example, func(t *testing.T) {
			t.Parallel()
			changes := previewChanges(t, example, loadState(t, file))
			changes = slices.DeleteFunc(changes, dashboardOnly)
			changes = slices.DeleteFunc(changes, newBarrierOnly)
			changes = slices.DeleteFunc(changes, newPickerObjectOnly)
			changes = withoutMovesToTheWatchedGroup(changes)
			if version != newest {
				changes = slices.DeleteFunc(changes, func(c change) bool { return c.op == "update" || newDownloaderOnly(c) })
			}
			if len(changes) > 0 {
				t.Errorf("upgrading a stack recorded at %s (examples/manifests/%s.yaml) would change %d resource(s):\n%s\n"+
					"A create with a delete is a child whose URN changed (the component's name, the child's name, its type token), a "+
					"replace a change of a field the provider replaces on: both break the stack's state contract; keep them, or give "+
					"the child an alias (docs/design/0025-state-is-a-contract.md). An update rewrites a running object (an LWS's "+
					"template rolls its replicas): a change users would see on upgrade, which %s did not render.",
					version, example, len(changes), describe(changes), version)
			}
		})
	}
}

// routerObjectInGroup is the URN of a router's InferenceObjective or InferenceModelRewrite child:
// its API group, its kind and its name.
var routerObjectInGroup = regexp.MustCompile(`\$kubernetes:(inference\.networking\.x-k8s\.io|llm-d\.ai)/v1alpha2:(InferenceObjective|InferenceModelRewrite)::(.+)$`)

// withoutMovesToTheWatchedGroup leaves out each pair of a delete of a router's objective or
// rewrite in inference.networking.x-k8s.io and the create of the same child in llm-d.ai: the
// object moved to the group llm-d-router v0.10.0 watches once the Platform installs both (release
// 0.5.0, endpointPicker.crdGroups' default "both": docs/design/0046-release-0.5.0-the-rewrite-in-its-pickers-group.md).
// They are two Kubernetes objects, so the create and the delete are what the move is; the picker
// restarts with them (its watched-crd-group annotation). Anything else breaks the contract.
func withoutMovesToTheWatchedGroup(changes []change) []change {
	key := func(c change, group string) string {
		m := routerObjectInGroup.FindStringSubmatch(string(c.urn))
		if m == nil || m[1] != group {
			return ""
		}
		return m[2] + "/" + m[3]
	}
	created, deleted := map[string]bool{}, map[string]bool{}
	for _, c := range changes {
		if k := key(c, "llm-d.ai"); c.op == "create" && k != "" {
			created[k] = true
		}
		if k := key(c, "inference.networking.x-k8s.io"); c.op == "delete" && k != "" {
			deleted[k] = true
		}
	}
	return slices.DeleteFunc(changes, func(c change) bool {
		if k := key(c, "llm-d.ai"); c.op == "create" && k != "" {
			return deleted[k]
		}
		k := key(c, "inference.networking.x-k8s.io")
		return c.op == "delete" && k != "" && created[k]
	})
}

// downloaderImage is the one path of a model's download Job that a new release changes: its
// containers' image, the downloader of the release that renders it.
var downloaderImage = regexp.MustCompile(`^spec\.template\.spec\.containers\[\d+\]\.image$`)

// newDownloaderOnly: a download Job replaced because a later release runs its own downloader
// (render.DownloaderImage follows VERSION; a Job's template cannot change in place). The new Job
// finds the cache complete and ends (internal/download), so no model is fetched again
// (docs/design/0033-a-release-that-rolls-every-server.md). Any other replace breaks the contract.
func newDownloaderOnly(c change) bool {
	return c.op == "replace" && strings.Contains(string(c.urn), "$kubernetes:batch/v1:Job::") && len(c.paths) > 0 &&
		!slices.ContainsFunc(c.paths, func(p string) bool { return !downloaderImage.MatchString(p) })
}

// dashboardConfigMap is a service's Grafana dashboard (render's suffix "dashboard"), whose data
// is the one path of it a release may change.
var (
	dashboardConfigMap = regexp.MustCompile(`\$kubernetes:core/v1:ConfigMap::[a-z0-9-]+-dashboard$`)
	dashboardData      = regexp.MustCompile(`^data\["[^"]+\.json"\]$`)
)

// dashboardOnly: an update of a service's dashboard JSON alone (its ConfigMap's data), in any
// release: Grafana's sidecar reloads it and no pod rolls, so the contract's "an update rolls
// replicas" does not hold of it (docs/design/0037-dashboards-built-typed-and-status-from-metrics.md:
// the dashboard rebuilt with the Grafana Foundation SDK). Any other update of it breaks the contract.
func dashboardOnly(c change) bool {
	return c.op == "update" && dashboardConfigMap.MatchString(string(c.urn)) && len(c.paths) > 0 &&
		!slices.ContainsFunc(c.paths, func(p string) bool { return !dashboardData.MatchString(p) })
}

// rolloutBarrier is the URN of a rollout's barrier: a Pulumi Stash child of an InferenceService,
// named "{component}-batch-{n}-done" (render.RolloutBarrierSuffix).
var rolloutBarrier = regexp.MustCompile(`^urn:pulumi:dev::pulumi-fusioninfer::fusioninfer:index:InferenceService\$pulumi:index:Stash::.+-batch-[0-9]+-done$`)

// pulumiDefaultProvider is the engine's default provider of its built-in resources, the Stash
// among them, which a stack gets with its first Stash.
const pulumiDefaultProvider = "urn:pulumi:dev::pulumi-fusioninfer::pulumi:providers:pulumi::default"

// newBarrierOnly: what a stack of a release before the rollout barriers gets on upgrade, and
// nothing else: each batch's barrier, a Stash kept in the state only, created, and the
// engine's default provider of its built-in resources with the first one
// (docs/design/0038-state-linear-in-the-replicas.md). No Kubernetes object is created or
// touched; the rollouts' dependencies change, which no step shows.
func newBarrierOnly(c change) bool {
	return c.op == "create" && (rolloutBarrier.MatchString(string(c.urn)) || string(c.urn) == pulumiDefaultProvider)
}

// TestUpgradeTestSeesChanges holds TestUpgradeKeepsState to what it checks: a recorded stack
// whose rollout child had another name previews as a create and a delete, and one whose rolled
// LWS had another revision label as an update of that path.
func TestUpgradeTestSeesChanges(t *testing.T) {
	const example = "story1-monolithic"
	file := filepath.Join("testdata", "state", "v0.1.0", example+".json")
	rollout := "urn:pulumi:dev::pulumi-fusioninfer::fusioninfer:index:InferenceService$kubernetes:leaderworkerset.x-k8s.io/v1:LeaderWorkerSetPatch::qwen-inference-inference-0-rollout"

	renamed := loadState(t, file)
	i := slices.IndexFunc(renamed.Resources, func(r *resource.State) bool { return string(r.URN) == rollout })
	require.GreaterOrEqual(t, i, 0)
	renamed.Resources[i].URN = resource.URN(rollout + "-old")
	// what a release before barrier 0 gets anyway (newBarrierOnly) is not what this test looks for
	previewed := func(snap *deploy.Snapshot) []change {
		return slices.DeleteFunc(previewChanges(t, example, snap), newBarrierOnly)
	}
	assert.Equal(t, []change{{op: "create", urn: resource.URN(rollout)}, {op: "delete", urn: resource.URN(rollout + "-old")}},
		previewed(renamed))

	relabelled := loadState(t, file)
	i = slices.IndexFunc(relabelled.Resources, func(r *resource.State) bool { return string(r.URN) == rollout })
	require.GreaterOrEqual(t, i, 0)
	// the object as the cluster holds it, which the provider's Diff compares with the new inputs
	labels := relabelled.Resources[i].Outputs["metadata"].ObjectValue()["labels"].ObjectValue()
	labels["fusioninfer.io/revision"] = resource.NewProperty("0000000000")
	changes := previewed(relabelled)
	require.Len(t, changes, 1, describe(changes))
	assert.Equal(t, "update", changes[0].op)
	assert.Equal(t, resource.URN(rollout), changes[0].urn)
	assert.Contains(t, changes[0].paths, `metadata.labels["fusioninfer.io/revision"]`)
}

// previewChanges runs `pulumi preview` of the example with the code of today over the stack snap
// and returns each resource it would not leave as it is.
func previewChanges(t *testing.T, example string, snap *deploy.Snapshot) []change {
	t.Helper()
	require.NotEmpty(t, snap.Resources, "the recorded stack has resources")
	plan, log := statePlan(t, example)
	var changes []change
	_, err := lt.TestOp(engine.Update).RunStep(plan.GetProject(), plan.GetTarget(t, snap), plan.Options, true, nil,
		func(_ workspace.Project, _ deploy.Target, _ engine.JournalEntries, events []engine.Event, err error) error {
			changes = stepsThatChange(events)
			return err
		}, "preview")
	require.NoError(t, err, log.String())
	return changes
}

// change is what a preview would do to one resource: its operation (opWord), and the property
// paths that differ or that replace it.
type change struct {
	op    string
	urn   resource.URN
	paths []string
}

// stepsThatChange is each resource a step of the preview does not leave as it is, in the order of
// their URNs.
func stepsThatChange(events []engine.Event) []change {
	byURN := map[resource.URN]*change{}
	for _, event := range events {
		pre, ok := event.Payload().(engine.ResourcePreEventPayload)
		if !ok || pre.Metadata.Op == deploy.OpSame {
			continue
		}
		c := byURN[pre.Metadata.URN]
		if c == nil {
			c = &change{op: opWord(pre.Metadata.Op), urn: pre.Metadata.URN}
			byURN[pre.Metadata.URN] = c
		}
		for _, key := range slices.Concat(pre.Metadata.Keys, pre.Metadata.Diffs) {
			c.paths = append(c.paths, string(key))
		}
		for path := range pre.Metadata.DetailedDiff {
			c.paths = append(c.paths, path)
		}
	}
	var out []change
	for _, urn := range slices.Sorted(maps.Keys(byURN)) {
		c := byURN[urn]
		slices.Sort(c.paths)
		c.paths = slices.Compact(c.paths)
		out = append(out, *c)
	}
	return out
}

// describe is the changes one a line: what the preview does, the URN, the paths.
func describe(changes []change) string {
	var lines []string
	for _, c := range changes {
		line := fmt.Sprintf("  %s %s", c.op, c.urn)
		if len(c.paths) > 0 {
			line += " (" + strings.Join(c.paths, ", ") + ")"
		}
		lines = append(lines, line)
	}
	return strings.Join(lines, "\n")
}

// opWord says what a step does to the resource, as `pulumi preview` says it.
func opWord(op display.StepOp) string {
	switch op {
	case deploy.OpCreate:
		return "create"
	case deploy.OpDelete:
		return "delete"
	case deploy.OpUpdate:
		return "update"
	case deploy.OpReplace, deploy.OpCreateReplacement, deploy.OpDeleteReplaced:
		return "replace"
	}
	return string(op)
}

// loadState is the stack recorded in file, as `pulumi stack import` reads it; no secrets
// provider: a recorded state holds no secret.
func loadState(t *testing.T, file string) *deploy.Snapshot {
	t.Helper()
	data, err := os.ReadFile(file)
	require.NoError(t, err)
	var untyped apitype.UntypedDeployment
	require.NoError(t, json.Unmarshal(data, &untyped))
	var deployment apitype.DeploymentV3
	require.NoError(t, json.Unmarshal(untyped.Deployment, &deployment))
	snap, err := stack.DeserializeDeploymentV3(context.Background(), deployment, nil)
	require.NoError(t, err)
	return snap
}

// examples are the names of the example manifests (examples/manifests/{name}.yaml).
func examples(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("../examples/manifests/*.yaml")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	var names []string
	for _, file := range files {
		names = append(names, strings.TrimSuffix(filepath.Base(file), ".yaml"))
	}
	return names
}

func mustJSON(t *testing.T, v any) json.RawMessage {
	t.Helper()
	data, err := json.Marshal(v)
	require.NoError(t, err)
	return data
}

// TestOnlyANewDownloaderIsForgiven: of a release's replaces, only a download Job's new image is
// let through for an older release's stacks.
func TestOnlyANewDownloaderIsForgiven(t *testing.T) {
	job := resource.URN("urn:pulumi:dev::pulumi-fusioninfer::fusioninfer:index:InferenceService$kubernetes:batch/v1:Job::m-model-download")
	lws := resource.URN("urn:pulumi:dev::pulumi-fusioninfer::fusioninfer:index:InferenceService$kubernetes:leaderworkerset.x-k8s.io/v1:LeaderWorkerSet::m-inference-0")
	assert.True(t, newDownloaderOnly(change{op: "replace", urn: job, paths: []string{"spec.template.spec.containers[0].image", "spec.template.spec.containers[1].image"}}))
	assert.False(t, newDownloaderOnly(change{op: "replace", urn: job, paths: []string{"spec.template.spec.containers[0].image", "spec.template.spec.containers[0].args"}}))
	assert.False(t, newDownloaderOnly(change{op: "replace", urn: job}))
	assert.False(t, newDownloaderOnly(change{op: "replace", urn: lws, paths: []string{"spec.template.spec.containers[0].image"}}))
	assert.False(t, newDownloaderOnly(change{op: "delete", urn: job, paths: []string{"spec.template.spec.containers[0].image"}}))
}

// TestOnlyADashboardsDataIsForgiven: of a release's updates, only the dashboard ConfigMap's JSON is
// let through for every release's stacks.
func TestOnlyADashboardsDataIsForgiven(t *testing.T) {
	dashboard := resource.URN("urn:pulumi:dev::pulumi-fusioninfer::fusioninfer:index:InferenceService$kubernetes:core/v1:ConfigMap::llama-8b-dashboard")
	adapters := resource.URN("urn:pulumi:dev::pulumi-fusioninfer::fusioninfer:index:InferenceService$kubernetes:core/v1:ConfigMap::llama-8b-adapters")
	assert.True(t, dashboardOnly(change{op: "update", urn: dashboard, paths: []string{`data["llama-8b.json"]`}}))
	assert.False(t, dashboardOnly(change{op: "update", urn: dashboard, paths: []string{`data["llama-8b.json"]`, `metadata.labels["grafana_dashboard"]`}}))
	assert.False(t, dashboardOnly(change{op: "replace", urn: dashboard, paths: []string{`data["llama-8b.json"]`}}))
	assert.False(t, dashboardOnly(change{op: "update", urn: dashboard}))
	assert.False(t, dashboardOnly(change{op: "update", urn: adapters, paths: []string{`data["adapters.json"]`}}))
}

// newPickerObject is the URN of an object a release added beside the Endpoint Picker: its
// PodDisruptionBudget (several replicas), the ClusterRole and binding of its metrics' token review,
// and the token its PodMonitor scrapes with.
var newPickerObject = regexp.MustCompile(`\$kubernetes:(policy/v1:PodDisruptionBudget::[a-z0-9-]+-epp-pdb|` +
	`rbac\.authorization\.k8s\.io/v1:ClusterRole(Binding)?::[a-z0-9-]+-epp-auth-clusterrole(binding)?|` +
	`core/v1:Secret::[a-z0-9-]+-epp-metrics-token)$`)

// newPickerObjectOnly: an object beside the Endpoint Picker created on upgrade from a release that
// had none (docs/design/0035-an-endpoint-picker-that-survives-losing-a-replica.md,
// 0036-a-real-prometheus-scrapes-what-we-render.md): it touches no running object; the picker's
// Deployment, whose update rolls only the picker, is an update as any other.
func newPickerObjectOnly(c change) bool {
	return c.op == "create" && newPickerObject.MatchString(string(c.urn))
}

// TestOnlyNewPickerObjectsAreForgiven: of the creates, only the picker's new neighbours.
func TestOnlyNewPickerObjectsAreForgiven(t *testing.T) {
	prefix := "urn:pulumi:dev::pulumi-fusioninfer::fusioninfer:index:InferenceService$kubernetes:"
	for _, urn := range []string{"policy/v1:PodDisruptionBudget::llama-8b-epp-pdb",
		"rbac.authorization.k8s.io/v1:ClusterRole::llama-8b-epp-auth-clusterrole",
		"rbac.authorization.k8s.io/v1:ClusterRoleBinding::llama-8b-epp-auth-clusterrolebinding",
		"core/v1:Secret::llama-8b-epp-metrics-token"} {
		assert.True(t, newPickerObjectOnly(change{op: "create", urn: resource.URN(prefix + urn)}), urn)
		assert.False(t, newPickerObjectOnly(change{op: "update", urn: resource.URN(prefix + urn)}), urn)
	}
	for _, urn := range []string{"policy/v1:PodDisruptionBudget::llama-8b-decode-pdb",
		"apps/v1:Deployment::llama-8b-epp-pdb", "core/v1:Secret::llama-8b-hf-token",
		"rbac.authorization.k8s.io/v1:ClusterRole::llama-8b-epp-auth-clusterrole-extra"} {
		assert.False(t, newPickerObjectOnly(change{op: "create", urn: resource.URN(prefix + urn)}), urn)
	}
}

// TestUpgradeAddsTheRolloutBarriersOnly: upgrading a stack recorded before the rollout barriers
// creates exactly each batch's barrier, barrier 0 and the engine's default provider of its
// built-in resources, and one recorded after the batches' barriers barrier 0 alone;
// newBarrierOnly lets through those and nothing else.
func TestUpgradeAddsTheRolloutBarriersOnly(t *testing.T) {
	const example = "qwen-rollout" // three batches
	changes := previewChanges(t, example, loadState(t, filepath.Join("testdata", "state", "v0.2.0", example+".json")))
	barrier := "urn:pulumi:dev::pulumi-fusioninfer::fusioninfer:index:InferenceService$pulumi:index:Stash::qwen3-235b-batch-"
	assert.ElementsMatch(t, []change{
		{op: "create", urn: resource.URN(barrier + "0-done")},
		{op: "create", urn: resource.URN(barrier + "1-done")},
		{op: "create", urn: resource.URN(barrier + "2-done")},
		{op: "create", urn: pulumiDefaultProvider},
	}, changes)
	for _, c := range changes {
		assert.True(t, newBarrierOnly(c), "%s", c.urn)
	}
	// 0.3.0 has the batches' barriers; barrier 0 (every replica created) came after it (0040)
	assert.Equal(t, []change{{op: "create", urn: resource.URN(barrier + "0-done")}},
		previewChanges(t, example, loadState(t, filepath.Join("testdata", "state", "v0.3.0", example+".json"))))
	lws := resource.URN("urn:pulumi:dev::pulumi-fusioninfer::fusioninfer:index:InferenceService$kubernetes:leaderworkerset.x-k8s.io/v1:LeaderWorkerSet::qwen3-235b-decode-0")
	for _, c := range []change{
		{op: "create", urn: lws},
		{op: "update", urn: resource.URN(barrier + "1-done")},
		{op: "delete", urn: resource.URN(barrier + "1-done")},
		{op: "create", urn: "urn:pulumi:dev::pulumi-fusioninfer::fusioninfer:index:InferenceService$pulumi:index:Stash::qwen3-235b-other"},
	} {
		assert.False(t, newBarrierOnly(c), "%s %s", c.op, c.urn)
	}
}

// TestOnlyAMoveToTheWatchedGroupIsExcused: the pair a rewrite's move to llm-d.ai makes is left
// out, and nothing like it: a delete alone, a move the other way, or another child's create.
func TestOnlyAMoveToTheWatchedGroupIsExcused(t *testing.T) {
	const parent = "urn:pulumi:dev::pulumi-fusioninfer::fusioninfer:index:InferenceService$kubernetes:"
	rewrite := func(op, group, name string) change {
		return change{op: op, urn: resource.URN(parent + group + "/v1alpha2:InferenceModelRewrite::" + name)}
	}
	moved := []change{rewrite("create", "llm-d.ai", "a-rewrite-x"), rewrite("delete", "inference.networking.x-k8s.io", "a-rewrite-x")}
	assert.Empty(t, withoutMovesToTheWatchedGroup(moved))
	for name, changes := range map[string][]change{
		"a delete alone":       {rewrite("delete", "inference.networking.x-k8s.io", "a-rewrite-x")},
		"a move the other way": {rewrite("create", "inference.networking.x-k8s.io", "a-rewrite-x"), rewrite("delete", "llm-d.ai", "a-rewrite-x")},
		"another child":        {rewrite("create", "llm-d.ai", "a-rewrite-y"), rewrite("delete", "inference.networking.x-k8s.io", "a-rewrite-x")},
	} {
		assert.Equal(t, changes, withoutMovesToTheWatchedGroup(slices.Clone(changes)), name)
	}
}
