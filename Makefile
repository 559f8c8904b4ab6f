# pulumi-fusioninfer. `make demo` and `make test` are the two commands the README promises.
GO          ?= go
# The one place the version is set: the CLI, the plugin, the SDKs (make gen) and the release
# archives all take it from the VERSION file.
VERSION     := $(shell cat VERSION)
LDFLAGS     := -X main.version=$(VERSION)
PLATFORMS   := linux/amd64 linux/arm64 darwin/amd64 darwin/arm64
DEMO_STORY  ?= examples/manifests/story4-disaggregated-multinode.yaml

.PHONY: monitoring-picture image release demo test check test-typescript test-python test-packages sdk-nodejs sdk-packages cluster-programs conformance e2e e2e-karpenter build vet lint fuzz bench bench-cluster bench-routing golden record-state gen clean

## demo: render story 4 of the fusioninfer InferenceService design with the CLI: a one-screen summary, then the YAML.
demo:
	$(GO) run -ldflags "$(LDFLAGS)" ./cmd/fusioninfer render -f $(DEMO_STORY) --summary

## test: the contributor's loop: every unit, component, example, CLI, docs and engine test, in
## short mode (`go test -short ./...`; go test runs vet's own checks on each package). Short mode
## leaves out what builds or installs something of its own: the upstream oracle (GIE v1.5.0's
## Endpoint Picker, built from the module proxy) and the release path (go install from a module
## proxy), and the TypeScript and Python programs (make test-typescript, make test-python).
## `make check` runs those and the rest; CI runs both.
test:
	$(GO) test -short ./... -skip '^Test(TypeScript|Python)'

## check: what make test leaves out, all of which CI runs: gofmt, go vet, staticcheck, the
## tests short mode skips (only the packages whose tests ask testing.Short(), SHORT_PACKAGES: every
## other test would run as make test ran it; tests/architecture holds that nothing else asks.
## GIE v1.5.0's Endpoint Picker, the oracle of api/eppconfig's tests, is
## built once into the user cache first: minutes cold, outside go test's 10-minute limit per
## package), and the TypeScript and Python SDKs with their examples under Pulumi's mocks (npm and
## PyPI packages installed here) and as the release packages them. The tests that read what those
## programs registered run from test-typescript and test-python, after them; under CI they fail
## rather than skip when run without it.
check: vet lint
	$(GO) test ./api/eppconfig -run '^TestGIE150PluginsAreTheEPPs$$' -count=1 -timeout 30m
	$(GO) test $(SHORT_PACKAGES) -skip '^Test(TypeScript|Python)'
	$(MAKE) test-typescript
	$(MAKE) test-python
	$(MAKE) test-packages

SHORT_PACKAGES = $(addprefix ./,$(sort $(dir $(shell git grep --untracked -l 'testing\.Short()' -- '*_test.go'))))

TS_INPUTS := $(CURDIR)/tests/typescript/out/inputs

PY_VENV   := $(CURDIR)/tests/python/.venv
PY_INPUTS := $(CURDIR)/tests/python/out/inputs

PY_TREE   := $(CURDIR)/tests/python/out/tree

## test-python: in a virtual environment, install every Python example's requirements.txt as its
## README says (pip install -r requirements.txt, from the example's folder, in a copy of the
## repository's examples and SDK so the SDK folder stays clean), run every example under Pulumi's
## Python mocks with pytest (and a program with a value unknown at preview inside its template, and
## one with a Platform),
## and construct what they registered through the provider (tests/crosslang).
test-python:
	test -x $(PY_VENV)/bin/python || python3 -m venv $(PY_VENV)
	$(PY_VENV)/bin/pip install --quiet --disable-pip-version-check pytest pyyaml
	rm -rf tests/python/out && mkdir -p $(PY_INPUTS) $(PY_TREE)/sdk $(PY_TREE)/examples
	cp -r sdk/python $(PY_TREE)/sdk/python && cp -r examples/python $(PY_TREE)/examples/python
	for example in $(PY_TREE)/examples/python/*/; do \
		(cd $$example && $(PY_VENV)/bin/pip install --quiet --disable-pip-version-check -r requirements.txt) || exit 1; \
	done
	FUSIONINFER_PY_INPUTS=$(PY_INPUTS) $(PY_VENV)/bin/python -m pytest -q tests/python
	$(PY_VENV)/bin/python tests/python/preview.py $(PY_INPUTS)
	FUSIONINFER_PY_INPUTS=$(PY_INPUTS) $(GO) test ./tests/crosslang -count=1 -run Python

## test-typescript: build sdk/nodejs, type-check every TypeScript example against it, run them under
## Pulumi's Node mocks (and a program with a value unknown at preview inside its template, and one
## with a Platform), and construct what they registered through the provider (tests/crosslang).
test-typescript: sdk-nodejs
	cd tests/typescript && npm install --no-audit --no-fund --no-package-lock --loglevel=error && npx tsc -p .
	rm -rf $(TS_INPUTS) && mkdir -p $(TS_INPUTS)
	FUSIONINFER_TS_INPUTS=$(TS_INPUTS) node tests/typescript/out/tests/typescript/mocks.js
	FUSIONINFER_TS_INPUTS=$(TS_INPUTS) node tests/typescript/out/tests/typescript/preview.js
	node tests/typescript/out/tests/typescript/platform.js
	FUSIONINFER_TS_INPUTS=$(TS_INPUTS) $(GO) test ./tests/crosslang -count=1 -run TypeScript

PKG_OUT := $(CURDIR)/tests/release/out
NPM_PACKAGE := bin/fusioninfer-pulumi-fusioninfer-$(VERSION).tgz
PY_WHEEL    := bin/pulumi_fusioninfer-$(VERSION)-py3-none-any.whl

## sdk-nodejs: build the TypeScript SDK into sdk/nodejs/bin.
sdk-nodejs:
	cd sdk/nodejs && npm install --no-audit --no-fund --no-package-lock --loglevel=error && npx tsc && cp package.json README.md bin/

## sdk-packages: the npm package and the Python wheel a release ships, in bin/: what the README's
## TypeScript and Python steps install.
sdk-packages: sdk-nodejs
	mkdir -p bin && rm -f $(NPM_PACKAGE) $(PY_WHEEL)
	npm pack ./sdk/nodejs/bin --pack-destination bin --loglevel=error
	rm -rf bin/.wheel-venv && python3 -m venv bin/.wheel-venv
	bin/.wheel-venv/bin/pip wheel --quiet --no-deps --disable-pip-version-check --wheel-dir bin ./sdk/python
	rm -rf bin/.wheel-venv sdk/python/build sdk/python/*.egg-info

## test-packages: the SDK packages as a release ships them, each installed into a fresh project
## with the README's own commands (tests/readme holds the README to the lines below) and imported:
## the npm package with npm, required from Node; the Python wheel with pip in a new virtual
## environment. The Go module's own release path (go install and go get from a module proxy) is
## tests/release, in go test.
test-packages: sdk-packages
	rm -rf $(PKG_OUT) && mkdir -p $(PKG_OUT)/node-program
	cd $(PKG_OUT)/node-program && npm init -y > /dev/null && \
		npm install $(CURDIR)/$(NPM_PACKAGE) --no-audit --no-fund --loglevel=error && \
		node -e 'const f = require("@fusioninfer/pulumi-fusioninfer"); if (typeof f.InferenceService !== "function" || typeof f.Platform !== "function") { console.error("no InferenceService or Platform in the npm package"); process.exit(1) }'
	python3 -m venv $(PKG_OUT)/venv
	. $(PKG_OUT)/venv/bin/activate && \
		pip install $(CURDIR)/$(PY_WHEEL) --quiet --disable-pip-version-check && \
		cd $(PKG_OUT) && python -c 'import pulumi_fusioninfer as f; assert callable(f.InferenceService) and callable(f.Platform), "no InferenceService or Platform in the wheel"'

## conformance: every object we emit against a real kube-apiserver + etcd with the upstream CRDs
## (60 minutes a package: on a fresh machine it first waits for kube-apiserver's build, 19 minutes
## niced beside make test and check in a cold CI, 54 on a busy machine);
## every object of the Platform (tests/conformance/platform, a server of its own). One package at
## a time: two API servers rebuilding their OpenAPI for dozens of CRDs at once starved each other
## on 2 cores (a CRD deletion took over 30 s in CI).
conformance:
	$(GO) vet -tags conformance ./tests/conformance/...
	$(GO) test -tags conformance -count=1 -v -p 1 -timeout 30m ./tests/conformance/...

## cluster-programs: build every program of the simulated cluster into the user cache, two at a
## time (CI runs it in the background beside make test; a suite waits for a program still being built).
cluster-programs:
	$(GO) run ./tests/cluster/cmd/build-programs -parallel 2

## e2e-karpenter: only the node pools on a real Karpenter (its kwok cloud provider, with KEDA), its
## own cluster: the package make e2e runs with the others.
e2e-karpenter:
	$(GO) vet -tags e2e ./tests/e2e/karpenter/
	$(GO) test -tags e2e -count=1 -v -timeout 30m ./tests/e2e/karpenter/

## e2e: deploy every example manifest, every Go example program and the rollout, gang and await
## cases through Pulumi's engine (in-process; the real pulumi-kubernetes provider for the examples
## and the ordered rollout, its stand-in, the wire, for the rest) onto a
## simulated cluster: a real control plane, the LWS controller, Volcano and kwok's GPU nodes
## (tests/cluster), one cluster a package, three packages at a time (their clusters mostly wait on
## controllers and servers: 16 min where two at a time took 27 and one at a time 49, issue 54), the
## longest two first (routing 14 min, tests/e2e 10: go test starts them in the order named); requests through a router's real
## Endpoint Picker to llm-d-inference-sim servers (tests/e2e/routing, which needs CAP_NET_ADMIN for
## its pods' network); a real Prometheus scraping the rendered PodMonitors and KEDA scaling from it
## (tests/e2e/metrics, the same network). What it proves: docs/e2e.md.
e2e:
	$(GO) vet -tags e2e ./tests/e2e/... ./examples/go/...
	$(GO) test -tags e2e -count=1 -v -p 3 -timeout 60m ./tests/e2e/routing ./tests/e2e ./tests/e2e/... ./examples/go/...

## build: the CLI in bin/, with its version stamped.
build:
	$(GO) build -ldflags "$(LDFLAGS)" -o bin/fusioninfer ./cmd/fusioninfer
	$(GO) build -ldflags "-X main.version=$(VERSION)" -o bin/pulumi-resource-fusioninfer ./provider/cmd/pulumi-resource-fusioninfer
	$(GO) build -ldflags "-X main.version=$(VERSION)" -o bin/fusioninfer-lora-loader ./cmd/fusioninfer-lora-loader

vet:
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); echo "gofmt needed"; exit 1; }
	$(GO) vet ./...

## lint: staticcheck on every package, the e2e and conformance suites' too (no file of the
## repository is built only without those tags). staticcheck's version is pinned in tools/go.mod,
## a module of its own, so that its dependencies stay out of the module users get.
lint:
	$(GO) tool -modfile=tools/go.mod staticcheck -tags e2e,conformance ./...

## fuzz: the coverage-guided fuzzer on the core (not in make test: its instrumented build of every
## package cost 13 cold CI minutes for 20 s of fuzzing).
fuzz:
	$(GO) test ./core/render -run '^$$' -fuzz FuzzBuild -fuzztime 10m -fuzzminimizetime 30s

## bench: the benchmarks behind the README's performance figures.
bench:
	$(GO) test ./core/render ./components/inferenceservice ./tests/perf -run '^$$' -bench . -benchmem -benchtime 5x
	$(GO) test ./tests/engine -run '^$$' -bench EnginePreview -benchtime 1x

## bench-cluster: preview, up, destroy and rollout through the real kubernetes provider and the wire on the
## simulated cluster (docs/performance.md).
bench-cluster:
	$(GO) test -tags e2e -count=1 -run '^$$' -bench 'Preview|Up|FirstDeploy|Rollout' -benchtime 1x -timeout 60m ./tests/e2e

## bench-routing: the request path on the simulated cluster (docs/performance.md): the Endpoint
## Picker's pick and the time to first token at a fixed offered load, its scorers against round-robin.
## It runs a cluster of its own with the pods' programs (needs CAP_NET_ADMIN, as make e2e).
bench-routing:
	$(GO) test -tags e2e -count=1 -run '^$$' -bench Routing -benchtime 1000x -timeout 45m ./tests/e2e/routing

## monitoring-picture: docs/images/monitoring.png, the picture of docs/monitoring.md. Without PROMETHEUS,
## tests/e2e/metrics' load test draws it (FUSIONINFER_WRITE_PICTURE=1): its service's dashboard from
## the range queries of the Prometheus that scraped its PodMonitors under load. With
## PROMETHEUS=http://HOST:PORT, the main dashboard's panels (examples/manifests/llama-router.yaml's)
## from that Prometheus, one that scraped the service in the last 30 minutes.
monitoring-picture:
	mkdir -p docs/images
	@if [ -n "$(PROMETHEUS)" ]; then \
		$(GO) run ./tests/kit/dashboards/cmd/monitoring-picture -prometheus $(PROMETHEUS) -o docs/images/monitoring.png; \
	else \
		FUSIONINFER_WRITE_PICTURE=1 $(GO) test -tags e2e -count=1 -v -timeout 30m ./tests/e2e/metrics -run TestLoadThroughTheRouterScalesTheRole; \
	fi

## golden: rewrite the cores' golden files (the services', the Platform's) after an intended change; review the diff.
golden:
	$(GO) test ./core/render -run TestGoldenTrees -update
	$(GO) test ./core/platform -run TestGolden -update

## record-state: record the stack of every example manifest, deployed with this tree, as the state
## of release VERSION (program/testdata/state/vVERSION), which make test previews with the code of
## every later commit (docs/design/0025-state-is-a-contract.md). At a release, before make release.
record-state:
	$(GO) test ./program -run TestRecordState -record -count=1

clean:
	rm -rf bin dist

## release: from a clean tree, the tag vVERSION (if it is not there yet), then the CLI and the
## provider plugin for every platform, as the archives Pulumi downloads
## (pulumi-resource-fusioninfer-vVERSION-OS-ARCH.tar.gz, from the GitHub release the SDKs name),
## the model downloader and LoRA loader for Linux (their image: cmd/fusioninfer-download/Dockerfile), and the npm
## and Python SDK packages, all in dist/ and all of version VERSION.
release:
	@test -z "$$(git status --porcelain)" || { echo "release: commit or stash first; a release is a tagged commit"; exit 1; }
	@test -d program/testdata/state/v$(VERSION) || { echo "release: record the stacks' state of v$(VERSION) first (make record-state), and commit it"; exit 1; }
	git rev-parse -q --verify refs/tags/v$(VERSION) > /dev/null || git tag -a v$(VERSION) -m "pulumi-fusioninfer v$(VERSION)"
	rm -rf dist && mkdir -p dist
	for platform in $(PLATFORMS); do \
		os=$${platform%/*}; arch=$${platform#*/}; out=dist/$$os-$$arch; \
		CGO_ENABLED=0 GOOS=$$os GOARCH=$$arch $(GO) build -trimpath -ldflags "-s -w $(LDFLAGS)" -o $$out/fusioninfer ./cmd/fusioninfer && \
		CGO_ENABLED=0 GOOS=$$os GOARCH=$$arch $(GO) build -trimpath -ldflags "-s -w $(LDFLAGS)" -o $$out/pulumi-resource-fusioninfer ./provider/cmd/pulumi-resource-fusioninfer && \
		tar -czf dist/fusioninfer-v$(VERSION)-$$os-$$arch.tar.gz -C $$out fusioninfer && \
		tar -czf dist/pulumi-resource-fusioninfer-v$(VERSION)-$$os-$$arch.tar.gz -C $$out pulumi-resource-fusioninfer || exit 1; \
	done
	for arch in amd64 arm64; do \
		CGO_ENABLED=0 GOOS=linux GOARCH=$$arch $(GO) build -trimpath -ldflags "-s -w $(LDFLAGS)" -o dist/linux-$$arch/fusioninfer-download ./cmd/fusioninfer-download && \
		CGO_ENABLED=0 GOOS=linux GOARCH=$$arch $(GO) build -trimpath -ldflags "-s -w $(LDFLAGS)" -o dist/linux-$$arch/fusioninfer-lora-loader ./cmd/fusioninfer-lora-loader || exit 1; \
	done
	$(MAKE) sdk-packages && cp $(NPM_PACKAGE) $(PY_WHEEL) dist/

## image: the model download Job's image, ghcr.io/fusioninfer/fusioninfer-download:vVERSION (the
## default of every download Job, render.DownloaderImage, and of the LoRA loader sidecar), from
## cmd/fusioninfer-download/Dockerfile.
## Needs docker (or a compatible builder); push it with the release.
image:
	docker build -f cmd/fusioninfer-download/Dockerfile --build-arg VERSION=$(VERSION) -t ghcr.io/fusioninfer/fusioninfer-download:v$(VERSION) .

## gen: the provider's schema from the Go types, then the SDKs from the schema (sdk/nodejs, sdk/python, sdk/go),
## and the field reference of docs/reference.md.
gen:
	$(GO) generate ./api ./components/inferenceservice ./mirror/...
	$(GO) run ./provider/cmd/describe > provider/descriptions.json
	$(GO) run ./provider/cmd/describe -reference docs/reference.md
	$(GO) test ./provider -run TestSchemaIsCheckedIn -update
	$(GO) run ./provider/cmd/sdkgen -schema provider/schema.json -kubernetes third_party/pulumi-kubernetes/schema.json -version $(VERSION) -out sdk
