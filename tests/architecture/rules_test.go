// SPDX-License-Identifier: Apache-2.0

package architecture

// The layers as rules by folder, the one source of what may import what (docs/architecture.md's
// tables of them are written from here: go test ./tests/architecture -update). A package is ruled
// by the rule of the longest folder that holds it; it may import a package of this module only
// when a folder of the rule's mayImport holds that package, and may link (import, directly or
// not) no package under a prefix of mayNotLink. Folders are paths from the module's root, so a
// folder moved is one edit here (docs/design/0032-folders-that-are-the-layers.md).
type rule struct {
	folder     string
	mayImport  []string
	mayNotLink []string
	// mayNotImport are standard packages the folder's own code never imports (what it links
	// through another package is that package's: fmt links os).
	mayNotImport []string
	why          string
}

// Prefixes of what the pure core and the input model never link: Pulumi, and a cluster's client.
var (
	pulumi   = "github.com/pulumi/"
	clientGo = "k8s.io/client-go/"
)

// noIO are the standard packages of I/O the pure core never imports: files, processes, the
// network (issue 55: a planted os import passed).
var noIO = []string{"net", "net/http", "os", "os/exec"}

// everything is the module's library: what a test helper or a door may import (never tests/ or
// examples/).
var everything = []string{"api", "cmd", "components", "core", "internal", "mirror", "program", "provider", "third_party"}

var rules = []rule{
	{folder: "third_party", why: "upstream files we embed"},
	{folder: "mirror", why: "copies of upstream, each held to it by tests"},
	{folder: "api/vllm", mayNotLink: []string{pulumi, clientGo},
		why: "a leaf: vLLM's command line and metrics, read by validation, the core and eppconfig"},
	{folder: "api/modelsource", mayNotLink: []string{pulumi, clientGo},
		why: "a leaf: a model's source URI, read by validation, the core and the downloader"},
	{folder: "api/eppconfig", mayImport: []string{"api/vllm"}, mayNotLink: []string{pulumi, clientGo},
		why: "a leaf: the Endpoint Picker's configurations and the EPP loader's rules"},
	{folder: "internal/goparse", why: "a leaf: Go files as the go command builds them, for make gen"},
	{folder: "api", mayImport: []string{"api/vllm", "api/modelsource", "api/eppconfig", "mirror/karpenter"},
		mayNotLink: []string{pulumi, clientGo},
		why:        "the input model: on the leaves whose rules validation asks, never on what builds on it"},
	{folder: "api/internal/defaultsgen", mayImport: []string{"internal/goparse"},
		why: "make gen's generator of the defaults"},
	{folder: "core", mayImport: []string{"api", "core", "mirror", "third_party"}, mayNotLink: []string{pulumi, clientGo},
		mayNotImport: noIO, why: "the pure core over the input model: no Pulumi, no I/O"},
	{folder: "components", mayImport: []string{"api", "core", "components", "mirror"},
		why: "the Pulumi components, over the core"},
	{folder: "components/inferenceservice/internal/argsgen", mayImport: []string{"internal/goparse"},
		why: "make gen's generator of the Go Args"},
	{folder: "internal/download", mayImport: []string{"api/modelsource"},
		why: "what the download Job runs"},
	{folder: "internal/observe", mayImport: []string{"api", "core", "mirror"},
		mayNotLink: []string{"k8s.io/client-go/kubernetes"},
		why:        "a cluster's objects read for `status`; the typed clientset would link every API group"},
	{folder: "tests/kit", mayImport: append([]string{"tests/kit"}, everything...),
		why: "test helpers; they compare the doors, so they import the provider"},
	{folder: "cmd", mayImport: []string{"api", "core", "components", "mirror", "internal/download", "internal/observe", "third_party"},
		why: "the binaries, a door"},
	{folder: "program", mayImport: []string{"api", "core", "components"},
		why: "the root Pulumi program, a door"},
	{folder: "provider", mayImport: []string{"api", "core", "components", "mirror", "internal/goparse", "provider", "third_party"},
		why: "the multi-language plugin and make gen's schema and SDKs, a door"},
	{folder: "examples", mayImport: []string{"api", "components", "examples"},
		why: "programs as a user writes them: the input model and the components only"},
	{folder: "tests", mayImport: append([]string{"tests"}, everything...),
		why: "tests across the doors"},
	{folder: "sdk", mayImport: []string{"sdk"}, why: "the generated Go SDK"},
}
