/*
Copyright 2026 The Rolis Authors.

SPDX-License-Identifier: Apache-2.0
*/

package specs

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sort"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	dbv1 "github.com/rolisdb/rolis/api/v1alpha1"
)

// Keys of the engine ConfigMap.
const (
	KeyWorkerThreads = "workerThreads"
	KeyBatchSize     = "batchSize"
	KeyBatchTimeout  = "batchTimeout"
	KeyPrefault      = "prefaultMemory"
	KeyTLS           = "tls"
	KeyDurability    = "durability"
	// KeyPeers is the membership the pods start with (--peers). Pods read it
	// through an environment variable, so a membership change does not roll
	// them; running members learn it through ChangeMembership.
	KeyPeers = "peers"
	// KeyMembers is the number of members in KeyPeers.
	KeyMembers = "members"
)

// EngineSettings are the settings that every member must run with; a change
// of any of them makes a new StatefulSet revision through the config hash.
func EngineSettings(c *dbv1.RolisCluster) map[string]string {
	settings := map[string]string{
		KeyWorkerThreads: strconv.Itoa(int(c.WorkerThreads())),
		KeyBatchSize:     strconv.Itoa(int(c.BatchSize())),
		KeyBatchTimeout:  dbv1.BatchTimeoutFlag(c.BatchTimeout()),
		KeyTLS:           strconv.FormatBool(c.TLSEnabled()),
		KeyDurability:    string(c.DurabilityMode()),
	}
	// Only when set: a cluster without it keeps the hash (and the pods) it
	// had before the field existed.
	if b := c.PrefaultMemoryBytes(); b > 0 {
		settings[KeyPrefault] = strconv.FormatInt(b, 10)
	}
	return settings
}

// ConfigHash is a stable hash of the engine settings.
func ConfigHash(settings map[string]string) string {
	keys := make([]string, 0, len(settings))
	for k := range settings {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	h := sha256.New()
	for _, k := range keys {
		fmt.Fprintf(h, "%s=%s\n", k, settings[k])
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// EngineConfigMap holds the engine settings and the starting membership of
// `members` members (ordinals 0..members-1).
func EngineConfigMap(c *dbv1.RolisCluster, members int32, o Options) *corev1.ConfigMap {
	data := EngineSettings(c)
	data[KeyPeers] = Peers(c, members, o)
	data[KeyMembers] = strconv.Itoa(int(members))
	return &corev1.ConfigMap{
		ObjectMeta: objectMeta(c, ConfigMapName(c)),
		Data:       data,
	}
}

// Keys of the epoch ConfigMap.
const (
	// KeyEpochRecord is the decided record (epoch, V) as protobuf JSON.
	KeyEpochRecord = "record"
	// KeyEpoch and KeyLeader repeat the record for people reading it.
	KeyEpoch  = "epoch"
	KeyLeader = "leader"
)

// EpochConfigMap is the epoch record store before any decision: epoch 0, no
// leader. The operator creates it once and afterwards only changes it by a
// compare-and-set on its resourceVersion (see controllers/leadership).
func EpochConfigMap(c *dbv1.RolisCluster) *corev1.ConfigMap {
	meta := objectMeta(c, EpochConfigMapName(c))
	meta.OwnerReferences = EpochRecordOwners(c)
	return &corev1.ConfigMap{
		ObjectMeta: meta,
		Data: map[string]string{
			KeyEpochRecord: "{}",
			KeyEpoch:       "0",
			KeyLeader:      "",
		},
	}
}

// EpochRecordOwners are the owner references of the epoch record: the
// cluster when its volumes are deleted with it, none when they are kept
// (retentionPolicy.whenDeleted Retain, the default). The record goes with
// the data: members that come back with their volumes under a RolisCluster
// re-created with the same name need the record of the epochs they
// decided, or the operator could not tell them from a lost cluster and
// would refuse every election (docs/operations.md, "Deleting and re-creating
// a cluster").
func EpochRecordOwners(c *dbv1.RolisCluster) []metav1.OwnerReference {
	if RetentionPolicy(c).WhenDeleted == appsv1.RetainPersistentVolumeClaimRetentionPolicyType {
		return nil
	}
	return []metav1.OwnerReference{OwnerReference(c)}
}
