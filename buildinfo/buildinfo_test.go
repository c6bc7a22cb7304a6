package buildinfo

import (
	"runtime"
	"testing"
)

func TestString(t *testing.T) {
	for _, tc := range []struct {
		in   Info
		want string
	}{
		{Info{Version: "v0.3.0", Revision: "0123abc", Time: "2026-11-24T19:59:40Z", Go: "go1.26.8", Platform: "linux/amd64"},
			"shoal v0.3.0 revision 0123abc of 2026-11-24T19:59:40Z, go1.26.8 linux/amd64"},
		{Info{Version: "(devel)", Revision: "0123abc", Time: "2026-11-24T19:59:40Z", Dirty: true, Go: "go1.26.8", Platform: "linux/arm64"},
			"shoal (devel) revision 0123abc (modified) of 2026-11-24T19:59:40Z, go1.26.8 linux/arm64"},
		{Info{Version: "unknown", Revision: "unknown", Time: "unknown", Go: "go1.26.8", Platform: "linux/amd64"},
			"shoal unknown revision unknown, go1.26.8 linux/amd64"},
	} {
		if got := tc.in.String(); got != tc.want {
			t.Errorf("got  %q\nwant %q", got, tc.want)
		}
	}
}

// TestReadInTest: a test binary carries the toolchain's Go version and
// platform; go test stamps no VCS revision.
func TestReadInTest(t *testing.T) {
	in := Read()
	if in.Go != runtime.Version() || in.Platform != runtime.GOOS+"/"+runtime.GOARCH {
		t.Errorf("%+v, want Go %s on %s/%s", in, runtime.Version(), runtime.GOOS, runtime.GOARCH)
	}
	if in.Revision == "" || in.Version == "" || in.Time == "" {
		t.Errorf("empty fields in %+v: want a value or \"unknown\"", in)
	}
}
