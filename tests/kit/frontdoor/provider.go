// SPDX-License-Identifier: Apache-2.0

package frontdoor

import (
	"context"
	"sync"
	"testing"

	"github.com/blang/semver"
	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi-go-provider/integration"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/property"
	"github.com/stretchr/testify/require"

	"github.com/fusioninfer/pulumi-fusioninfer/provider"
)

// Constructed are the objects the multi-language provider registers when the engine asks it to
// construct an InferenceService with these inputs (in-process, under mocks): what a TypeScript,
// Python or YAML program gets.
func Constructed(t *testing.T, name string, inputs property.Map) Objects {
	t.Helper()
	var custom []registration
	construct(t, name, inputs, false, func(args integration.MockResourceArgs) {
		if args.Custom {
			custom = append(custom, registration{string(args.TypeToken), resource.ToResourcePropertyValue(property.New(args.Inputs)).ObjectValue().Mappable()})
		}
	})
	return objectsOf(custom)
}

// ConstructedNames are the names of the resources the provider registers, at preview (dryRun)
// or not; at preview some inputs may be unknown.
func ConstructedNames(t *testing.T, name string, inputs property.Map, dryRun bool) []string {
	t.Helper()
	var names []string
	construct(t, name, inputs, dryRun, func(args integration.MockResourceArgs) { names = append(names, args.Name) })
	return names
}

// ConstructedInputs are the inputs of every resource the provider registers, by name, at preview
// (dryRun) or not.
func ConstructedInputs(t *testing.T, name string, inputs property.Map, dryRun bool) map[string]property.Map {
	t.Helper()
	out := map[string]property.Map{}
	construct(t, name, inputs, dryRun, func(args integration.MockResourceArgs) { out[args.Name] = args.Inputs })
	return out
}

// construct asks the provider, in-process under mocks, to construct an InferenceService; record
// sees every registration, one at a time.
func construct(t *testing.T, name string, inputs property.Map, dryRun bool, record func(integration.MockResourceArgs)) {
	t.Helper()
	require.NoError(t, tryConstruct(t, inferenceServiceType, name, inputs, dryRun, record))
}

// ConstructError is the provider's answer to inputs it refuses (nil if it constructs them).
func ConstructError(t *testing.T, name string, inputs property.Map) error {
	t.Helper()
	return tryConstruct(t, inferenceServiceType, name, inputs, false, func(integration.MockResourceArgs) {})
}

// The components' types.
const (
	inferenceServiceType = "fusioninfer:index:InferenceService"
	platformType         = "fusioninfer:index:Platform"
)

// ConstructedPlatform asks the provider to construct a Platform: the inputs of every resource it
// registers by name, or its error.
func ConstructedPlatform(t *testing.T, name string, inputs property.Map) (map[string]property.Map, error) {
	t.Helper()
	out := map[string]property.Map{}
	err := tryConstruct(t, platformType, name, inputs, false, func(args integration.MockResourceArgs) { out[args.Name] = args.Inputs })
	return out, err
}

func tryConstruct(t *testing.T, typ, name string, inputs property.Map, dryRun bool, record func(integration.MockResourceArgs)) error {
	t.Helper()
	var mu sync.Mutex
	prov, err := provider.New()
	require.NoError(t, err)
	server, err := integration.NewServer(context.Background(), provider.Name, semver.MustParse("0.1.0"),
		integration.WithProvider(prov),
		integration.WithMocks(&integration.MockResourceMonitor{
			NewResourceF: func(args integration.MockResourceArgs) (string, property.Map, error) {
				mu.Lock()
				record(args)
				mu.Unlock()
				return args.Name + "-id", args.Inputs, nil
			},
		}))
	require.NoError(t, err)
	_, err = server.Construct(p.ConstructRequest{
		Urn:    resource.CreateURN(name, typ, "", "project", "stack"),
		DryRun: dryRun,
		Inputs: inputs,
	})
	return err
}
