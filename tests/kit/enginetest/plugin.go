// SPDX-License-Identifier: Apache-2.0

package enginetest

import (
	"bufio"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/pulumi/pulumi/pkg/v3/resource/plugin"
	"github.com/pulumi/pulumi/sdk/v3/go/common/util/rpcutil"
	pulumirpc "github.com/pulumi/pulumi/sdk/v3/proto/go"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// LaunchPlugin starts cmd as a resource provider plugin process and returns the engine's gRPC
// client of it, as the engine launches a plugin (pkg/v3 resource/plugin newPlugin: the plugin
// prints its port on the first line of standard output).
// Closing the client stops the process.
func LaunchPlugin(tb testing.TB, cmd *exec.Cmd) plugin.Provider {
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
		tb.Fatalf("the plugin process %s said no port: %v", cmd.Path, err)
	}
	conn, err := grpc.NewClient("127.0.0.1:"+strings.TrimSpace(line),
		grpc.WithTransportCredentials(insecure.NewCredentials()), rpcutil.GrpcChannelOptions())
	if err != nil {
		tb.Fatal(err)
	}
	return &pluginProcess{Provider: plugin.NewProviderWithClient(nil, pulumirpc.NewResourceProviderClient(conn), false),
		stop: func() { _ = stdin.Close(); _ = conn.Close(); stop(cmd) }}
}

// stop ends a plugin process as the engine does (sdk/v3 go/common/resource/plugin/plugin.go
// execPlugin's kill): SIGINT, then SIGKILL if it is still there 5 s later.
func stop(cmd *exec.Cmd) {
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	_ = cmd.Process.Signal(os.Interrupt)
	select {
	case <-exited:
	case <-time.After(5 * time.Second):
		_ = cmd.Process.Kill()
		<-exited
	}
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
