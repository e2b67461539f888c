/*
Copyright 2026 The Rolis Authors.

SPDX-License-Identifier: Apache-2.0
*/

package specs

import (
	"path"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"

	dbv1 "github.com/rolisdb/rolis/api/v1alpha1"
)

func envValue(ctr corev1.Container, name string) (string, bool) {
	for _, e := range ctr.Env {
		if e.Name == name {
			return e.Value, true
		}
	}
	return "", false
}

// spec.durability reaches rolisd as ROLISD_DURABILITY; unset is disk.
func TestDurabilityIsPassedToRolisd(t *testing.T) {
	g := NewWithT(t)
	for spec, want := range map[dbv1.Durability]string{"": "disk", dbv1.DurabilityDisk: "disk", dbv1.DurabilityMemory: "memory"} {
		c := sample()
		c.Spec.Durability = spec
		ctr := StatefulSet(c, 3, "h", DefaultOptions()).Spec.Template.Spec.Containers[0]
		v, ok := envValue(ctr, EnvDurability)
		g.Expect(ok).To(BeTrue(), "spec.durability %q", spec)
		g.Expect(v).To(Equal(want), "spec.durability %q", spec)
		g.Expect(EngineSettings(c)).To(HaveKeyWithValue(KeyDurability, want))
	}
}

// The data directory rolisd is given is the mount of the StatefulSet's
// volume claim, and nothing else is mounted over or around it: with
// durability, a directory on the container's filesystem (or on the /tmp
// emptyDir) would be lost with the pod, which is the silent data loss
// docs/operations.md, "Durability" rules out.
func TestDataDirectoryIsOnThePersistentVolumeClaim(t *testing.T) {
	g := NewWithT(t)
	variants := map[string]func(*dbv1.RolisCluster){
		"default": func(*dbv1.RolisCluster) {},
		"tls":     func(c *dbv1.RolisCluster) { c.Spec.TLS = &dbv1.TLSSpec{IssuerRef: &dbv1.IssuerReference{Name: "ca"}} },
		"memory":  func(c *dbv1.RolisCluster) { c.Spec.Durability = dbv1.DurabilityMemory },
	}
	for name, change := range variants {
		c := sample()
		change(c)
		sts := StatefulSet(c, 3, "h", DefaultOptions())
		pod := sts.Spec.Template.Spec
		ctr := pod.Containers[0]

		dir, ok := envValue(ctr, EnvDataDir)
		g.Expect(ok).To(BeTrue(), name+": rolisd must be given its data directory")
		g.Expect(path.IsAbs(dir)).To(BeTrue(), name)
		for _, a := range ctr.Args {
			g.Expect(a).NotTo(HavePrefix("--data-dir"), name+": the flag would win over the environment")
		}

		claims := map[string]bool{}
		for _, vc := range sts.Spec.VolumeClaimTemplates {
			claims[vc.Name] = true
		}
		for _, v := range pod.Volumes {
			g.Expect(claims).NotTo(HaveKey(v.Name), name+": a pod volume named like the claim would replace it")
		}
		// The mount that holds dir is the deepest mount path that is dir or
		// one of its parents; it must be the claim's, and exactly at dir.
		var holder *corev1.VolumeMount
		for i, m := range ctr.VolumeMounts {
			p := path.Clean(m.MountPath)
			if p == dir || strings.HasPrefix(dir, p+"/") {
				if holder == nil || len(p) > len(path.Clean(holder.MountPath)) {
					holder = &ctr.VolumeMounts[i]
				}
			}
			g.Expect(strings.HasPrefix(p, dir+"/")).To(BeFalse(), name+": nothing is mounted inside the data directory: %s", p)
		}
		g.Expect(holder).NotTo(BeNil(), name+": %s is on the container's filesystem", dir)
		g.Expect(claims).To(HaveKey(holder.Name), name+": %s is on volume %s, not on the PersistentVolumeClaim", dir, holder.Name)
		g.Expect(path.Clean(holder.MountPath)).To(Equal(dir), name)
		g.Expect(holder.ReadOnly).To(BeFalse(), name)
		g.Expect(holder.SubPath).To(BeEmpty(), name)
		g.Expect(*ctr.SecurityContext.ReadOnlyRootFilesystem).To(BeTrue(), name+": the root filesystem takes no data at all")
	}
}
