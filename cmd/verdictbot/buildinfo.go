package main

import (
	"cmp"
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
)

// Set by the linker from a release build: -X main.version=… -X
// main.commit=… -X main.date=… (.goreleaser.yaml's builds.ldflags; the
// Makefile's LDFLAGS and the Dockerfile set the same names). Empty in a
// plain `go build`, `go run` or `go install`; currentBuild then falls
// back to what the Go toolchain recorded in the binary.
var (
	version string
	commit  string
	date    string
)

// build is what `verdictbot version` prints and the logs and events carry:
// where the running binary comes from.
type build struct {
	// Version is the release's version (v1.2.3, or a snapshot's
	// 1.2.4-SNAPSHOT-abc1234), the module version `go install
	// …@v1.2.3` recorded, or "dev".
	Version string
	// Commit is the git commit it was built from (with "-dirty" when the
	// VCS data says the tree had changes), or "unknown".
	Commit string
	// Date is when it was built (a release: RFC 3339, UTC) or, failing
	// that, the commit's time; "unknown" when neither is known.
	Date string
	// Go is the toolchain and the platform: go1.26.8 linux/amd64.
	Go string
}

// String is the line `verdictbot version` prints.
func (b build) String() string {
	return fmt.Sprintf("verdictbot %s (commit %s, built %s, %s)", b.Version, b.Commit, b.Date, b.Go)
}

// currentBuild describes the running binary: the linker's values where a
// release set them, else the build information the Go toolchain embeds
// (the module version for `go install …@version`; vcs.revision,
// vcs.modified and vcs.time when built in a git checkout without
// -buildvcs=false), else "dev" and "unknown".
func currentBuild() build {
	info, _ := debug.ReadBuildInfo()
	return resolveBuild(version, commit, date, info)
}

// resolveBuild is currentBuild with its inputs given, for tests. info may
// be nil (a binary built without module support).
func resolveBuild(version, commit, date string, info *debug.BuildInfo) build {
	b := build{Version: version, Commit: commit, Date: date, Go: runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH}
	if info != nil {
		// go install example.com/mod/cmd/x@v1.2.3 records v1.2.3; a build
		// in the module's own tree records "(devel)" (or, since Go 1.24,
		// a pseudo-version derived from the VCS, which names the commit).
		if v := info.Main.Version; b.Version == "" && v != "" && v != "(devel)" {
			b.Version = v
		}
		vcs := map[string]string{}
		for _, s := range info.Settings {
			if strings.HasPrefix(s.Key, "vcs.") {
				vcs[s.Key] = s.Value
			}
		}
		if rev := vcs["vcs.revision"]; b.Commit == "" && rev != "" {
			b.Commit = rev[:min(len(rev), 12)]
			if vcs["vcs.modified"] == "true" {
				b.Commit += "-dirty"
			}
		}
		if b.Date == "" {
			b.Date = vcs["vcs.time"]
		}
		if info.GoVersion != "" {
			b.Go = info.GoVersion + " " + runtime.GOOS + "/" + runtime.GOARCH
		}
	}
	b.Version = cmp.Or(b.Version, "dev")
	b.Commit = cmp.Or(b.Commit, "unknown")
	b.Date = cmp.Or(b.Date, "unknown")
	return b
}
