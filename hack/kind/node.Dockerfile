# The Kind node image, without `kind build node-image` (it pulls images):
# the Kind base (kindbase.Dockerfile) plus the Kubernetes binaries built from the
# k8s.io/kubernetes module, the runc wrapper, and the default storage manifest
# that kind applies at cluster creation. node-image.sh then starts it once,
# imports the control-plane images into its containerd and commits the result.
# No CNI configuration is baked in: hack/kind/cni.sh writes one per node with
# that node's pod range, and until then the node is NotReady (so no pod ever
# gets an address from a range that clashes with another node's).
ARG KINDBASE=local/kindbase:bookworm
FROM ${KINDBASE}
ARG K8S_VERSION
COPY kubeadm kubelet kubectl /usr/bin/
COPY runc-wrapper-node /usr/local/bin/runc-wrapper
COPY default-storage.yaml /kind/manifests/default-storage.yaml
RUN rm -f /usr/local/sbin/runc \
 && install -m 755 /usr/local/bin/runc-wrapper /usr/local/sbin/runc \
 && chmod 755 /usr/bin/kubeadm /usr/bin/kubelet /usr/bin/kubectl \
 && echo "${K8S_VERSION}" > /kind/version \
 && rm -f /etc/cni/net.d/*
