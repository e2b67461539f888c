/*
Copyright 2026 The Rolis Authors.

SPDX-License-Identifier: Apache-2.0
*/

package main

import (
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	dbv1 "github.com/rolisdb/rolis/api/v1alpha1"
	"github.com/rolisdb/rolis/controllers/specs"
)

// Report is what `kubectl rolis status` shows (and prints as JSON or YAML).
type Report struct {
	Cluster        string                 `json:"cluster"`
	Namespace      string                 `json:"namespace"`
	Phase          string                 `json:"phase"`
	Ready          string                 `json:"ready"`
	Leader         string                 `json:"leader"`
	Epoch          int64                  `json:"epoch"`
	Watermark      *dbv1.LogKey           `json:"watermark,omitempty"`
	Spec           SpecVsActual           `json:"spec"`
	Members        []MemberReport         `json:"members"`
	Fenced         []int32                `json:"fenced,omitempty"`
	LastSwitchover *dbv1.SwitchoverRecord `json:"lastSwitchover,omitempty"`
	Failovers      []FailoverReport       `json:"recentFailovers"`
	Certificates   []CertificateReport    `json:"certificates,omitempty"`
	Volumes        []VolumeReport         `json:"volumes"`
	Conditions     []metav1.Condition     `json:"conditions"`
}

// SpecVsActual sets what the spec asks beside what runs.
type SpecVsActual struct {
	Replicas       int32    `json:"replicas"`
	RunningMembers int32    `json:"runningMembers"`
	ReadyMembers   int32    `json:"readyMembers"`
	Image          string   `json:"image"`
	RunningImages  []string `json:"runningImages"`
	Durability     string   `json:"durability"`
	FencedMembers  []int32  `json:"fencedMembers,omitempty"`
	Generation     int64    `json:"generation"`
	ObservedGen    int64    `json:"observedGeneration"`
}

// MemberReport is one member: the operator's probe and its pod.
type MemberReport struct {
	Name         string       `json:"name"`
	ID           int32        `json:"id"`
	Role         string       `json:"role"`
	Epoch        int64        `json:"epoch"`
	Watermark    *dbv1.LogKey `json:"watermark,omitempty"`
	LagSeconds   *float64     `json:"lagSeconds,omitempty"`
	Healthy      bool         `json:"healthy"`
	Version      string       `json:"version,omitempty"`
	PodReady     bool         `json:"podReady"`
	PodPhase     string       `json:"podPhase,omitempty"`
	Node         string       `json:"node,omitempty"`
	Restarts     int32        `json:"restarts"`
	Image        string       `json:"image,omitempty"`
	PodRoleLabel string       `json:"podRoleLabel,omitempty"`
	Message      string       `json:"message,omitempty"`
}

// FailoverReport is a leader change the operator's events tell of.
type FailoverReport struct {
	Time       time.Time `json:"time"`
	Kind       string    `json:"kind"` // failover, switchover, election
	Detected   string    `json:"detected,omitempty"`
	Leader     string    `json:"leader"`
	GapSeconds *float64  `json:"gapSeconds,omitempty"`
}

// CertificateReport is one TLS Secret of the cluster.
type CertificateReport struct {
	Secret    string    `json:"secret"`
	Subject   string    `json:"subject,omitempty"`
	NotAfter  time.Time `json:"notAfter,omitempty"`
	ExpiresIn string    `json:"expiresIn"`
}

// VolumeReport is one member's PersistentVolumeClaim.
type VolumeReport struct {
	Name         string `json:"name"`
	Phase        string `json:"phase"`
	Capacity     string `json:"capacity,omitempty"`
	StorageClass string `json:"storageClass,omitempty"`
	Volume       string `json:"volume,omitempty"`
}

// statusInputs is everything the report is made from.
type statusInputs struct {
	cluster *dbv1.RolisCluster
	pods    []corev1.Pod
	pvcs    []corev1.PersistentVolumeClaim
	secrets []corev1.Secret
	events  []eventsv1.Event
	now     time.Time
}

// buildReport is a pure function of what was read.
func buildReport(in statusInputs) Report {
	c := in.cluster
	st := c.Status
	r := Report{
		Cluster: c.Name, Namespace: c.Namespace, Phase: string(st.Phase), Leader: st.Leader, Epoch: st.Epoch,
		Watermark: st.Watermark, Fenced: st.FencedMembers, LastSwitchover: st.LastSwitchover,
		Conditions: st.Conditions, Failovers: []FailoverReport{}, Volumes: []VolumeReport{}, Members: []MemberReport{},
	}
	r.Ready = "Unknown"
	if cond := meta.FindStatusCondition(st.Conditions, dbv1.ConditionReady); cond != nil {
		r.Ready = string(cond.Status)
	}
	pods := map[string]*corev1.Pod{}
	images := map[string]bool{}
	for i := range in.pods {
		p := &in.pods[i]
		pods[p.Name] = p
		for _, ct := range p.Spec.Containers {
			if ct.Name == specs.ContainerRun {
				images[ct.Image] = true
			}
		}
	}
	r.Spec = SpecVsActual{
		Replicas: c.DesiredReplicas(), RunningMembers: int32(len(in.pods)), ReadyMembers: st.ReadyReplicas,
		Image: c.Spec.Image, Durability: string(c.Spec.Durability), FencedMembers: c.Spec.FencedMembers,
		Generation: c.Generation, ObservedGen: st.ObservedGeneration, RunningImages: []string{},
	}
	for img := range images {
		r.Spec.RunningImages = append(r.Spec.RunningImages, img)
	}
	sort.Strings(r.Spec.RunningImages)

	for _, m := range st.Members {
		mr := MemberReport{Name: m.Name, ID: m.ID, Role: m.Role, Epoch: m.Epoch, Watermark: m.Watermark,
			Healthy: m.Healthy, Version: m.Version, Message: m.Message}
		if m.Lag != nil {
			secs := m.Lag.Seconds()
			mr.LagSeconds = &secs
		}
		if p := pods[m.Name]; p != nil {
			mr.PodPhase, mr.Node, mr.PodRoleLabel = string(p.Status.Phase), p.Spec.NodeName, p.Labels[specs.LabelRole]
			for _, cond := range p.Status.Conditions {
				if cond.Type == corev1.PodReady {
					mr.PodReady = cond.Status == corev1.ConditionTrue
				}
			}
			for _, cs := range p.Status.ContainerStatuses {
				if cs.Name == specs.ContainerRun {
					mr.Restarts, mr.Image = cs.RestartCount, cs.Image
				}
			}
			if mr.Image == "" {
				for _, ct := range p.Spec.Containers {
					if ct.Name == specs.ContainerRun {
						mr.Image = ct.Image
					}
				}
			}
		}
		r.Members = append(r.Members, mr)
	}
	r.Failovers = failovers(c, in.events)
	for _, s := range in.secrets {
		r.Certificates = append(r.Certificates, certificateReport(s, in.now))
	}
	for _, v := range in.pvcs {
		vr := VolumeReport{Name: v.Name, Phase: string(v.Status.Phase), Volume: v.Spec.VolumeName}
		if q, ok := v.Status.Capacity[corev1.ResourceStorage]; ok {
			vr.Capacity = q.String()
		} else if q, ok := v.Spec.Resources.Requests[corev1.ResourceStorage]; ok {
			vr.Capacity = q.String()
		}
		if v.Spec.StorageClassName != nil {
			vr.StorageClass = *v.Spec.StorageClassName
		}
		r.Volumes = append(r.Volumes, vr)
	}
	return r
}

// Reasons of the operator's events that tell of leader changes
// (controllers/step_leadership.go, step_switchover.go).
var detectionReasons = map[string]bool{"LeaderGone": true, "LeaderLeaving": true, "LeaderUnhealthy": true}

// failovers pairs each Promoted event with the detection before it (the
// leader seen gone, leaving or unhealthy, or a Promoting): the gap is from
// the detection to the new leader open. The newest five are kept.
func failovers(c *dbv1.RolisCluster, evs []eventsv1.Event) []FailoverReport {
	type ev struct {
		at     time.Time
		reason string
		note   string
	}
	var list []ev
	for _, e := range evs {
		if e.Regarding.Kind != "RolisCluster" || e.Regarding.Name != c.Name {
			continue
		}
		at := e.EventTime.Time
		if e.Series != nil {
			at = e.Series.LastObservedTime.Time
		}
		if at.IsZero() {
			at = e.DeprecatedLastTimestamp.Time
		}
		list = append(list, ev{at, e.Reason, e.Note})
	}
	sort.SliceStable(list, func(i, j int) bool { return list[i].at.Before(list[j].at) })
	out := []FailoverReport{}
	var detected *ev
	var promoting *ev
	for i := range list {
		e := &list[i]
		switch {
		case detectionReasons[e.reason]:
			if detected == nil {
				detected = e
			}
		case e.reason == "Promoting":
			if promoting == nil {
				promoting = e
			}
		case e.reason == "Promoted":
			f := FailoverReport{Time: e.at, Leader: strings.SplitN(e.note, " ", 2)[0], Kind: "failover"}
			start := detected
			if start == nil {
				start = promoting
			}
			if promoting != nil && strings.HasPrefix(promoting.note, "election") {
				f.Kind = "election"
			} else if detected == nil {
				f.Kind = "switchover"
			}
			if detected != nil {
				f.Detected = detected.note
				if detected.reason == "LeaderLeaving" {
					f.Kind = "switchover"
				}
			}
			if start != nil {
				gap := e.at.Sub(start.at).Seconds()
				f.GapSeconds = &gap
			}
			out = append(out, f)
			detected, promoting = nil, nil
		}
	}
	if len(out) > 5 {
		out = out[len(out)-5:]
	}
	return out
}

// certificateReport reads the certificate of a TLS Secret.
func certificateReport(s corev1.Secret, now time.Time) CertificateReport {
	cr := CertificateReport{Secret: s.Name, ExpiresIn: "no certificate"}
	block, _ := pem.Decode(s.Data[corev1.TLSCertKey])
	if block == nil {
		return cr
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		cr.ExpiresIn = "unreadable: " + err.Error()
		return cr
	}
	cr.Subject, cr.NotAfter = cert.Subject.CommonName, cert.NotAfter
	left := cert.NotAfter.Sub(now)
	switch {
	case left <= 0:
		cr.ExpiresIn = "EXPIRED " + humanDuration(-left) + " ago"
	default:
		cr.ExpiresIn = humanDuration(left)
	}
	return cr
}

func humanDuration(d time.Duration) string {
	switch {
	case d >= 48*time.Hour:
		return fmt.Sprintf("%dd", int(d.Hours()/24))
	case d >= time.Hour:
		return fmt.Sprintf("%dh", int(d.Hours()))
	case d >= time.Minute:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	}
	return fmt.Sprintf("%ds", int(d.Seconds()))
}
