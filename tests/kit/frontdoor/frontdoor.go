// SPDX-License-Identifier: Apache-2.0

// Package frontdoor compares the project's two front doors in tests: the objects the CLI
// renders and the children a Pulumi program registers under mocks, both keyed "Kind/name".
package frontdoor

import (
	"bytes"
	"os/exec"
	"reflect"
	"strings"
	"testing"

	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v2"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/fusioninfer/pulumi-fusioninfer/tests/kit/pulumimock"
	"github.com/fusioninfer/pulumi-fusioninfer/tests/kit/testcli"
)

// Objects are Kubernetes objects as plain JSON-typed maps, by "Kind/name".
type Objects map[string]map[string]any

// Rendered runs `fusioninfer render -f FILE` with the real CLI.
func Rendered(t *testing.T, file string) Objects {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(testcli.Binary(t), "render", "-f", file)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), stderr.String())
	objects := Objects{}
	decoder := yaml.NewDecoder(&stdout)
	for {
		var raw any
		if err := decoder.Decode(&raw); err != nil {
			break
		}
		data, err := yaml.Marshal(raw)
		require.NoError(t, err)
		var obj map[string]any
		require.NoError(t, sigsyaml.Unmarshal(data, &obj)) // JSON-typed values, as Pulumi's
		objects.Add(obj)
	}
	require.NotEmpty(t, objects, "the CLI rendered nothing")
	return objects
}

// Registered are the inputs of the custom resources a program registered.
func Registered(monitor *pulumimock.Monitor) Objects {
	var custom []registration
	for _, r := range monitor.Resources() {
		if r.Custom {
			custom = append(custom, registration{r.Type, r.Inputs.Mappable()})
		}
	}
	return objectsOf(custom)
}

// registration is a custom resource's type and inputs.
type registration struct {
	typeToken string
	inputs    map[string]any
}

// objectsOf are the objects of the registrations. A replica rolled in batches registers its LWS
// twice, as the LWS and as its rollout (a Patch resource), both with pulumi.com/patchForce, and
// the LWS with pulumi.com/skipAwait and pulumi.com/deletionPropagationPolicy besides (its
// rollout waits: design 0040; it is deleted in the background: 0041), directives to the
// provider that the CLI does not render: the rollout must carry the same object, or it is kept
// as "Kind/name rollout", so that a comparison shows the difference.
func objectsOf(registrations []registration) Objects {
	objects := Objects{}
	var rollouts []map[string]any
	for _, r := range registrations {
		if !strings.HasPrefix(r.typeToken, "kubernetes:") {
			// A rollout's barrier: Pulumi's own Stash, in the state only, no object of the CLI's
			// (docs/design/0038-state-linear-in-the-replicas.md).
			continue
		}
		meta := r.inputs["metadata"].(map[string]any)
		if annotations, _ := meta["annotations"].(map[string]any); annotations["pulumi.com/patchForce"] == "true" {
			delete(annotations, "pulumi.com/patchForce")
			if !strings.HasSuffix(r.typeToken, "Patch") && annotations["pulumi.com/skipAwait"] == "true" {
				delete(annotations, "pulumi.com/skipAwait")
				delete(annotations, "pulumi.com/deletionPropagationPolicy")
			}
			if len(annotations) == 0 {
				delete(meta, "annotations")
			}
		}
		if strings.HasSuffix(r.typeToken, "Patch") {
			rollouts = append(rollouts, r.inputs)
		} else {
			objects.Add(r.inputs)
		}
	}
	for _, rollout := range rollouts {
		key := rollout["kind"].(string) + "/" + rollout["metadata"].(map[string]any)["name"].(string)
		if !reflect.DeepEqual(objects[key], rollout) {
			objects[key+" rollout"] = rollout
		}
	}
	return objects
}

// Add keys an object by "Kind/name".
func (o Objects) Add(obj map[string]any) {
	meta := obj["metadata"].(map[string]any)
	o[obj["kind"].(string)+"/"+meta["name"].(string)] = obj
}

// AssertProgramDeploysManifest runs a Pulumi program under mocks and requires that it registers
// exactly the objects the CLI renders from the manifest file.
func AssertProgramDeploysManifest(t *testing.T, program pulumi.RunFunc, manifest string, opts ...pulumi.RunOption) {
	t.Helper()
	monitor := &pulumimock.Monitor{}
	require.NoError(t, monitor.Run(program, opts...))
	assert.Equal(t, Rendered(t, manifest), Registered(monitor))
}
