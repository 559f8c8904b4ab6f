// SPDX-License-Identifier: Apache-2.0

package engine_test

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"testing"

	"github.com/pulumi/pulumi/pkg/v3/resource/plugin"
	"github.com/pulumi/pulumi/sdk/v3/go/common/util/rpcutil"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/grpc"

	"github.com/fusioninfer/pulumi-fusioninfer/tests/kit/enginetest"
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
	return enginetest.LaunchPlugin(tb, cmd)
}
