// Package buildinfo reports what binary is running: the module version, the
// VCS revision it was built from and whether the tree was modified, and the
// Go version, as the Go toolchain stamps them (runtime/debug.ReadBuildInfo).
package buildinfo

import (
	"runtime"
	"runtime/debug"
)

// Info describes the running binary. Fields the toolchain did not stamp
// read "unknown": `go run`, `go test` and builds with -buildvcs=false carry
// no VCS revision.
type Info struct {
	Version  string // module version: a tag for `go install ...@vX`, "(devel)" for a local build
	Revision string // VCS commit
	Time     string // commit time, RFC 3339
	Dirty    bool   // the work tree had uncommitted changes
	Go       string // Go version that built the binary
	Platform string // GOOS/GOARCH
}

// Read returns the running binary's build information.
func Read() Info {
	in := Info{Version: "unknown", Revision: "unknown", Time: "unknown", Go: runtime.Version(),
		Platform: runtime.GOOS + "/" + runtime.GOARCH}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return in
	}
	if v := bi.Main.Version; v != "" {
		in.Version = v
	}
	if bi.GoVersion != "" {
		in.Go = bi.GoVersion
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			in.Revision = s.Value
		case "vcs.time":
			in.Time = s.Value
		case "vcs.modified":
			in.Dirty = s.Value == "true"
		}
	}
	return in
}

// String is the one-line form `shoal version` prints, e.g.
// "shoal (devel) revision 0123abc (modified) of 2026-11-24T19:59:40Z, go1.26.8 linux/amd64".
func (in Info) String() string {
	s := "shoal " + in.Version + " revision " + in.Revision
	if in.Dirty {
		s += " (modified)"
	}
	if in.Time != "unknown" {
		s += " of " + in.Time
	}
	return s + ", " + in.Go + " " + in.Platform
}
