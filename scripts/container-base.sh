#!/usr/bin/env bash
# A minimal base image for the native executable, assembled from Debian's own packages and imported
# into podman without any registry: the C library and its loader, zlib, the CA certificates, the time
# zones and an unprivileged user 1001 (group 0), nothing else: no shell, no package manager. The
# native executable needs only libc.so.6, libz.so.1 and the loader (ldd of the executable).
#
#   scripts/container-base.sh [IMAGE]   builds and imports IMAGE (default localhost/payonce-base:bookworm)
#
# Reproducible: the packages are the versions this machine's apt resolves (written into the image's
# /etc/payonce-base.versions), every file has owner 0:0 (but /tmp) and the mtime 0, and the tarball
# is sorted by name, so the same versions give the same tarball, checksum printed. For verification
# here; a real release uses Quarkus' micro image (src/main/docker/Dockerfile.native-micro's default).
#
# Exits 3 after printing "container: skipped: <why>" when podman or apt cannot be used here.
set -euo pipefail
cd "$(dirname "$0")/.."

IMAGE=${1:-localhost/payonce-base:bookworm}
PACKAGES=(libc6 zlib1g ca-certificates tzdata)
WORK=target/container-base

skip() { echo "container: skipped: $*" >&2; exit 3; }
command -v podman >/dev/null || skip "podman is not installed (apt-get install podman runc)"
command -v apt-get >/dev/null && command -v dpkg-deb >/dev/null || skip "apt-get and dpkg-deb are needed"

rm -rf "$WORK"
mkdir -p "$WORK/debs" "$WORK/unpacked" "$WORK/root"
(cd "$WORK/debs" && apt-get download -q -o APT::Sandbox::User=root "${PACKAGES[@]}" >/dev/null) ||
  skip "apt-get download ${PACKAGES[*]} failed (no package index? apt-get update)"
for deb in "$WORK"/debs/*.deb; do dpkg-deb -x "$deb" "$WORK/unpacked"; done

u=$WORK/unpacked r=$WORK/root
multiarch=x86_64-linux-gnu
[[ -d $u/lib/$multiarch ]] || skip "only x86_64 is assembled here"
mkdir -p "$r/lib/$multiarch" "$r/lib64" "$r/etc/ssl/certs" "$r/usr/share" "$r/tmp" "$r/work"
# the loader, the C library with the pieces glibc still ships apart, zlib
for lib in ld-linux-x86-64.so.2 libc.so.6 libm.so.6 libpthread.so.0 libdl.so.2 librt.so.1 \
  libresolv.so.2 libnss_files.so.2 libnss_dns.so.2 libz.so.1; do
  src=$(find "$u/lib/$multiarch" "$u/usr/lib/$multiarch" -maxdepth 1 -name "$lib" 2>/dev/null | head -n 1)
  [[ -n $src ]] || continue
  cp -L "$src" "$r/lib/$multiarch/$lib"
done
ln -s "../lib/$multiarch/ld-linux-x86-64.so.2" "$r/lib64/ld-linux-x86-64.so.2"
# the CA bundle, made as update-ca-certificates makes it: every certificate the package ships
find "$u/usr/share/ca-certificates" -name '*.crt' | LC_ALL=C sort | xargs cat >"$r/etc/ssl/certs/ca-certificates.crt"
cp -a "$u/usr/share/zoneinfo" "$r/usr/share/zoneinfo"
ln -s /usr/share/zoneinfo/Etc/UTC "$r/etc/localtime"
printf 'root:x:0:0:root:/root:/sbin/nologin\npayonce:x:1001:0:payonce:/work:/sbin/nologin\n' >"$r/etc/passwd"
printf 'root:x:0:\n' >"$r/etc/group"
printf 'hosts: files dns\n' >"$r/etc/nsswitch.conf"
for deb in "$WORK"/debs/*.deb; do dpkg-deb -W --showformat='${Package}=${Version}\n' "$deb"; done |
  LC_ALL=C sort >"$r/etc/payonce-base.versions"
chmod 1777 "$r/tmp"
chmod 0775 "$r/work"

tarball=$WORK/base.tar
tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -C "$r" -cf "$tarball" .
echo "container-base: sha256 $(sha256sum "$tarball" | cut -d' ' -f1), $(du -h "$tarball" | cut -f1), $(paste -sd' ' "$r/etc/payonce-base.versions")"
podman import -q --change 'USER 1001' --change 'WORKDIR /work' "$tarball" "$IMAGE" >/dev/null
echo "container-base: imported $IMAGE"
