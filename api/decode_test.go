// SPDX-License-Identifier: Apache-2.0

package api

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const twoServices = `# a comment before the first document
apiVersion: fusioninfer.io/v1alpha1
kind: InferenceService
metadata:
  name: first
spec:
  roles:
    - name: a
      componentType: worker
---
---   # an empty document is skipped
apiVersion: fusioninfer.io/v1alpha1
kind: InferenceService
metadata:
  name: second
spec:
  roles:
    - name: b
      componentType: worker
`

func TestDecodeSeveralDocuments(t *testing.T) {
	docs, errs := Decode([]byte(twoServices))
	require.Empty(t, errs)
	require.Len(t, docs, 2)
	assert.Equal(t, "first", docs[0].Service.Name)
	assert.Equal(t, 1, docs[0].Line)
	assert.Equal(t, "second", docs[1].Service.Name)
	assert.Equal(t, 12, docs[1].Line)
}

// TestNullDocumentsHoldNoService: a document that is null (found by FuzzBuild: "&0", an anchored
// null) is skipped like an empty one, never returned as a service that is not there.
func TestNullDocumentsHoldNoService(t *testing.T) {
	for _, doc := range []string{"&0", "~", "null", "# only a comment"} {
		docs, errs := Decode([]byte(doc + "\n---\n" + twoServices))
		require.Empty(t, errs, doc)
		require.Len(t, docs, 2, doc)
		for _, d := range docs {
			require.NotNil(t, d.Service, doc)
		}
	}
}

func TestDecodeIsStrict(t *testing.T) {
	cases := map[string]struct {
		yaml string
		want []string
	}{
		"unknown field names its path": {
			yaml: "apiVersion: fusioninfer.io/v1alpha1\nkind: InferenceService\nmetadata: {name: x}\nspec:\n  roles:\n  - name: a\n    componentType: worker\n    replica: 2\n",
			want: []string{`line 8: unknown field "spec.roles[0].replica" (did you mean "replicas"?)`},
		},
		"unknown field inside the pod template": {
			yaml: "apiVersion: fusioninfer.io/v1alpha1\nkind: InferenceService\nmetadata: {name: x}\nspec:\n  roles:\n  - name: a\n    componentType: worker\n    template: {spec: {contianers: []}}\n",
			want: []string{`line 8: unknown field "spec.roles[0].template.spec.contianers" (did you mean "containers"?)`},
		},
		"duplicate field": {
			yaml: "apiVersion: fusioninfer.io/v1alpha1\nkind: InferenceService\nmetadata: {name: x}\nspec: {roles: []}\nspec: {roles: []}\n",
			want: []string{`line 5: spec: given 2 times in one mapping (lines 4, 5): give it once`},
		},
		// issue 55: the key's field path, and its lines in the whole stream
		"duplicate field deep in a later document": {
			yaml: twoServices + "---\napiVersion: fusioninfer.io/v1alpha1\nkind: InferenceService\nmetadata: {name: z}\nspec:\n  roles:\n  - name: a\n    replicas: 1\n    replicas: 2\n",
			want: []string{`line 28: spec.roles[0].replicas: given 2 times in one mapping (lines 27, 28): give it once`},
		},
		"a merged key given again": {
			yaml: "apiVersion: fusioninfer.io/v1alpha1\nkind: InferenceService\nmetadata: {name: x}\nspec:\n  roles:\n  - &w {name: a, componentType: worker}\n  - <<: *w\n    name: b\n",
			want: []string{`line 8: spec.roles[1].name: given again after the merge key (<<) gave it`},
		},
		"syntax error names its line in the whole stream": {
			yaml: twoServices + "---\napiVersion: fusioninfer.io/v1alpha1\nkind: InferenceService\nmetadata:\n  name: [unclosed\n",
			want: []string{"line 24: yaml: line 24: did not find expected"},
		},
		"wrong kind": {
			yaml: "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x}\nspec: {roles: []}\n",
			want: []string{`apiVersion/kind "apps/v1"/"Deployment": must be "fusioninfer.io/v1alpha1"/"InferenceService"`},
		},
		"rendered output": {
			yaml: "apiVersion: leaderworkerset.x-k8s.io/v1\nkind: LeaderWorkerSet\nmetadata:\n  name: q-inference-0\n  labels: {fusioninfer.io/service: q}\nspec: {replicas: 1, leaderWorkerTemplate: {size: 1}}\n",
			want: []string{`line 1: this is rendered output, a LeaderWorkerSet of InferenceService "q": give the InferenceService manifest it was rendered from`},
		},
		"wrong type": {
			yaml: "apiVersion: fusioninfer.io/v1alpha1\nkind: InferenceService\nmetadata: {name: x}\nspec: {roles: [{name: a, componentType: worker, replicas: two}]}\n",
			want: []string{"line 4: spec.roles[0].replicas: must be an integer, not string"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, errs := Decode([]byte(tc.yaml))
			require.Len(t, errs, 1)
			require.Len(t, errs[0].(*DecodeError).Problems, len(tc.want), "%v", errs[0])
			for _, w := range tc.want {
				assert.Contains(t, errs[0].Error(), w)
			}
		})
	}
}

func TestDecodeReportsEveryBadDocument(t *testing.T) {
	bad := "apiVersion: fusioninfer.io/v1alpha1\nkind: InferenceService\nmetadata: {name: x}\nspec: {rolez: []}\n"
	docs, errs := Decode([]byte(bad + "---\n" + bad))
	assert.Empty(t, docs)
	require.Len(t, errs, 2)
	assert.Contains(t, errs[1].Error(), `line 9: unknown field "spec.rolez" (did you mean "roles"?)`)
}

// TestWrongTypesNameTheFieldAndWhatItMustBe: a value of the wrong type (a Python program can send
// one) is refused with the field's path and the type it must have, as every other problem is.
func TestWrongTypesNameTheFieldAndWhatItMustBe(t *testing.T) {
	for doc, want := range map[string]string{
		"spec: {roles: [{name: b, componentType: worker, replicas: two}]}":                                   "spec.roles[0].replicas: must be an integer, not string",
		"spec: {roles: [{name: a, componentType: worker}, {name: b, componentType: worker, replicas: two}]}": "spec.roles[1].replicas: must be an integer, not string",
		"spec: {roles: [{name: b, componentType: worker, multinode: {nodeCount: 2.5}}]}":                     "spec.roles[0].multinode.nodeCount: must be an integer, not number 2.5",
		"spec: {roles: {a: 1}}": "spec.roles: must be a list, not object",
		"spec: {roles: [{name: b, componentType: worker, shadowService: yes-please}]}":                              "spec.roles[0].shadowService: must be true or false, not string",
		"metadata: {name: a, labels: {team: 3}}\nspec: {roles: []}":                                                 "metadata.labels[team]: must be a string, not number",
		"spec: {roles: [{name: b, componentType: worker, template: {spec: {containers: [{name: c, args: [1]}]}}}]}": "spec.roles[0].template.spec.containers[0].args[0]: must be a string, not number",
		// A quantity's own parser refuses it with its regular expression: in words, at its field.
		"spec: {roles: [{name: b, componentType: worker, template: {spec: {containers: [{name: c, resources: {limits: {memory: lots}}}]}}}]}": `line 4: spec.roles[0].template.spec.containers[0].resources.limits[memory]: must be a quantity such as 16Gi, 500m or 2, not "lots"`,
		"spec: {roles: [{name: b, componentType: worker, autoscaling: {target: many}}]}":                                                      "spec.roles[0].autoscaling.target: must be a number, not string",
	} {
		header := "apiVersion: fusioninfer.io/v1alpha1\nkind: InferenceService\n"
		if !strings.HasPrefix(doc, "metadata") {
			header += "metadata: {name: a}\n"
		}
		_, errs := Decode([]byte(header + doc + "\n"))
		require.Len(t, errs, 1, doc)
		assert.Contains(t, errs[0].Error(), want, doc)
	}
}

// TestProblemsNameTheirFieldsLine: a problem found after decoding (a rule of validation) is put
// at the line of the field it names, or of the deepest parent there is when the field is missing.
func TestProblemsNameTheirFieldsLine(t *testing.T) {
	manifest := twoServices + `---
apiVersion: fusioninfer.io/v1alpha1
kind: InferenceService
metadata:
  name: third
spec:
  roles:
    - name: a
      componentType: worker
      template:
        spec:
          containers:
            - name: vllm
              image: vllm/vllm-openai:v0.33.0
              resources:
                limits: {nvidia.com/gpu: "-2"}
`
	docs, errs := Decode([]byte(manifest))
	require.Empty(t, errs)
	require.Len(t, docs, 3)
	third := docs[2]
	assert.Equal(t, 21, third.Line)
	for path, line := range map[string]int{
		"metadata.name":                                   24,
		"spec.roles[0].componentType":                     28,
		"spec.roles[0].template.spec.containers[0].image": 33,
		"spec.roles[0].template.spec.containers[0].resources.limits[nvidia.com/gpu]": 35,
		"spec.roles[0].replicas": 27, // missing: the role's line
		"spec.gangPolicy.mode":   25, // missing: spec's line
		"spec.roles[3].name":     26, // no such role: the list's line
	} {
		assert.Equal(t, line, third.LineOf(path), path)
	}
	assert.Equal(t, 5, docs[0].LineOf("metadata.name"))
}

// TestDidYouMean: an unknown field's hint is the nearest known field of the same object, and none
// when no field is near.
func TestDidYouMean(t *testing.T) {
	for path, want := range map[string]string{
		"spec.roles[0].replica":       "replicas",
		"spec.roles[0].componenttype": "componentType",
		"spec.rolez":                  "roles",
		"metadata.nmae":               "name",
		"spec.roles[0].template.spec.containers[0].imag": "image",
		"spec.roles[0].zzzzzzzz":                         "",
		"metadata.labels[x].y":                           "",
	} {
		assert.Equal(t, want, didYouMean(serviceType, path), path)
	}
}

// TestWrongTypesInEmbeddedStructsAreAtTheirField: a value of the wrong type under a field Go
// embeds (a probe's handler, a volume's source) is named by its JSON path, with list indexes and
// no Go struct names, at its own line.
func TestWrongTypesInEmbeddedStructsAreAtTheirField(t *testing.T) {
	const service = `apiVersion: fusioninfer.io/v1alpha1
kind: InferenceService
metadata: {name: a}
spec:
  roles:
    - name: b
      componentType: worker
      template:
        spec:
          containers:
            - name: vllm
              readinessProbe:
                exec:
                  command: "cat /tmp/ready"
          volumes:
            - name: shm
              emptyDir: "yes"
`
	_, errs := Decode([]byte(service))
	require.Len(t, errs, 1)
	assert.Contains(t, errs[0].Error(), `line 14: spec.roles[0].template.spec.containers[0].readinessProbe.exec.command: must be a list, not string`)
	assert.Contains(t, errs[0].Error(), `line 17: spec.roles[0].template.spec.volumes[0].emptyDir: must be an object, not string`)
	assert.NotContains(t, errs[0].Error(), "ProbeHandler")
}

// TestDocumentEndStartsTheNext: a document ended by "..." is followed by the next one, which is
// read, not dropped.
func TestDocumentEndStartsTheNext(t *testing.T) {
	docs, errs := Decode([]byte(strings.Replace(twoServices, "---\n---   # an empty document is skipped\n", "...\n\n", 1)))
	require.Empty(t, errs)
	require.Len(t, docs, 2)
	assert.Equal(t, "second", docs[1].Service.Name)
	assert.Equal(t, 11, docs[1].Line)
	assert.Equal(t, 15, docs[1].LineOf("metadata.name"))
}

// TestDecodingProblemsLeaveTheRest: a document with decoding problems (unknown fields, values of
// the wrong type) keeps the service the rest of it says, for validation to report its own
// problems with them; what was left out is not validated.
func TestDecodingProblemsLeaveTheRest(t *testing.T) {
	const service = `apiVersion: fusioninfer.io/v1alpha1
kind: InferenceService
metadata: {name: a}
spec:
  roles:
    - name: b
      componentType: worker
      replica: 2
      multinode: {nodeCount: many}
    - name: c
      componentType: worker
      replicas: "3"
`
	docs := DecodeEach([]byte(service))
	require.Len(t, docs, 1)
	doc := docs[0]
	require.NotNil(t, doc.Problems)
	require.NotNil(t, doc.Service, "the rest of the document")
	assert.Len(t, doc.Problems.Problems, 3)
	assert.Equal(t, "c", doc.Service.Spec.Roles[1].Name)
	assert.Zero(t, doc.Service.Spec.Roles[0].Multinode.NodeCount, "left out")
	assert.True(t, doc.LeftOut("spec.roles[0].multinode.nodeCount"))
	assert.True(t, doc.LeftOut("spec.roles[1].replicas"))
	assert.False(t, doc.LeftOut("spec.roles[1].name"))
	assert.False(t, doc.LeftOut("spec.roles[0].replica"), "an unknown field is ignored, not left out")
	assert.True(t, doc.LeftOut("spec.roles[0].replicas"), "what the misspelt field was meant to be")
	_, errs := Decode([]byte(service))
	require.Len(t, errs, 1, "Decode returns only services without problems")
}

// TestAManifestHoldsAtMostMaxServices: a stream of more services than a render can hold at once
// is refused at the first one too many, which is not decoded (nor any after it).
func TestAManifestHoldsAtMostMaxServices(t *testing.T) {
	one := "apiVersion: fusioninfer.io/v1alpha1\nkind: InferenceService\nmetadata: {name: a}\nspec: {roles: [{name: b, componentType: worker}]}\n---\n"
	docs, errs := Decode([]byte(strings.Repeat(one, MaxServices)))
	assert.Empty(t, errs)
	assert.Equal(t, MaxServices, len(docs))
	docs, errs = Decode([]byte(strings.Repeat(one, MaxServices+5)))
	assert.Equal(t, MaxServices, len(docs))
	require.Len(t, errs, 1)
	assert.Equal(t, fmt.Sprintf("line %d: a manifest holds at most %d services: split it into files of fewer, and render or deploy each",
		MaxServices*5+1, MaxServices), errs[0].Error())
}
