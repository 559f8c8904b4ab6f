// SPDX-License-Identifier: Apache-2.0

// Package enginetest runs a Pulumi Go program through Pulumi's real engine in-process (pkg/v3's
// lifecycle test framework), with a kubernetes provider the caller gives: the fake of tests/engine
// or the stand-in for the wire of tests/e2e. Tests only.
package enginetest

import (
	"bytes"
	"context"
	"errors"
	"math"
	"runtime"
	"sync"

	"github.com/blang/semver"
	lt "github.com/pulumi/pulumi/pkg/v3/engine/lifecycletest/framework"
	"github.com/pulumi/pulumi/pkg/v3/resource/deploy/deploytest"
	"github.com/pulumi/pulumi/pkg/v3/resource/plugin"
	"github.com/pulumi/pulumi/sdk/v3/go/common/diag"
	"github.com/pulumi/pulumi/sdk/v3/go/common/diag/colors"
	"github.com/pulumi/pulumi/sdk/v3/go/common/env"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
)

// KubernetesVersion is the pulumi-kubernetes version the engine believes it loads.
var KubernetesVersion = semver.MustParse("4.33.0")

// Plan is a plan that runs program against kubernetes (given the address of the engine's host
// service, which a plugin process logs to); what the program and the engine log goes to the
// returned Log; the plan's Config is the stack's configuration the program reads. Steps run with
// the parallelism `pulumi up` and `pulumi preview` have by default: 4 x GOMAXPROCS workers, each
// holding a step until the provider answers, or PULUMI_PARALLEL's (pkg/v3
// cmd/pulumi/operations/up.go defaultParallel).
func Plan(t lt.TB, kubernetes func(engine string) plugin.Provider, program pulumi.RunFunc) (*lt.TestPlan, *Log) {
	var mu sync.Mutex
	var engineAddr string // the plugin host's engine service, which takes the program's log
	language := deploytest.NewLanguageRuntimeF(func(info plugin.RunInfo, monitor *deploytest.ResourceMonitor) error {
		mu.Lock()
		run := pulumi.RunInfo{Project: info.Project, Stack: info.Stack, Parallel: info.Parallel, DryRun: info.DryRun,
			MonitorAddr: info.MonitorAddress, EngineAddr: engineAddr, Config: map[string]string{}}
		mu.Unlock()
		for key, value := range info.Config { // the stack's configuration (the plan's Config), as pulumi.Run reads it
			run.Config[key.String()] = value
		}
		ctx, err := pulumi.NewContext(context.Background(), run) //nolint:usetesting // the SDK context outlives the test's
		if err != nil {
			return err
		}
		return pulumi.RunWithContext(ctx, program)
	})
	var loaded []plugin.Provider // this operation's providers, closed with its host
	loader := deploytest.NewProviderLoader("kubernetes", KubernetesVersion, func() (plugin.Provider, error) {
		mu.Lock()
		defer mu.Unlock()
		p := kubernetes(engineAddr)
		loaded = append(loaded, p)
		return p, nil
	})
	log := &Log{}
	sink := diag.DefaultSink(log, log, diag.FormatOptions{Color: colors.Never})
	hostF := deploytest.NewPluginHostF(sink, sink, language, nil, nil, loader)
	plan := &lt.TestPlan{Options: lt.TestUpdateOptions{T: t, SkipDisplayTests: true, HostF: func() plugin.Host {
		host := hostF()
		mu.Lock()
		engineAddr = host.ServerAddr()
		mu.Unlock()
		return &closingHost{Host: host, closeProviders: func() error {
			mu.Lock()
			providers := loaded
			loaded = nil
			mu.Unlock()
			var errs []error
			for _, p := range providers {
				errs = append(errs, p.Close())
			}
			return errors.Join(errs...)
		}}
	}}}
	plan.Options.Parallel = int32(4 * runtime.GOMAXPROCS(0)) //nolint:gosec // as the CLI computes it
	if p := env.Parallel.Value(); p > 0 && p <= math.MaxInt32 {
		plan.Options.Parallel = int32(p) // PULUMI_PARALLEL, which the CLI reads too
	}
	return plan, log
}

// closingHost closes the providers an operation loaded when the operation's host closes, as the
// real engine's host closes its plugins (pkg/v3 host/host.go defaultHost.Close); deploytest's
// host leaves a provider its loader made open, and a plugin process would outlive the operation.
type closingHost struct {
	plugin.Host
	closeProviders func() error
}

func (h *closingHost) Close() error {
	return errors.Join(h.closeProviders(), h.Host.Close())
}

// Log is what the program logged through the engine (ctx.Log) and the engine's diagnostics, as
// the CLI would print them.
type Log struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *Log) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *Log) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}
