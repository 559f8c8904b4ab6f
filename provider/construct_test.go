package provider

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/blang/semver"
	p "github.com/pulumi/pulumi-go-provider"
	"github.com/pulumi/pulumi-go-provider/integration"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/property"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/fusioninfer/pulumi-fusioninfer/components/api"
	"github.com/fusioninfer/pulumi-fusioninfer/internal/frontdoor"
)

// inputs are a manifest as the component's inputs: its spec's fields are the inputs' names.
func inputs(t *testing.T, svc *api.InferenceService) property.Map {
	t.Helper()
	data, err := json.Marshal(svc.Spec)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(data, &m))
	m["serviceName"] = svc.Name
	if svc.Namespace != "" {
		m["namespace"] = svc.Namespace
	}
	if svc.Labels != nil {
		m["labels"] = svc.Labels
	}
	return resource.FromResourcePropertyMap(resource.NewPropertyMapFromMap(m))
}

func TestConstructEqualsTheCLIForEveryExample(t *testing.T) {
	files, err := filepath.Glob("../examples/manifests/*.yaml")
	require.NoError(t, err)
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			data, err := os.ReadFile(file)
			require.NoError(t, err)
			docs, errs := api.Decode(data)
			require.Empty(t, errs)
			var mu sync.Mutex
			registered := frontdoor.Objects{}
			prov, err := New()
			require.NoError(t, err)
			server, err := integration.NewServer(context.Background(), Name, semver.MustParse("0.1.0"),
				integration.WithProvider(prov),
				integration.WithMocks(&integration.MockResourceMonitor{
					NewResourceF: func(args integration.MockResourceArgs) (string, property.Map, error) {
						if args.Custom {
							mu.Lock()
							obj := resource.ToResourcePropertyValue(property.New(args.Inputs)).ObjectValue().Mappable()
							registered.Add(obj)
							mu.Unlock()
						}
						return args.Name + "-id", args.Inputs, nil
					},
				}))
			require.NoError(t, err)
			for _, doc := range docs {
				_, err := server.Construct(p.ConstructRequest{
					Urn:    resource.CreateURN(doc.Service.Name, "fusioninfer:index:InferenceService", "", "project", "stack"),
					Inputs: inputs(t, doc.Service),
				})
				require.NoError(t, err)
			}
			assert.Equal(t, frontdoor.Rendered(t, file), registered)
		})
	}
}
