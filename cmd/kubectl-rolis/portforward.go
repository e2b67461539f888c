/*
Copyright 2026 The Rolis Authors.

SPDX-License-Identifier: Apache-2.0
*/

package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"time"

	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/transport/spdy"
)

// forward opens a port-forward (SPDY, as kubectl port-forward) to the
// given ports of a pod, on free local ports of 127.0.0.1. It returns the
// local port of each remote port and a function that closes the forward.
func (o *kubeOptions) forward(ctx context.Context, pod string, ports []int32, errOut io.Writer) (map[int32]uint16, func(), error) {
	transport, upgrader, err := spdy.RoundTripperFor(o.config)
	if err != nil {
		return nil, nil, err
	}
	req := o.cs.CoreV1().RESTClient().Post().Resource("pods").Namespace(o.ns).Name(pod).SubResource("portforward")
	dialer := spdy.NewDialer(upgrader, &http.Client{Transport: transport}, http.MethodPost, req.URL())
	spec := make([]string, 0, len(ports))
	for _, p := range ports {
		spec = append(spec, fmt.Sprintf("0:%d", p))
	}
	stop, ready := make(chan struct{}), make(chan struct{})
	fw, err := portforward.NewOnAddresses(dialer, []string{"127.0.0.1"}, spec, stop, ready, io.Discard, errOut)
	if err != nil {
		return nil, nil, err
	}
	failed := make(chan error, 1)
	go func() { failed <- fw.ForwardPorts() }()
	select {
	case <-ready:
	case err := <-failed:
		return nil, nil, fmt.Errorf("port-forward to %s: %w", pod, err)
	case <-time.After(30 * time.Second):
		close(stop)
		return nil, nil, fmt.Errorf("port-forward to %s: not ready after 30s", pod)
	case <-ctx.Done():
		close(stop)
		return nil, nil, ctx.Err()
	}
	got, err := fw.GetPorts()
	if err != nil {
		close(stop)
		return nil, nil, err
	}
	out := map[int32]uint16{}
	for _, p := range got {
		out[int32(p.Remote)] = p.Local
	}
	return out, func() { close(stop) }, nil
}
