// SPDX-License-Identifier: Apache-2.0

package cluster

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A container's volumes as directories of this machine: its scratch, its claims, its
// ConfigMaps (rewritten when the ConfigMap changes, as the kubelet's sync does).

// scratch is a directory of the container's own.
func (run *containerRun) scratch(name string) string {
	dir := filepath.Join(run.k.c.Dir, "containers", string(run.pod.UID), run.container.Name, name)
	_ = os.MkdirAll(dir, 0o755)
	return dir
}

// ClaimDir is the directory that stands for a PersistentVolumeClaim's volume: one for the claim,
// shared by every container that mounts it, as a ReadWriteMany volume is. Nothing fills it (kwok
// completes a download Job's pod without running it): a test writes what the download would have.
func (c *Cluster) ClaimDir(namespace, claim string) string {
	dir := filepath.Join(c.Dir, "claims", namespace, claim)
	_ = os.MkdirAll(dir, 0o755)
	return dir
}

// root is a directory that stands for the container's file system as far as its mounts go: each
// mount path a link to its volume's directory (after mountVolumes), for a program given absolute
// paths in a file, which containerCommand cannot map.
func (run *containerRun) root() (string, error) {
	root := run.scratch("root")
	for mount, dir := range run.mounts {
		link := filepath.Join(root, mount)
		if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
			return "", err
		}
		if err := os.Symlink(dir, link); err != nil && !errors.Is(err, fs.ErrExist) {
			return "", err
		}
	}
	return root, nil
}

// mountVolumes makes a directory for each volume the container mounts: a ConfigMap's keys as
// files, rewritten when the ConfigMap changes (configMapChanged), an emptyDir empty, a claim's
// the claim's own (ClaimDir). Other volume kinds are refused.
func (run *containerRun) mountVolumes() error {
	for _, mount := range run.container.VolumeMounts {
		var volume *corev1.Volume
		for i := range run.pod.Spec.Volumes {
			if run.pod.Spec.Volumes[i].Name == mount.Name {
				volume = &run.pod.Spec.Volumes[i]
			}
		}
		if volume == nil {
			return fmt.Errorf("volume mount %s: the pod has no such volume", mount.Name)
		}
		dir := run.scratch(filepath.Join("volumes", mount.Name))
		switch {
		case volume.ConfigMap != nil:
			cm, err := run.k.c.Clientset.CoreV1().ConfigMaps(run.pod.Namespace).Get(context.Background(), volume.ConfigMap.Name, metav1.GetOptions{})
			if err != nil {
				return fmt.Errorf("volume %s: %w", mount.Name, err)
			}
			if err := writeConfigMap(dir, cm); err != nil {
				return err
			}
			if mount.SubPath == "" { // the kubelet never refreshes a subPath mount
				run.k.mu.Lock()
				if run.k.configMapDirs == nil {
					run.k.configMapDirs = map[string][]string{}
				}
				key := cm.Namespace + "/" + cm.Name
				run.k.configMapDirs[key] = append(run.k.configMapDirs[key], dir)
				run.k.mu.Unlock()
			}
		case volume.EmptyDir != nil:
		case volume.PersistentVolumeClaim != nil:
			dir = run.k.c.ClaimDir(run.pod.Namespace, volume.PersistentVolumeClaim.ClaimName)
		default:
			return fmt.Errorf("volume %s: the suite mounts ConfigMaps, emptyDirs and claims only", mount.Name)
		}
		run.mounts[mount.MountPath] = filepath.Join(dir, mount.SubPath)
	}
	return nil
}

// configMapChanged rewrites the directories of a changed ConfigMap's volumes, as the kubelet
// refreshes a mounted ConfigMap (here at the change, not within its sync period of about a
// minute).
func (k *containers) configMapChanged(cm *corev1.ConfigMap) {
	k.mu.Lock()
	dirs := slices.Clone(k.configMapDirs[cm.Namespace+"/"+cm.Name])
	k.mu.Unlock()
	for _, dir := range dirs {
		if err := writeConfigMap(dir, cm); err != nil && k.log != nil {
			k.logf("ConfigMap %s/%s into %s: %v", cm.Namespace, cm.Name, dir, err)
		}
	}
}

// writeConfigMap writes a ConfigMap's keys as files of dir, each replaced whole (a reader never
// sees half a file, as the kubelet's atomic writer swaps the volume's files at once).
func writeConfigMap(dir string, cm *corev1.ConfigMap) error {
	for key, value := range cm.Data {
		tmp := filepath.Join(dir, "."+key+".tmp")
		if err := os.WriteFile(tmp, []byte(value), 0o644); err != nil {
			return err
		}
		if err := os.Rename(tmp, filepath.Join(dir, key)); err != nil {
			return err
		}
	}
	return nil
}
