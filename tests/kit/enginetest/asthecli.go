// SPDX-License-Identifier: Apache-2.0

package enginetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/pulumi/pulumi/pkg/v3/backend"
	"github.com/pulumi/pulumi/pkg/v3/backend/display"
	stepdisplay "github.com/pulumi/pulumi/pkg/v3/display"
	"github.com/pulumi/pulumi/pkg/v3/engine"
	lt "github.com/pulumi/pulumi/pkg/v3/engine/lifecycletest/framework"
	"github.com/pulumi/pulumi/pkg/v3/resource/deploy"
	"github.com/pulumi/pulumi/pkg/v3/resource/plugin"
	"github.com/pulumi/pulumi/pkg/v3/resource/stack"
	"github.com/pulumi/pulumi/pkg/v3/resource/stack/snapshot"
	"github.com/pulumi/pulumi/pkg/v3/secrets/b64"
	"github.com/pulumi/pulumi/pkg/v3/util/cancel"
	"github.com/pulumi/pulumi/sdk/v3/go/common/apitype"
	"github.com/pulumi/pulumi/sdk/v3/go/common/diag"
	"github.com/pulumi/pulumi/sdk/v3/go/common/diag/colors"
	"github.com/pulumi/pulumi/sdk/v3/go/common/resource"
	"github.com/pulumi/pulumi/sdk/v3/go/common/workspace"
)

// RunAsTheCLI runs one operation (engine.Update, engine.Destroy; dryRun: its preview) as `pulumi
// up`, `pulumi preview` and `pulumi destroy` run it with a local (diy) backend, for benchmarks
// (pkg/v3 backend/diy/backend.go `apply`). Unlike the lifecycle test framework (lt.TestOp), which
// also checks what the engine does, it generates no plan (the CLI does only for --save-plan or
// PULUMI_EXPERIMENTAL: cmd/pulumi/operations/preview.go), keeps no event (they stream through the
// CLI's non-interactive progress display, which writes to nothing here) and, for an update, saves
// the whole checkpoint to a file in dir after each step, as the local backend does
// (backend/snapshot.go `saveSnapshot`, diy/state.go `saveCheckpoint`), instead of journaling and
// checking a snapshot for every prefix of the journal. onStep, unless nil, sees each step the
// display shows: its operation, the resource, the properties it changes.
func RunAsTheCLI(op lt.TestOp, plan *lt.TestPlan, project workspace.Project, target deploy.Target, dryRun bool, dir string,
	onStep func(op stepdisplay.StepOp, urn resource.URN, diffs []resource.PropertyKey)) (*deploy.Snapshot, error) {
	opts := plan.Options.Options()
	host := plan.Options.HostF()
	defer host.Close()
	opts.HostFactory = func(context.Context, diag.Sink, diag.Sink, plugin.DebugContext) (plugin.Host, error) {
		return host, nil // the engine closes its host only when its cancel source ends: closed above
	}

	var manager *backend.SnapshotManager
	if !dryRun {
		manager = backend.NewSnapshotManager(&checkpointFile{path: filepath.Join(dir, "stack.json"), sizes: filepath.Join(dir, checkpointSizes)},
			b64.NewBase64SecretsManager(), target.Snapshot, nil)
	}
	cancelContext, _ := cancel.NewContext(context.Background())
	events, shown, displayDone := make(chan engine.Event), make(chan engine.Event), make(chan bool)
	go display.ShowEvents("update", apitype.UpdateUpdate, target.Name, "project", "", shown, displayDone,
		display.Options{Color: colors.Never, Type: display.DisplayProgress, Stdout: io.Discard, Stderr: io.Discard, SuppressProgress: true}, dryRun)
	teed := make(chan struct{})
	go func() {
		defer close(teed)
		for e := range events {
			if pre, ok := e.Payload().(engine.ResourcePreEventPayload); ok && pre.Metadata.Op != deploy.OpSame && onStep != nil {
				onStep(pre.Metadata.Op, pre.Metadata.URN, pre.Metadata.Diffs)
			}
			shown <- e
		}
		close(shown)
	}()
	ctx := &engine.Context{Cancel: cancelContext, Events: events, PluginManager: lt.NopPluginManager{}}
	if manager != nil {
		ctx.SnapshotManager = manager
	}
	_, _, err := op(lt.NewUpdateInfo(project, target), ctx, opts, dryRun)
	close(events)
	<-teed
	<-displayDone
	if manager == nil {
		return nil, err
	}
	err = errors.Join(err, manager.Close())
	return manager.Snap(), err
}

// checkpointFile saves each checkpoint as the local backend does: the whole deployment as JSON,
// written over the last one, then checked again (pkg/v3 backend/diy/state.go `saveStack` and
// `saveCheckpoint`, whose backup copy of the file before is a second write of the same size;
// here a rename). It appends each checkpoint's size to the file sizes (CheckpointSizes).
type checkpointFile struct{ path, sizes string }

func (f *checkpointFile) Save(deployment apitype.TypedDeployment) error {
	checkpoint, err := stack.DeploymentV3ToCheckpoint("organization/project/stack", deployment.Deployment, deployment.Version, deployment.Features)
	if err != nil {
		return err
	}
	bytes, err := json.Marshal(checkpoint)
	if err != nil {
		return fmt.Errorf("marshalling the checkpoint: %w", err)
	}
	if err := os.Rename(f.path, f.path+".bak"); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	if err := os.WriteFile(f.path, bytes, 0o600); err != nil {
		return err
	}
	if err := appendLine(f.sizes, strconv.Itoa(len(bytes))); err != nil {
		return err
	}
	return snapshot.VerifyIntegrity(deployment.Deployment)
}

// checkpointSizes is the file in RunAsTheCLI's dir that lists the size of each checkpoint saved.
const checkpointSizes = "checkpoint-sizes"

// CheckpointSizes are the sizes in bytes of the checkpoints that RunAsTheCLI saved in dir, in
// the order it saved them: one for each save of the local backend's (none with
// PULUMI_SKIP_CHECKPOINTS but the last).
func CheckpointSizes(dir string) ([]int, error) {
	data, err := os.ReadFile(filepath.Join(dir, checkpointSizes))
	if err != nil {
		return nil, err
	}
	var sizes []int
	for _, line := range strings.Fields(string(data)) {
		size, err := strconv.Atoi(line)
		if err != nil {
			return nil, err
		}
		sizes = append(sizes, size)
	}
	return sizes, nil
}

func appendLine(path, line string) error {
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(f, line)
	return errors.Join(err, f.Close())
}

// StateBytes is the size of a stack's state as the local backend writes it and `pulumi stack
// export` shows it: the deployment of the snapshot, as JSON.
func StateBytes(snap *deploy.Snapshot) (int, error) {
	deployment, err := stack.SerializeDeployment(context.Background(), snap, false)
	if err != nil {
		return 0, err
	}
	data, err := json.Marshal(deployment)
	return len(data), err
}
