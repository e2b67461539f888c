/*
Copyright 2026 The Rolis Authors.

SPDX-License-Identifier: Apache-2.0
*/

package specs

import (
	"testing"

	. "github.com/onsi/gomega"

	dbv1 "github.com/rolisdb/rolis/api/v1alpha1"
)

func TestTablesAndLogSettingsBecomeRolisdFlags(t *testing.T) {
	g := NewWithT(t)
	o := DefaultOptions()
	plain := sample()
	before := RolisdArgs(plain, o)
	g.Expect(before).To(ContainElement("--log-format=json"), "json logs unless the spec says otherwise")
	g.Expect(before).NotTo(ContainElement(HavePrefix("--tables")))
	g.Expect(before).NotTo(ContainElement(HavePrefix("--log-level")))

	c := sample()
	c.Spec.Tables = []dbv1.TableName{"orders", "customers", "order.lines"}
	c.Spec.LogLevel = "debug"
	c.Spec.LogFormat = "text"
	args := RolisdArgs(c, o)
	g.Expect(args).To(ContainElements("--tables=orders,customers,order.lines", "--log-level=debug", "--log-format=text"))
	g.Expect(args).NotTo(ContainElement("--log-format=json"), "one --log-format only: rolisd refuses a repeated flag")
	g.Expect(len(args)).To(Equal(len(before)+2), "tables and the log level add one flag each")

	sts := StatefulSet(c, 3, "abc123", o)
	g.Expect(sts.Spec.Template.Spec.Containers[0].Args).To(Equal(args))
	g.Expect(PodTemplate(c, "abc123", o)).NotTo(Equal(PodTemplate(plain, "abc123", o)), "a change rolls the pods (a new revision)")
}
