// Package releasecheck checks .goreleaser.yaml with GoReleaser's own
// configuration loader (github.com/goreleaser/goreleaser/v2/pkg/config, the
// version the Makefile pins): every key must be one GoReleaser knows (the
// loader is strict) and the fields the release relies on must be there.
// It is the part of `goreleaser check` that can run on a fresh machine in
// seconds: installing goreleaser compiles it for minutes, too long for CI
// (make release-check runs the real `goreleaser check`). It lives in a
// module of its own so that GoReleaser's dependencies stay out of the
// bot's go.mod.
package releasecheck

import (
	"slices"
	"testing"

	"github.com/goreleaser/goreleaser/v2/pkg/config"
)

func TestGoReleaserConfigLoads(t *testing.T) {
	p, err := config.Load("../../.goreleaser.yaml")
	if err != nil {
		t.Fatalf(".goreleaser.yaml: %v", err)
	}
	if p.Version != 2 {
		t.Errorf("version %d, want 2", p.Version)
	}
	if len(p.Builds) != 1 {
		t.Fatalf("%d builds, want 1", len(p.Builds))
	}
	b := p.Builds[0]
	for _, goos := range []string{"linux", "darwin"} {
		if !slices.Contains(b.Goos, goos) {
			t.Errorf("builds for %v, want %s", b.Goos, goos)
		}
	}
	for _, arch := range []string{"amd64", "arm64"} {
		if !slices.Contains(b.Goarch, arch) {
			t.Errorf("builds for %v, want %s", b.Goarch, arch)
		}
	}
	if !slices.Contains(b.Env, "CGO_ENABLED=0") {
		t.Errorf("build env %v: want CGO_ENABLED=0 (static binaries)", b.Env)
	}
	if len(p.SBOMs) == 0 || len(p.Kos) == 0 || p.Checksum.Disable {
		t.Errorf("sboms %d, kos %d, checksum disabled %v: want SBOMs, an image and checksums", len(p.SBOMs), len(p.Kos), p.Checksum.Disable)
	}
	for _, l := range []string{"org.opencontainers.image.source", "org.opencontainers.image.version", "org.opencontainers.image.revision",
		"org.opencontainers.image.created", "org.opencontainers.image.title", "org.opencontainers.image.description", "org.opencontainers.image.licenses"} {
		if _, ok := p.Kos[0].Labels[l]; !ok {
			t.Errorf("the image lacks the label %s", l)
		}
	}
}
