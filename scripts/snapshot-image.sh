#!/usr/bin/env bash
# The release image of .goreleaser.yaml (kos), built for `make
# release-snapshot` where GoReleaser cannot build it: GoReleaser's ko step
# loads a snapshot image into a Docker daemon, and reads its base image from
# a registry. This script runs the same ko (KO_VERSION, the version
# GoReleaser embeds) with the same build flags, platforms and labels, and
# needs neither:
#
#  - the base image is assembled here and served by a registry on loopback
#    that lives as long as the script (crane registry serve): one layer with
#    the machine's CA bundle (Debian's ca-certificates, the package
#    distroless takes its bundle from), /etc/passwd and /etc/group with
#    nonroot (65532), /tmp, and /data owned by 65532; for linux/amd64 and
#    linux/arm64. The release's base is gcr.io/distroless/static-debian12:nonroot
#    (which adds tzdata and the licences of those files).
#  - the image is written as an OCI image layout, archived as
#    dist/verdictbot_<version>_image.oci.tar (one index, both platforms):
#    `skopeo copy oci-archive:…`, `podman load`, `docker load` (25+) or
#    `crane push` take it.
#
# Usage: scripts/snapshot-image.sh DIST   (after goreleaser release --snapshot,
# whose DIST/metadata.json gives the version, commit and date)
# Environment: KO and CRANE, the tools' paths (the Makefile sets them).
set -euo pipefail
cd "$(dirname "$0")/.."

dist=${1:?usage: scripts/snapshot-image.sh DIST}
ko=${KO:?KO: the path of ko}
crane=${CRANE:?CRANE: the path of crane}
ca=/etc/ssl/certs/ca-certificates.crt
[ -r "$ca" ] || { echo "snapshot-image: $ca is missing (apt-get install ca-certificates)"; exit 1; }

# The snapshot's version, commit and date, as GoReleaser resolved them.
meta=$(tr -d '\n' < "$dist/metadata.json")
field() { printf '%s' "$meta" | sed -n "s/.*\"$1\": *\"\\([^\"]*\\)\".*/\\1/p"; }
version=$(field version)
full_commit=$(field commit)
date=$(field date | sed "s/\.[0-9]*Z$/Z/")  # RFC 3339 to the second, as GoReleaser's {{ .Date }}
[ -n "$version" ] && [ -n "$full_commit" ] && [ -n "$date" ] || { echo "snapshot-image: no version, commit or date in $dist/metadata.json"; exit 1; }
short_commit=$(git rev-parse --short "$full_commit")
epoch=$(git log -1 --format=%ct "$full_commit")

work=$(mktemp -d)
# ko names the layout's repository after its path, which must then be
# lower case: mktemp's is not.
layout=$dist/oci-layout
rm -rf "$layout"
registry_pid=
cleanup() {
  if [ -n "$registry_pid" ]; then kill "$registry_pid" 2>/dev/null || true; wait "$registry_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

# A registry on loopback for the base image (in memory, gone at exit).
"$crane" registry serve --address 127.0.0.1:0 2>"$work/registry.log" &
registry_pid=$!
port=
for _ in $(seq 1 50); do
  port=$(sed -n 's/.*serving on port \([0-9]*\).*/\1/p' "$work/registry.log")
  [ -n "$port" ] && break
  sleep 0.1
done
[ -n "$port" ] || { echo "snapshot-image: crane registry serve did not start:"; cat "$work/registry.log"; exit 1; }
reg=127.0.0.1:$port

# The base: one layer, owned by root but /data (65532, like the Dockerfile's).
root=$work/rootfs
mkdir -p "$root/etc/ssl/certs" "$root/data" "$root/tmp"
cp "$ca" "$root/etc/ssl/certs/ca-certificates.crt"
printf 'root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n' > "$root/etc/passwd"
printf 'root:x:0:\nnonroot:x:65532:\n' > "$root/etc/group"
chmod 0644 "$root/etc/passwd" "$root/etc/group" "$root/etc/ssl/certs/ca-certificates.crt"
chmod 1777 "$root/tmp"
chmod 0755 "$root/data"
tar --sort=name --mtime="@$epoch" --numeric-owner --owner=0 --group=0 \
  --transform='s,^\./,,' -C "$root" -cf "$work/base-root.tar" ./etc ./tmp
tar --sort=name --mtime="@$epoch" --numeric-owner --owner=65532 --group=65532 \
  --transform='s,^\./,,' -C "$root" -cf "$work/base-nonroot.tar" ./data
"$crane" append --oci-empty-base -f "$work/base-root.tar" -f "$work/base-nonroot.tar" -t "$reg/base:layers" >/dev/null
for arch in amd64 arm64; do
  "$crane" mutate "$reg/base:layers" --set-platform "linux/$arch" --user 65532:65532 -t "$reg/base:$arch" >/dev/null
done
"$crane" index append -m "$reg/base:amd64" -m "$reg/base:arm64" -t "$reg/base:latest" >/dev/null

# ko's configuration: .goreleaser.yaml's builds (flags, ldflags, env).
cat > "$work/.ko.yaml" <<KO
defaultBaseImage: $reg/base:latest
defaultPlatforms: [linux/amd64, linux/arm64]
builds:
  - id: verdictbot
    main: ./cmd/verdictbot
    env: [CGO_ENABLED=0]
    flags: [-trimpath]
    ldflags:
      - -s -w
      - -X main.version=$version
      - -X main.commit=$short_commit
      - -X main.date=$date
KO

# The labels of .goreleaser.yaml's kos (deploy/deploy_release_test.go
# compares the two lists).
labels=(
  "org.opencontainers.image.title=verdictbot"
  "org.opencontainers.image.description=Slack app that scans shared links and files and answers with a verdict card"
  "org.opencontainers.image.source=https://github.com/verdictbot/verdictbot"
  "org.opencontainers.image.version=$version"
  "org.opencontainers.image.revision=$full_commit"
  "org.opencontainers.image.created=$date"
  "org.opencontainers.image.licenses=NOASSERTION"
)
label_flags=()
for l in "${labels[@]}"; do label_flags+=(--image-label "$l"); done

KO_CONFIG_PATH="$work" KO_DOCKER_REPO=ghcr.io/verdictbot/verdictbot \
SOURCE_DATE_EPOCH="$epoch" KO_DATA_DATE_EPOCH="$epoch" \
  "$ko" build ./cmd/verdictbot --bare --push=false --sbom=none \
    --tags "$version" --image-user 65532:65532 "${label_flags[@]}" \
    --oci-layout-path "$layout" >"$work/ko.out"

out="$dist/verdictbot_${version}_image.oci.tar"
tar --sort=name --mtime="@$epoch" --numeric-owner --owner=0 --group=0 -C "$layout" -cf "$out" .
rm -rf "$layout"
echo "snapshot-image: $out ($(cat "$work/ko.out"))"
