package engine_test

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/pulumi/pulumi/pkg/v3/resource/plugin"
	"github.com/pulumi/pulumi/sdk/v3/go/common/util/rpcutil"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/fusioninfer/pulumi-fusioninfer/internal/testkit/enginetest"
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

// servePlugin serves enginetest.Clusterless() as a Pulumi resource provider plugin does: gRPC on a free
// port of the loopback, the port on the first line of standard output, until its parent closes
// standard input.
func servePlugin() {
	cancel := make(chan bool)
	handle, err := rpcutil.ServeWithOptions(rpcutil.ServeOptions{
		Cancel: cancel,
		Init: func(srv *grpc.Server) error {
			pulumirpc.RegisterResourceProviderServer(srv, plugin.NewProviderServer(enginetest.Clusterless()))
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
