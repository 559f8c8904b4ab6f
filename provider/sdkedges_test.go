// SPDX-License-Identifier: Apache-2.0

package provider

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/blang/semver"
	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi-go-provider/integration"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/property"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi/internals"
	comProvider "github.com/pulumi/pulumi/sdk/v3/go/pulumi/provider"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The provider works around three behaviours of pulumi-go-provider and the Go SDK (design 0011,
// 0012). Each test below pins one: it fails when an upgrade changes the behaviour, and says which
// part of the provider may then go.

// TestInferStillInlinesKubernetesTypes pins why rewriteSchema exists: infer inlines the
// pulumi-kubernetes structs of the input model as fusioninfer:v1:* types (with their own required
// lists), names IntOrString fusioninfer:intstr:IntOrString and types an enumeration of the input
// model as a plain string (api may not import infer to declare its enums, nor its Annotate for
// descriptions: design 0012). When this fails, drop the parts of rewriteSchema it no longer needs.
func TestInferStillInlinesKubernetesTypes(t *testing.T) {
	prov, err := inferred()
	require.NoError(t, err)
	server, err := integration.NewServer(context.Background(), Name, semver.MustParse("0.0.0"), integration.WithProvider(prov))
	require.NoError(t, err)
	resp, err := server.GetSchema(p.GetSchemaRequest{})
	require.NoError(t, err)
	var spec struct {
		Types map[string]struct {
			Properties map[string]struct {
				Type        string `json:"type"`
				Ref         string `json:"$ref"`
				Description string `json:"description"`
			} `json:"properties"`
		} `json:"types"`
	}
	require.NoError(t, json.Unmarshal([]byte(resp.Schema), &spec))
	assert.Contains(t, spec.Types, inlinedKubernetesTypes+"PodTemplateSpec", "infer no longer inlines the pod template: point the templates at the kubernetes package some other way")
	assert.Contains(t, spec.Types, intOrStringToken, "infer no longer names IntOrString so: upstreamType's case for it is stale")
	role := spec.Types["fusioninfer:index:Role"].Properties
	assert.Equal(t, "#/types/"+inlinedKubernetesTypes+"PodTemplateSpec", role["template"].Ref)
	assert.Equal(t, "string", role["componentType"].Type, "infer now gives an enumeration a type of its own: withEnums may be stale")
	assert.Empty(t, role["componentType"].Description, "infer now describes properties: describe may be stale")
}

// TestSDKCopyLosesAnUnknownInsideATemplate pins why constructFromRawInputs reads the raw inputs
// for the templates' unknowns (decodeInputs): at preview the Go SDK's ConstructInputs.CopyTo turns
// a template with one unknown value inside into a known template with that value null. When this
// fails (the copy keeps the template unknown, or the value unknown in it), decodeInputs can take
// the copied template as it is.
func TestSDKCopyLosesAnUnknownInsideATemplate(t *testing.T) {
	template := property.NewMap(map[string]property.Value{"spec": property.New(property.NewMap(map[string]property.Value{
		"containers": property.New(property.NewArray([]property.Value{property.New(property.NewMap(map[string]property.Value{
			"name": property.New("vllm"),
			"env": property.New(property.NewArray([]property.Value{property.New(property.NewMap(map[string]property.Value{
				"name": property.New("MODEL"), "value": property.New(property.Computed)}))})),
		}))})),
	}))})
	inputs := property.NewMap(map[string]property.Value{"roles": property.New(property.NewArray([]property.Value{
		property.New(property.NewMap(map[string]property.Value{"template": property.New(template)})),
	}))})

	var copied internals.UnsafeAwaitOutputResult
	prov := p.Provider{Construct: func(ctx context.Context, req p.ConstructRequest) (p.ConstructResponse, error) {
		return p.ProgramConstruct(ctx, req, func(pctx *pulumi.Context, typ, name string, in comProvider.ConstructInputs, opts pulumi.ResourceOption) (*comProvider.ConstructResult, error) {
			var args templateInputs
			if err := in.CopyTo(&args); err != nil {
				return nil, err
			}
			var err error
			if copied, err = internals.UnsafeAwaitOutput(pctx.Context(), args.Roles[0].Template); err != nil {
				return nil, err
			}
			component := &struct{ pulumi.ResourceState }{}
			if err := pctx.RegisterComponentResource(typ, name, component, opts); err != nil {
				return nil, err
			}
			return comProvider.NewConstructResult(component)
		})
	}}
	server, err := integration.NewServer(context.Background(), Name, semver.MustParse("0.1.0"), integration.WithProvider(prov),
		integration.WithMocks(&integration.MockResourceMonitor{}))
	require.NoError(t, err)
	_, err = server.Construct(p.ConstructRequest{Urn: resource.CreateURN("svc", "fusioninfer:index:Probe", "", "project", "stack"),
		DryRun: true, Inputs: inputs})
	require.NoError(t, err)

	require.True(t, copied.Known, "the SDK's copy now keeps a template with an unknown inside unknown: decodeInputs' own unknown is no longer needed")
	data, err := json.Marshal(copied.Value)
	require.NoError(t, err)
	assert.Contains(t, string(data), `{"name":"MODEL","value":null}`, "the SDK's copy no longer makes the unknown value inside the template a null: decodeInputs' own unknown may no longer be needed")
}

// TestABadDescriptionsTableIsAnError: the schema is served with an error, not a panic, when the
// embedded descriptions table cannot be read.
func TestABadDescriptionsTableIsAnError(t *testing.T) {
	saved := descriptionsJSON
	t.Cleanup(func() { descriptionsJSON = saved })
	descriptionsJSON = []byte(`{"Role": `)
	_, err := rewriteSchema(`{"name": "fusioninfer"}`)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "descriptions.json")
}
