/*
Copyright 2026 The Rolis Authors.

SPDX-License-Identifier: Apache-2.0
*/

package leadership

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"google.golang.org/protobuf/encoding/protojson"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/rolisdb/rolis/controllers/specs"
	rolisv1 "github.com/rolisdb/rolis/gen/rolis/v1"
)

// ErrSuperseded means another decision was recorded since the record was
// read: this promotion must give up (its epoch may never open).
var ErrSuperseded = errors.New("epoch record changed since it was read: a newer decision won")

// NewerRecord orders decided records by (epoch, config): a failover decides
// a record of a higher epoch; a membership change, which the leader decides
// on rolisd's control stream within its epoch, a record of the same epoch
// with the next configuration.
func NewerRecord(a, b *rolisv1.EpochRecord) bool {
	if a.GetEpoch() != b.GetEpoch() {
		return a.GetEpoch() > b.GetEpoch()
	}
	return a.GetConfig() > b.GetConfig()
}

// Stored is a decided record and the version it was read at.
type Stored struct {
	Record  *rolisv1.EpochRecord
	Version string
}

// EpochStore keeps the latest decided epoch record (epoch, V). Decisions are
// a compare-and-set on the version read: of two operators (or two attempts)
// that read the same version, at most one decides.
type EpochStore interface {
	Load(ctx context.Context) (Stored, error)
	// CompareAndSwap records rec if the store is still at version; it
	// returns ErrSuperseded when it is not, or when rec is not newer than
	// the stored record (NewerRecord).
	CompareAndSwap(ctx context.Context, version string, rec *rolisv1.EpochRecord) (Stored, error)
}

// ConfigMapStore keeps the record in the cluster's <name>-epoch ConfigMap.
// Reads bypass the informer cache (Reader should be the manager's API
// reader): a decision must start from the latest record, and the
// resourceVersion precondition makes a stale read fail rather than win.
type ConfigMapStore struct {
	Reader client.Reader
	Writer client.Writer
	Key    types.NamespacedName
}

// EncodeRecord is the ConfigMap form of a record.
func EncodeRecord(rec *rolisv1.EpochRecord) (string, error) {
	b, err := protojson.MarshalOptions{UseProtoNames: true}.Marshal(rec)
	if err != nil {
		return "", err
	}
	return string(b), nil
}

// DecodeRecord parses the ConfigMap form of a record; "" and "{}" are the
// empty record of epoch 0.
func DecodeRecord(s string) (*rolisv1.EpochRecord, error) {
	rec := &rolisv1.EpochRecord{}
	if s == "" {
		return rec, nil
	}
	if err := protojson.Unmarshal([]byte(s), rec); err != nil {
		return nil, err
	}
	return rec, nil
}

// Load implements EpochStore.
func (s *ConfigMapStore) Load(ctx context.Context) (Stored, error) {
	cm := &corev1.ConfigMap{}
	if err := s.Reader.Get(ctx, s.Key, cm); err != nil {
		return Stored{}, fmt.Errorf("read epoch record %s: %w", s.Key, err)
	}
	rec, err := DecodeRecord(cm.Data[specs.KeyEpochRecord])
	if err != nil {
		return Stored{}, fmt.Errorf("epoch record %s is corrupt (%s): %w", s.Key, specs.KeyEpochRecord, err)
	}
	return Stored{Record: rec, Version: cm.ResourceVersion}, nil
}

// CompareAndSwap implements EpochStore with an Update carrying the read
// resourceVersion: the API server refuses it with a Conflict if anyone wrote
// the ConfigMap in between.
func (s *ConfigMapStore) CompareAndSwap(ctx context.Context, version string, rec *rolisv1.EpochRecord) (Stored, error) {
	cur := &corev1.ConfigMap{}
	if err := s.Reader.Get(ctx, s.Key, cur); err != nil {
		return Stored{}, fmt.Errorf("read epoch record %s: %w", s.Key, err)
	}
	if cur.ResourceVersion != version {
		return Stored{}, ErrSuperseded
	}
	old, err := DecodeRecord(cur.Data[specs.KeyEpochRecord])
	if err != nil {
		return Stored{}, fmt.Errorf("epoch record %s is corrupt: %w", s.Key, err)
	}
	if !NewerRecord(rec, old) {
		return Stored{}, ErrSuperseded
	}
	enc, err := EncodeRecord(rec)
	if err != nil {
		return Stored{}, err
	}
	next := cur.DeepCopy()
	if next.Data == nil {
		next.Data = map[string]string{}
	}
	next.Data[specs.KeyEpochRecord] = enc
	next.Data[specs.KeyEpoch] = strconv.FormatUint(rec.GetEpoch(), 10)
	next.Data[specs.KeyLeader] = strconv.FormatUint(uint64(rec.GetLeaderId()), 10)
	next.ResourceVersion = version // the precondition
	if err := s.Writer.Update(ctx, next); err != nil {
		if apierrors.IsConflict(err) {
			return Stored{}, ErrSuperseded
		}
		return Stored{}, fmt.Errorf("write epoch record %s: %w", s.Key, err)
	}
	return Stored{Record: rec, Version: next.ResourceVersion}, nil
}
