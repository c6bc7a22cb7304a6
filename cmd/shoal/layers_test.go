package main

import (
	"os/exec"
	"strings"
	"testing"
)

// floors are the layers of docs/DESIGN.md, bottom up, by package path
// prefix below the module. The longest prefix decides.
var floors = map[string]int{
	"sim": 1, "metrics": 1, "workload": 1, "learn": 1, "buildinfo": 1, "store": 1, "containertest": 1,
	"control": 2, "backend": 2, "loadgen": 2,
	"cluster": 3, "proxy": 3, "edge": 3, "kube": 3, "prom": 3,
	"scenario": 4, "operator": 4, "record": 4,
	"envs":       5,
	"experiment": 6, "sweep": 6,
	"cmd": 7, "bench": 7,
}

func floorOf(t *testing.T, pkg string) int {
	rel := strings.TrimPrefix(strings.TrimPrefix(pkg, "github.com/shoal-project/shoal"), "/")
	best, floor := -1, 0
	for prefix, f := range floors {
		if (rel == prefix || strings.HasPrefix(rel, prefix+"/")) && len(prefix) > best {
			best, floor = len(prefix), f
		}
	}
	if best < 0 {
		t.Errorf("package %s is on no floor of docs/DESIGN.md (add it to floors and to the design)", pkg)
	}
	return floor
}

// TestNoImportRunsUpward: every import of the module's own packages points
// to the same floor or a lower one, as docs/DESIGN.md draws the layers.
func TestNoImportRunsUpward(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .Imports " "}}`, repoRoot+"/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	const module = "github.com/shoal-project/shoal"
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		from := floorOf(t, f[0])
		for _, imp := range f[1:] {
			if !strings.HasPrefix(imp, module+"/") {
				continue
			}
			if to := floorOf(t, imp); to > from {
				t.Errorf("%s (floor %d) imports %s (floor %d): an import that runs upward", f[0], from, imp, to)
			}
		}
	}
}
