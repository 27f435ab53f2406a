package deploy_test

// Checks of the release configuration (.goreleaser.yaml) and of the
// script that builds its image offline (scripts/snapshot-image.sh):
// goreleaser check validates the file's syntax (CI runs it); these check
// what it cannot know: the platforms and static build issue 27 asks for,
// that the archives' files exist, that the image carries the OCI labels,
// and that the snapshot image gets the same labels as the release's.

import (
	"maps"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

const (
	goreleaserFile    = repoRoot + ".goreleaser.yaml"
	snapshotImageFile = repoRoot + "scripts/snapshot-image.sh"
)

// goreleaserConfig is the part of GoReleaser v2's configuration the tests
// read.
type goreleaserConfig struct {
	Version int `yaml:"version"`
	Builds  []struct {
		ID      string   `yaml:"id"`
		Main    string   `yaml:"main"`
		Env     []string `yaml:"env"`
		Goos    []string `yaml:"goos"`
		Goarch  []string `yaml:"goarch"`
		Flags   []string `yaml:"flags"`
		Ldflags []string `yaml:"ldflags"`
	} `yaml:"builds"`
	Archives []struct {
		Formats []string `yaml:"formats"`
		Files   []string `yaml:"files"`
	} `yaml:"archives"`
	SBOMs []struct {
		Cmd       string   `yaml:"cmd"`
		Artifacts string   `yaml:"artifacts"`
		Args      []string `yaml:"args"`
	} `yaml:"sboms"`
	Checksum struct {
		NameTemplate string `yaml:"name_template"`
		Algorithm    string `yaml:"algorithm"`
	} `yaml:"checksum"`
	Kos []struct {
		Build     string            `yaml:"build"`
		BaseImage string            `yaml:"base_image"`
		User      string            `yaml:"user"`
		Platforms []string          `yaml:"platforms"`
		Labels    map[string]string `yaml:"labels"`
	} `yaml:"kos"`
}

// ociLabels are the annotations of the OCI image spec's
// annotations.md ("Pre-Defined Annotation Keys") issue 27 asks for.
var ociLabels = []string{"title", "description", "source", "version", "revision", "created", "licenses"}

// TestReleaseConfig: static binaries for linux and darwin on amd64 and
// arm64 with the version ldflags, tar.gz archives whose extra files
// exist, a CycloneDX SBOM per binary, sha256 checksums, and a
// multi-platform image as a numeric non-root user with every OCI label.
func TestReleaseConfig(t *testing.T) {
	t.Parallel()
	var c goreleaserConfig
	if err := yaml.Unmarshal(readFile(t, goreleaserFile), &c); err != nil {
		t.Fatal(err)
	}
	if c.Version != 2 {
		t.Errorf("version %d, want 2 (GoReleaser v2)", c.Version)
	}
	if len(c.Builds) != 1 {
		t.Fatalf("%d builds, want 1", len(c.Builds))
	}
	b := c.Builds[0]
	if !slices.Equal(sorted(b.Goos), []string{"darwin", "linux"}) || !slices.Equal(sorted(b.Goarch), []string{"amd64", "arm64"}) {
		t.Errorf("platforms %v × %v, want darwin, linux × amd64, arm64", b.Goos, b.Goarch)
	}
	if !slices.Contains(b.Env, "CGO_ENABLED=0") || !slices.Contains(b.Flags, "-trimpath") {
		t.Errorf("env %v, flags %v: want CGO_ENABLED=0 (static) and -trimpath", b.Env, b.Flags)
	}
	ld := strings.Join(b.Ldflags, " ")
	for _, v := range []string{"main.version", "main.commit", "main.date"} {
		if !strings.Contains(ld, "-X "+v+"=") {
			t.Errorf("ldflags %q do not set %s", ld, v)
		}
	}
	for _, a := range c.Archives {
		if !slices.Equal(a.Formats, []string{"tar.gz"}) {
			t.Errorf("archive formats %v, want tar.gz", a.Formats)
		}
		for _, f := range a.Files {
			if m, err := filepath.Glob(repoRoot + f); err != nil || len(m) == 0 {
				t.Errorf("archive file %s matches nothing", f)
			}
		}
	}
	if len(c.SBOMs) != 1 || c.SBOMs[0].Cmd != "cyclonedx-gomod" || c.SBOMs[0].Artifacts != "binary" || !slices.Contains(c.SBOMs[0].Args, "$artifact") {
		t.Errorf("sboms %+v, want cyclonedx-gomod over each binary", c.SBOMs)
	}
	if c.Checksum.Algorithm != "sha256" || c.Checksum.NameTemplate == "" {
		t.Errorf("checksum %+v", c.Checksum)
	}
	if len(c.Kos) != 1 {
		t.Fatalf("%d kos, want 1", len(c.Kos))
	}
	ko := c.Kos[0]
	if ko.Build != b.ID {
		t.Errorf("kos build %q, want the build %q (the same ldflags)", ko.Build, b.ID)
	}
	if ko.BaseImage == "" || !regexp.MustCompile(`^\d+:\d+$`).MatchString(ko.User) || ko.User == "0:0" {
		t.Errorf("kos base_image %q, user %q: want a base and a numeric non-root user (runAsNonRoot checks it)", ko.BaseImage, ko.User)
	}
	if !slices.Equal(sorted(ko.Platforms), []string{"linux/amd64", "linux/arm64"}) {
		t.Errorf("kos platforms %v", ko.Platforms)
	}
	for _, l := range ociLabels {
		if ko.Labels["org.opencontainers.image."+l] == "" {
			t.Errorf("kos labels lack org.opencontainers.image.%s", l)
		}
	}
}

// TestReleaseSnapshotImageLabels: scripts/snapshot-image.sh labels the
// snapshot image as .goreleaser.yaml's kos labels the release's, with
// GoReleaser's templates replaced by the script's variables.
func TestReleaseSnapshotImageLabels(t *testing.T) {
	t.Parallel()
	var c goreleaserConfig
	if err := yaml.Unmarshal(readFile(t, goreleaserFile), &c); err != nil {
		t.Fatal(err)
	}
	if len(c.Kos) != 1 {
		t.Fatalf("%d kos, want 1", len(c.Kos))
	}
	vars := map[string]string{"{{ .Version }}": "$version", "{{ .FullCommit }}": "$full_commit", "{{ .Date }}": "$date"}
	want := map[string]string{}
	for k, v := range c.Kos[0].Labels {
		for tmpl, sh := range vars {
			v = strings.ReplaceAll(v, tmpl, sh)
		}
		if strings.Contains(v, "{{") {
			t.Errorf("label %s=%q: a template the script does not know", k, v)
		}
		want[k] = v
	}
	got := map[string]string{}
	for _, m := range regexp.MustCompile(`(?m)^\s*"(org\.opencontainers\.image\.[a-z]+)=([^"]*)"$`).FindAllStringSubmatch(string(readFile(t, snapshotImageFile)), -1) {
		got[m[1]] = m[2]
	}
	if !maps.Equal(got, want) {
		t.Errorf("scripts/snapshot-image.sh labels\n  %v\n.goreleaser.yaml kos labels\n  %v", got, want)
	}
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}
