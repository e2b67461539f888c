/*
Copyright 2026 The Rolis Authors.

SPDX-License-Identifier: Apache-2.0
*/

package main

import (
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	dbv1 "github.com/rolisdb/rolis/api/v1alpha1"
)

func TestToolsImageIsBesideTheRolisdImage(t *testing.T) {
	for in, want := range map[string]string{
		"rolis/rolisd:0.1.0":          "rolis/rolis-tools:0.1.0",
		"localhost:5000/rolis/rolisd": "localhost:5000/rolis/rolis-tools",
		"rolisd:dev":                  "rolis-tools:dev",
		"rolis/rolisd@sha256:abcd":    "",
		"example.com/other:1":         "",
	} {
		if got := toolsImage(in); got != want {
			t.Errorf("toolsImage(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestBenchJobRunsRolisctlBenchAgainstTheClientService(t *testing.T) {
	c := &dbv1.RolisCluster{ObjectMeta: metav1.ObjectMeta{Name: "db", Namespace: "prod"},
		Spec: dbv1.RolisClusterSpec{Image: "rolis/rolisd:0.1.0", TLS: &dbv1.TLSSpec{}}}
	j, err := benchJob(c, &benchOptions{workload: "ycsbpp", seconds: 30, extra: []string{"--concurrency=4"}})
	if err != nil {
		t.Fatal(err)
	}
	ct := j.Spec.Template.Spec.Containers[0]
	if ct.Image != "rolis/rolis-tools:0.1.0" || !slices.Equal(ct.Args, []string{"bench", "--workload=ycsbpp", "--seconds=30", "--concurrency=4"}) {
		t.Errorf("container: %s %v", ct.Image, ct.Args)
	}
	env := map[string]string{}
	for _, e := range ct.Env {
		env[e.Name] = e.Value
	}
	if env["ROLISCTL_ENDPOINT"] != "db.prod.svc:7000" || !strings.HasSuffix(env["ROLISCTL_TLS_KEY"], "tls.key") {
		t.Errorf("env: %v", env)
	}
	if *j.Spec.BackoffLimit != 0 || j.Spec.Template.Spec.Volumes[0].Secret.SecretName != "db-client-tls" {
		t.Errorf("job: %+v", j.Spec)
	}
	// The failover timeline's flags (docs/benchmarks.md, "Failover
	// timeline") reach rolisctl bench as given, global ones included.
	tl := []string{"--keys=100000", "--timeline=100ms", "--timeout=1s", "--json"}
	j, err = benchJob(c, &benchOptions{workload: "ycsbpp", seconds: 12, extra: tl})
	if err != nil || !slices.Equal(j.Spec.Template.Spec.Containers[0].Args, append([]string{"bench", "--workload=ycsbpp", "--seconds=12"}, tl...)) {
		t.Errorf("timeline args: %v %v", j.Spec.Template.Spec.Containers[0].Args, err)
	}
	j, err = benchJob(c, &benchOptions{workload: "tpcc", seconds: 5, extra: []string{"--warehouses=2", "--check"}})
	if err != nil || !slices.Equal(j.Spec.Template.Spec.Containers[0].Args,
		[]string{"bench", "--workload=tpcc", "--seconds=5", "--load", "--warehouses=2", "--check"}) {
		t.Fatalf("a procedure workload is loaded first: %v %v", err, j)
	}
	for _, bad := range []*benchOptions{{workload: "tpc-c", seconds: 1}, {workload: "ycsbpp", seconds: 0}} {
		if _, err := benchJob(c, bad); err == nil {
			t.Errorf("%+v is refused", bad)
		}
	}
	c.Spec.Image = "example.com/custom:1"
	if _, err := benchJob(c, &benchOptions{workload: "ycsbpp", seconds: 1}); err == nil {
		t.Error("no tools image can be derived: --image is asked for")
	}
}
