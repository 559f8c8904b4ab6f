# pulumi-fusioninfer. `make demo` and `make test` are the two commands the README promises.
GO          ?= go
VERSION     ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS     := -X main.version=$(VERSION)
# The provider's version is a semantic version: Pulumi puts it in the schema and the SDKs.
PROVIDER_VERSION ?= 0.1.0
DEMO_STORY  ?= examples/manifests/story4-disaggregated-multinode.yaml

.PHONY: demo test test-typescript test-python conformance build vet fuzz bench golden gen clean

## demo: render story 4 of the fusioninfer InferenceService design with the CLI: a one-screen summary, then the YAML.
demo:
	$(GO) run -ldflags "$(LDFLAGS)" ./cmd/fusioninfer render -f $(DEMO_STORY) --summary

## test: vet, every unit, component, example and CLI test (with the fuzzer's property over
## thousands of mutated examples, TestBuildMutatedExamples), and the TypeScript and Python SDKs
## with their examples under Pulumi's mocks (npm and PyPI packages installed here).
test: vet
	$(GO) test ./...
	$(MAKE) test-typescript
	$(MAKE) test-python

TS_INPUTS := $(CURDIR)/tests/typescript/out/inputs

PY_VENV   := $(CURDIR)/tests/python/.venv
PY_INPUTS := $(CURDIR)/tests/python/out/inputs

PY_TREE   := $(CURDIR)/tests/python/out/tree

## test-python: in a virtual environment, install every Python example's requirements.txt as its
## README says (pip install -r requirements.txt, from the example's folder, in a copy of the
## repository's examples and SDK so the SDK folder stays clean), run every example under Pulumi's
## Python mocks with pytest, and construct what they registered through the provider (tests/crosslang).
test-python:
	test -x $(PY_VENV)/bin/python || python3 -m venv $(PY_VENV)
	$(PY_VENV)/bin/pip install --quiet --disable-pip-version-check pytest pyyaml
	rm -rf tests/python/out && mkdir -p $(PY_INPUTS) $(PY_TREE)/sdk $(PY_TREE)/examples
	cp -r sdk/python $(PY_TREE)/sdk/python && cp -r examples/python $(PY_TREE)/examples/python
	for example in $(PY_TREE)/examples/python/*/; do \
		(cd $$example && $(PY_VENV)/bin/pip install --quiet --disable-pip-version-check -r requirements.txt) || exit 1; \
	done
	FUSIONINFER_PY_INPUTS=$(PY_INPUTS) $(PY_VENV)/bin/python -m pytest -q tests/python
	FUSIONINFER_PY_INPUTS=$(PY_INPUTS) $(GO) test ./tests/crosslang -count=1 -run Python

## test-typescript: build sdk/nodejs, type-check every TypeScript example against it, run them under
## Pulumi's Node mocks, and construct what they registered through the provider (tests/crosslang).
test-typescript:
	cd sdk/nodejs && npm install --no-audit --no-fund --no-package-lock --loglevel=error && npx tsc && cp package.json README.md bin/
	cd tests/typescript && npm install --no-audit --no-fund --no-package-lock --loglevel=error && npx tsc -p .
	rm -rf $(TS_INPUTS) && mkdir -p $(TS_INPUTS)
	FUSIONINFER_TS_INPUTS=$(TS_INPUTS) node tests/typescript/out/tests/typescript/mocks.js
	FUSIONINFER_TS_INPUTS=$(TS_INPUTS) $(GO) test ./tests/crosslang -count=1 -run TypeScript

## conformance: every object we emit against a real kube-apiserver + etcd with the upstream CRDs.
conformance:
	$(GO) vet -tags conformance ./tests/conformance
	$(GO) test -tags conformance -count=1 -v -timeout 30m ./tests/conformance

## build: the CLI in bin/, with its version stamped.
build:
	$(GO) build -ldflags "$(LDFLAGS)" -o bin/fusioninfer ./cmd/fusioninfer
	$(GO) build -ldflags "-X main.version=$(PROVIDER_VERSION)" -o bin/pulumi-resource-fusioninfer ./provider/cmd/pulumi-resource-fusioninfer

vet:
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); echo "gofmt needed"; exit 1; }
	$(GO) vet ./...

## fuzz: the coverage-guided fuzzer on the core (not in make test: its instrumented build of every
## package cost 13 cold CI minutes for 20 s of fuzzing).
fuzz:
	$(GO) test ./components/topology -run '^$$' -fuzz FuzzBuild -fuzztime 10m -fuzzminimizetime 30s

## bench: the benchmarks behind the README's performance figures.
bench:
	$(GO) test ./components/topology ./components/inferenceservice ./tests/perf -run '^$$' -bench . -benchmem -benchtime 5x

## golden: rewrite the core's golden files after an intended change; review the diff.
golden:
	$(GO) test ./components/topology -run TestGoldenTrees -update

clean:
	rm -rf bin

## gen: the provider's schema from the Go types, then the SDKs from the schema (sdk/nodejs, sdk/python, sdk/go).
gen:
	$(GO) generate ./components/inferenceservice
	$(GO) run ./provider/cmd/describe > provider/descriptions.json
	$(GO) test ./provider -run TestSchemaIsCheckedIn -update
	$(GO) run ./provider/cmd/sdkgen -schema provider/schema.json -kubernetes third_party/pulumi-kubernetes/schema.json -version $(PROVIDER_VERSION) -out sdk
