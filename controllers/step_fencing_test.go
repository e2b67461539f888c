/*
Copyright 2026 The Rolis Authors.

SPDX-License-Identifier: Apache-2.0
*/

package controllers

import (
	"reflect"
	"testing"
)

func TestPlanFenceKeepsARefusedFenceFromChangingAnything(t *testing.T) {
	for _, tc := range []struct {
		name    string
		spec    []int32
		config  []int32
		fenced  []int32
		out     []int32
		refused bool
	}{
		{"allowed, not yet out", []int32{2}, []int32{1, 2, 3}, []int32{2}, nil, false},
		{"allowed, out", []int32{2}, []int32{1, 3}, []int32{2}, []int32{2}, false},
		{"configuration unknown", []int32{2}, nil, []int32{2}, nil, false},
		{"refused: only members already out stay out", []int32{2, 3}, []int32{1, 3}, []int32{2}, []int32{2}, true},
		{"refused before anything moved", []int32{1, 2}, []int32{1, 2, 3}, nil, nil, true},
	} {
		f := planFence(3, tc.spec, tc.config)
		var fenced []int32
		for id := int32(1); id <= 3; id++ {
			if f.fenced[id] {
				fenced = append(fenced, id)
			}
		}
		if !reflect.DeepEqual(fenced, tc.fenced) || !reflect.DeepEqual(f.out, tc.out) || (f.refused != "") != tc.refused {
			t.Errorf("%s: fenced %v out %v refused %q; want fenced %v out %v refused %v",
				tc.name, fenced, f.out, f.refused, tc.fenced, tc.out, tc.refused)
		}
	}
}
