# The Kind node base: kind's images/base layout on a Debian bookworm rootfs
# (base-images.sh), with Debian's containerd 1.6 and runc 1.1 instead of the
# versions kind compiles from git (no git hosts are reachable here).
ARG ROOTFS=local/kindbase-rootfs:bookworm
FROM ${ROOTFS}
COPY files/usr/local/bin/ /usr/local/bin/
COPY files/kind/ /kind/
COPY files/etc/ /etc/
RUN chmod 755 /kind /kind/bin /kind/bin/* /usr/local/bin/* \
 && find /lib/systemd/system/sysinit.target.wants/ -name systemd-tmpfiles-setup.service -delete \
 && rm -f /lib/systemd/system/multi-user.target.wants/* /etc/systemd/system/*.wants/* \
          /lib/systemd/system/local-fs.target.wants/* /lib/systemd/system/sockets.target.wants/*udev* \
          /lib/systemd/system/sockets.target.wants/*initctl* /lib/systemd/system/basic.target.wants/* \
 && echo "ReadKMsg=no" >> /etc/systemd/journald.conf \
 && ln -sf /usr/lib/systemd/systemd /sbin/init \
 && for b in containerd ctr containerd-shim-runc-v2; do ln -sf /usr/bin/$b /usr/local/bin/$b; done \
 && ln -sf /usr/sbin/runc /usr/local/sbin/runc \
 && mkdir -p /opt/cni/bin \
 && for p in host-local loopback ptp portmap bridge; do ln -sf /usr/lib/cni/$p /opt/cni/bin/$p; done \
 && rm -f /etc/systemd/system/containerd-fuse-overlayfs.service \
 && systemctl enable kubelet.service containerd.service undo-mount-hacks.service \
 && systemctl mask systemd-binfmt.service \
 && mkdir -p /etc/kubernetes/manifests \
 && ctr oci spec \
    | jq '.hooks.createContainer[.hooks.createContainer | length] |= . + {"path": "/kind/bin/mount-product-files.sh"}' \
    | jq 'del(.process.rlimits)' > /etc/containerd/cri-base.json \
 && containerd --version && runc --version | head -1
ENV container=docker
STOPSIGNAL SIGRTMIN+3
ENTRYPOINT [ "/usr/local/bin/entrypoint", "/sbin/init" ]
