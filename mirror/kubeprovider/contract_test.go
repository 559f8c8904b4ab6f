// SPDX-License-Identifier: Apache-2.0

package kubeprovider

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/pulumi/pulumi/pkg/v3/resource/plugin"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// call is one recorded gRPC call to the real provider: its method, request and response (JSON).
type call struct {
	Method   string         `json:"method"`
	Request  map[string]any `json:"request"`
	Response map[string]any `json:"response"`
}

// traces are the recorded calls of each trace, those that returned.
func traces(t *testing.T) map[string][]call {
	t.Helper()
	files, err := filepath.Glob("testdata/traces/*.jsonl")
	require.NoError(t, err)
	require.Len(t, files, 2, "the clean and the spurious-diff runs")
	out := map[string][]call{}
	for _, file := range files {
		f, err := os.Open(file)
		require.NoError(t, err)
		scanner := bufio.NewScanner(f)
		scanner.Buffer(nil, 16<<20)
		for scanner.Scan() {
			var c call
			require.NoError(t, json.Unmarshal(scanner.Bytes(), &c))
			if c.Response != nil {
				out[filepath.Base(file)] = append(out[filepath.Base(file)], c)
			}
		}
		require.NoError(t, scanner.Err())
		require.NoError(t, f.Close())
	}
	return out
}

// method is the call's method name; the URN in a provider call's request is c.urn().
func method(c call) string { return c.Method[strings.LastIndex(c.Method, "/")+1:] }

func (c call) urn() resource.URN { u, _ := c.Request["urn"].(string); return resource.URN(u) }

func properties(v any) resource.PropertyMap {
	m, _ := v.(map[string]any)
	return resource.NewPropertyMapFromMap(m)
}

// The JSON of a gRPC DiffResponse: enums by name, defaults left out.
var diffKindNames = map[plugin.DiffKind]string{plugin.DiffAdd: "ADD", plugin.DiffAddReplace: "ADD_REPLACE",
	plugin.DiffDelete: "DELETE", plugin.DiffDeleteReplace: "DELETE_REPLACE", plugin.DiffUpdate: "UPDATE",
	plugin.DiffUpdateReplace: "UPDATE_REPLACE"}

// recordedDiff is a recorded DiffResponse as changes, "path: KIND" lines, replaces and
// deleteBeforeReplace.
func recordedDiff(response map[string]any) (string, []string, []string, bool) {
	var details, replaces []string
	detailed, _ := response["detailedDiff"].(map[string]any)
	for path, d := range detailed {
		kind, _ := d.(map[string]any)["kind"].(string)
		if kind == "" {
			kind = "ADD"
		}
		details = append(details, path+": "+kind)
	}
	for _, r := range asSlice(response["replaces"]) {
		replaces = append(replaces, r.(string))
	}
	dbr, _ := response["deleteBeforeReplace"].(bool)
	sort.Strings(details)
	sort.Strings(replaces)
	return response["changes"].(string), details, replaces, dbr
}

func asSlice(v any) []any { s, _ := v.([]any); return s }

// ourDiff is Diff's answer in the same form.
func ourDiff(d plugin.DiffResponse) (string, []string, []string, bool) {
	changes := map[plugin.DiffChanges]string{plugin.DiffNone: "DIFF_NONE", plugin.DiffSome: "DIFF_SOME"}[d.Changes]
	var details, replaces []string
	for path, pd := range d.DetailedDiff {
		details = append(details, path+": "+diffKindNames[pd.Kind])
	}
	for _, k := range d.ReplaceKeys {
		replaces = append(replaces, string(k))
	}
	sort.Strings(details)
	sort.Strings(replaces)
	return changes, details, replaces, d.DeleteBeforeReplace
}

var generatedFieldManager = regexp.MustCompile(`^pulumi-kubernetes-[0-9a-z]{8}$`)

// TestContractWithTheRealProvider replays every recorded Check, Diff, Create and Update of both
// runs through the mirrored rules and requires the real provider's answers: Check's inputs, Diff's
// verdict (changes, detailed diff with kinds, replacements, delete-before-replace), and the state
// Create and Update return built from the live object they saw (the inputs under "__inputs", the
// first apiVersion, the field manager, kept from the state on update).
func TestContractWithTheRealProvider(t *testing.T) {
	counts := map[string]int{}
	for file, calls := range traces(t) {
		for _, c := range calls {
			urn := c.urn()
			if urn == "" {
				continue // the engine's calls: Run, RegisterResource
			}
			where := file + " " + method(c) + " " + urn.Name()
			switch method(c) {
			case "Check":
				got, err := Check(urn, properties(c.Request["news"]))
				require.NoError(t, err, where)
				assert.Equal(t, c.Response["inputs"], got.Mappable(), where)
			case "Diff":
				got, err := Diff(urn, properties(c.Request["olds"]), properties(c.Request["news"]), nil, true)
				require.NoError(t, err, where)
				wantChanges, wantDetails, wantReplaces, wantDBR := recordedDiff(c.Response)
				changes, details, replaces, dbr := ourDiff(got)
				assert.Equal(t, wantChanges, changes, where)
				assert.Equal(t, wantDetails, details, where)
				assert.Equal(t, wantReplaces, replaces, where)
				assert.Equal(t, wantDBR, dbr, where)
			case "Create", "Update":
				inputsKeyOf := map[string]string{"Create": "properties", "Update": "news"}[method(c)]
				inputs := normalizeInputs(Unstructured(properties(c.Request[inputsKeyOf])))
				state := properties(c.Response["properties"])
				_, live := ParseCheckpoint(state)
				for _, k := range []string{initialAPIVersionKey, fieldManagerKey} {
					delete(live.Object, k)
				}
				manager := state[fieldManagerKey].StringValue()
				if method(c) == "Update" {
					assert.Equal(t, properties(c.Request["olds"])[fieldManagerKey].StringValue(), manager, "%s keeps its field manager", where)
				} else {
					assert.Regexp(t, generatedFieldManager, manager, where)
				}
				got := Checkpoint(inputs, live, inputs.GetAPIVersion(), manager)
				assert.Equal(t, state.Mappable(), got.Mappable(), where)
			default:
				continue
			}
			counts[file+" "+method(c)]++
		}
	}
	assert.Equal(t, map[string]int{
		"story4-up-preview-clean.jsonl Check": 14, "story4-up-preview-clean.jsonl Diff": 7, "story4-up-preview-clean.jsonl Create": 7,
		"story4-up-preview-spurious-diff.jsonl Check": 14, "story4-up-preview-spurious-diff.jsonl Diff": 7,
		"story4-up-preview-spurious-diff.jsonl Create": 7, "story4-up-preview-spurious-diff.jsonl Update": 3,
	}, counts, "every recorded call that returned is replayed")
}

// TestARolloutWhoseFirstApplyChangesNothingDiffsToNothing: the spurious diff came from a rollout
// whose Create returned the object as it was before its own apply (design 0018). Such a stale state
// diffs to nothing when the LWS resource created the object with the rollout's own inputs, and to
// the recorded spurious diff when it did not (the annotation the rollout added is missing).
func TestARolloutWhoseFirstApplyChangesNothingDiffsToNothing(t *testing.T) {
	rollouts := 0
	for file, calls := range traces(t) {
		created := map[string]*unstructured.Unstructured{} // the LWSs as their own resource created them
		for _, c := range calls {
			urn := c.urn()
			if method(c) != "Create" || IsPatchResource(urn, "LeaderWorkerSet") {
				continue
			}
			_, live := ParseCheckpoint(properties(c.Response["properties"]))
			created[live.GetName()] = live
		}
		for _, c := range calls {
			urn := c.urn()
			if method(c) != "Create" || !IsPatchResource(urn, "LeaderWorkerSet") {
				continue
			}
			rollouts++
			inputs := Unstructured(properties(c.Request["properties"]))
			stale := created[inputs.GetName()].DeepCopy()
			for _, k := range []string{initialAPIVersionKey, fieldManagerKey} {
				delete(stale.Object, k)
			}
			require.NotNil(t, stale, "%s: the LWS of %s", file, inputs.GetName())

			// As the component registered it before: the LWS without patchForce.
			got, err := Diff(urn, Checkpoint(inputs, stale, "leaderworkerset.x-k8s.io/v1", "m"), properties(c.Request["properties"]), nil, true)
			require.NoError(t, err)
			changes, details, _, _ := ourDiff(got)
			assert.Equal(t, "DIFF_SOME", changes, file)
			assert.Equal(t, []string{`metadata.annotations["pulumi.com/patchForce"]: ADD`}, details, file)

			// As it registers it now: the LWS created with the rollout's own inputs.
			annotations := stale.GetAnnotations()
			annotations["pulumi.com/patchForce"] = "true"
			stale.SetAnnotations(annotations)
			got, err = Diff(urn, Checkpoint(inputs, stale, "leaderworkerset.x-k8s.io/v1", "m"), properties(c.Request["properties"]), nil, true)
			require.NoError(t, err)
			assert.Equal(t, plugin.DiffNone, got.Changes, "%s %s: %v", file, inputs.GetName(), got.DetailedDiff)
		}
	}
	assert.Equal(t, 6, rollouts, "three rollouts in each run")
}
