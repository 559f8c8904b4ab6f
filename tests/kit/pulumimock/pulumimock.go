// SPDX-License-Identifier: Apache-2.0

// Package pulumimock records what a Pulumi program registers, under the SDK's resource mocks,
// so tests can assert children, parents, dependencies, inputs and outputs without an engine.
package pulumimock

import (
	"context"
	"sync"

	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/common/tokens"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi"
	"github.com/pulumi/pulumi/sdk/v3/go/pulumi/internals"
)

// Resource is one registration.
type Resource struct {
	URNValue, Type, Name string
	Custom               bool
	ParentURN            string
	Dependencies         []string
	// IgnoreChanges are the input paths the resource option ignoreChanges names.
	IgnoreChanges []string
	// ReplaceOnChanges and DeleteBeforeReplace are those resource options.
	ReplaceOnChanges    []string
	DeleteBeforeReplace bool
	Inputs              resource.PropertyMap
}

// Monitor is a pulumi.MockResourceMonitor that records registrations in order.
type Monitor struct {
	// Outputs, when set, gives the outputs a resource reports beyond its inputs (e.g. a status).
	Outputs func(r Resource) resource.PropertyMap
	// Fail, when set, gives the error a resource's registration fails with (its wait timing out),
	// or nil.
	Fail func(r Resource) error

	mu        sync.Mutex
	resources []Resource
	logs      []Log
}

// Log is a message the program logged (ctx.Log), which the SDK's mock engine drops.
type Log struct {
	Severity, Message string
	// Resource is the URN of the resource it is about, empty for none.
	Resource string
}

// NewResource implements pulumi.MockResourceMonitor: it echoes the inputs as outputs.
func (m *Monitor) NewResource(args pulumi.MockResourceArgs) (string, resource.PropertyMap, error) {
	r := Resource{Type: args.TypeToken, Name: args.Name, Custom: args.Custom, Inputs: args.Inputs}
	if rpc := args.RegisterRPC; rpc != nil {
		r.ParentURN = rpc.GetParent()
		r.Dependencies = rpc.GetDependencies()
		r.IgnoreChanges = rpc.GetIgnoreChanges()
		r.ReplaceOnChanges = rpc.GetReplaceOnChanges()
		r.DeleteBeforeReplace = rpc.GetDeleteBeforeReplace()
	}
	r.URNValue = mockURN(r.ParentURN, r.Type, r.Name)
	if m.Fail != nil {
		if err := m.Fail(r); err != nil {
			return "", nil, err
		}
	}
	outputs := args.Inputs.Copy()
	if m.Outputs != nil {
		for k, v := range m.Outputs(r) {
			outputs[k] = v
		}
	}
	m.mu.Lock()
	m.resources = append(m.resources, r)
	m.mu.Unlock()
	return args.Name + "-id", outputs, nil
}

// Call implements pulumi.MockResourceMonitor; the programs under test call no functions.
func (m *Monitor) Call(args pulumi.MockCallArgs) (resource.PropertyMap, error) {
	return resource.PropertyMap{}, nil
}

// Resources are the registrations so far, in order.
func (m *Monitor) Resources() []Resource {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]Resource{}, m.resources...)
}

// ByType are the registrations of one type, in order.
func (m *Monitor) ByType(typ string) []Resource {
	var out []Resource
	for _, r := range m.Resources() {
		if r.Type == typ {
			out = append(out, r)
		}
	}
	return out
}

// Find is the registration with this name, if any.
func (m *Monitor) Find(name string) (Resource, bool) {
	for _, r := range m.Resources() {
		if r.Name == name {
			return r, true
		}
	}
	return Resource{}, false
}

// Preview runs the program as `pulumi preview` does (unknown outputs stay unknown).
func Preview(info *pulumi.RunInfo) { info.DryRun = true }

// Logs are the messages the program logged so far, in order.
func (m *Monitor) Logs() []Log {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]Log{}, m.logs...)
}

// Run runs a program under the monitor, recording what it logs.
func (m *Monitor) Run(body pulumi.RunFunc, opts ...pulumi.RunOption) error {
	recorded := func(ctx *pulumi.Context) error {
		ctx.Log = &recordingLog{next: ctx.Log, ctx: ctx, monitor: m}
		return body(ctx)
	}
	return pulumi.RunErr(recorded, append([]pulumi.RunOption{pulumi.WithMocks("project", "stack", m)}, opts...)...)
}

// recordingLog records each message in its monitor, then logs it as the context would.
type recordingLog struct {
	next    pulumi.Log
	ctx     *pulumi.Context
	monitor *Monitor
}

func (l *recordingLog) record(severity, msg string, args *pulumi.LogArgs) {
	entry := Log{Severity: severity, Message: msg}
	if args != nil && args.Resource != nil {
		if urn, known, err := Await(l.ctx.Context(), args.Resource.URN()); err == nil && known {
			entry.Resource = string(urn.(pulumi.URN))
		}
	}
	l.monitor.mu.Lock()
	l.monitor.logs = append(l.monitor.logs, entry)
	l.monitor.mu.Unlock()
}

func (l *recordingLog) Debug(msg string, args *pulumi.LogArgs) error {
	l.record("debug", msg, args)
	return l.next.Debug(msg, args)
}

func (l *recordingLog) Info(msg string, args *pulumi.LogArgs) error {
	l.record("info", msg, args)
	return l.next.Info(msg, args)
}

func (l *recordingLog) Warn(msg string, args *pulumi.LogArgs) error {
	l.record("warning", msg, args)
	return l.next.Warn(msg, args)
}

func (l *recordingLog) Error(msg string, args *pulumi.LogArgs) error {
	l.record("error", msg, args)
	return l.next.Error(msg, args)
}

// Await resolves an output inside a running program.
func Await(ctx context.Context, out pulumi.Output) (value any, known bool, err error) {
	res, err := internals.UnsafeAwaitOutput(ctx, out)
	return res.Value, res.Known, err
}

// URN of the recorded resource, as the mocks name it.
func (r Resource) URN() string { return r.URNValue }

// mockURN builds a URN the way the SDK's mock monitor does, for project "project", stack "stack".
func mockURN(parent, typ, name string) string {
	parentType := tokens.Type("")
	if parentURN := resource.URN(parent); parentURN != "" && parentURN.QualifiedType() != resource.RootStackType {
		parentType = parentURN.QualifiedType()
	}
	return string(resource.NewURN("stack", "project", parentType, tokens.Type(typ), name))
}
