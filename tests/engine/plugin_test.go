package engine_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/pulumi/pulumi/pkg/v3/resource/deploy/deploytest"
	"github.com/pulumi/pulumi/pkg/v3/resource/plugin"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/common/util/rpcutil"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/fusioninfer/pulumi-fusioninfer/mirror/kubeprovider"
)

// pluginEnv makes the test binary serve the kubernetes provider stand-in over gRPC instead of
// running tests: the engine's plugin process (pluginProvider).
const pluginEnv = "FUSIONINFER_KUBERNETES_PLUGIN"

func TestMain(m *testing.M) {
	if os.Getenv(pluginEnv) != "" {
		servePlugin()
		return
	}
	os.Exit(m.Run())
}

// servePlugin serves clusterless() as a Pulumi resource provider plugin does: gRPC on a free
// port of the loopback, the port on the first line of standard output, until its parent closes
// standard input.
func servePlugin() {
	cancel := make(chan bool)
	handle, err := rpcutil.ServeWithOptions(rpcutil.ServeOptions{
		Cancel: cancel,
		Init: func(srv *grpc.Server) error {
			pulumirpc.RegisterResourceProviderServer(srv, plugin.NewProviderServer(clusterless()))
			return nil
		},
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println(handle.Port)
	_, _ = bufio.NewReader(os.Stdin).ReadString('\n') // EOF when the parent goes
	close(cancel)
	<-handle.Done
}

// clusterless is the kubernetes provider stand-in with no cluster behind it, answering as
// pulumi-kubernetes v4.32.0 does where the cluster does not enter (mirror/kubeprovider): Check
// and Diff; Create and Update at preview return the inputs (provider.go Create: a Patch resource,
// or one whose kind the cluster does not know, is not dry-run); at update they return the state a
// cluster that took the inputs as they are would give.
func clusterless() *deploytest.Provider {
	state := func(inputs resource.PropertyMap, urn resource.URN) resource.PropertyMap {
		obj := kubeprovider.Unstructured(inputs)
		return kubeprovider.Checkpoint(obj, obj, obj.GetAPIVersion(), "pulumi-kubernetes-"+strconv.Itoa(len(urn)))
	}
	return &deploytest.Provider{
		CheckF: func(_ context.Context, req plugin.CheckRequest) (plugin.CheckResponse, error) {
			checked, err := kubeprovider.Check(req.URN, req.News)
			return plugin.CheckResponse{Properties: checked}, err
		},
		DiffF: func(_ context.Context, req plugin.DiffRequest) (plugin.DiffResult, error) {
			return kubeprovider.Diff(req.URN, req.OldOutputs, req.NewInputs, req.IgnoreChanges, true)
		},
		CreateF: func(_ context.Context, req plugin.CreateRequest) (plugin.CreateResponse, error) {
			if req.Preview {
				return plugin.CreateResponse{Properties: req.Properties, Status: resource.StatusOK}, nil
			}
			obj := kubeprovider.Unstructured(req.Properties)
			return plugin.CreateResponse{ID: resource.ID(obj.GetNamespace() + "/" + obj.GetName()),
				Properties: state(req.Properties, req.URN), Status: resource.StatusOK}, nil
		},
		UpdateF: func(_ context.Context, req plugin.UpdateRequest) (plugin.UpdateResponse, error) {
			if req.Preview {
				return plugin.UpdateResponse{Properties: req.NewInputs, Status: resource.StatusOK}, nil
			}
			return plugin.UpdateResponse{Properties: state(req.NewInputs, req.URN), Status: resource.StatusOK}, nil
		},
	}
}

// pluginProvider starts this test binary as the kubernetes provider's plugin process and returns
// the engine's gRPC client of it, as the engine talks to a provider it has launched.
func pluginProvider(tb testing.TB) plugin.Provider {
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), pluginEnv+"=1")
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		tb.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		tb.Fatalf("the plugin process said no port: %v", err)
	}
	conn, err := grpc.NewClient("127.0.0.1:"+strings.TrimSpace(line),
		grpc.WithTransportCredentials(insecure.NewCredentials()), rpcutil.GrpcChannelOptions())
	if err != nil {
		tb.Fatal(err)
	}
	return &pluginProcess{Provider: plugin.NewProviderWithClient(nil, pulumirpc.NewResourceProviderClient(conn), false),
		stop: func() { _ = stdin.Close(); _ = conn.Close(); _ = cmd.Wait() }}
}

// pluginProcess is the engine's client of a plugin process, which it stops on Close.
type pluginProcess struct {
	plugin.Provider
	stop func()
}

func (p *pluginProcess) Close() error {
	err := p.Provider.Close()
	p.stop()
	return err
}
