package scenario

import (
	"bytes"
	"embed"
	"fmt"
	"io/fs"
	"slices"
	"strings"
)

//go:embed embedded/*.yaml
var embedded embed.FS

// Info names and describes an embedded scenario.
type Info struct {
	Name        string
	Description string
}

// List returns the embedded scenarios, sorted by name.
func List() ([]Info, error) {
	names, err := fs.Glob(embedded, "embedded/*.yaml")
	if err != nil {
		return nil, err
	}
	slices.Sort(names)
	var out []Info
	for _, n := range names {
		name := strings.TrimSuffix(strings.TrimPrefix(n, "embedded/"), ".yaml")
		sc, err := Embedded(name)
		if err != nil {
			return nil, err
		}
		out = append(out, Info{Name: sc.Name, Description: sc.Description})
	}
	return out, nil
}

// Raw returns the file of an embedded scenario, comments included, for
// dumping, editing and running.
func Raw(name string) ([]byte, error) {
	b, err := embedded.ReadFile("embedded/" + name + ".yaml")
	if err != nil {
		var known []string
		if l, lerr := fs.Glob(embedded, "embedded/*.yaml"); lerr == nil {
			for _, n := range l {
				known = append(known, strings.TrimSuffix(strings.TrimPrefix(n, "embedded/"), ".yaml"))
			}
		}
		return nil, fmt.Errorf("no embedded scenario %q (known: %s)", name, strings.Join(known, ", "))
	}
	return b, nil
}

// Embedded decodes an embedded scenario.
func Embedded(name string) (*Scenario, error) {
	b, err := Raw(name)
	if err != nil {
		return nil, err
	}
	return Decode(bytes.NewReader(b), name+".yaml")
}

// Lookup resolves an argument of the command line: the name of an embedded
// scenario, or else the path of a scenario file.
func Lookup(arg string) (*Scenario, error) {
	if !strings.ContainsAny(arg, "/.") {
		return Embedded(arg)
	}
	return Load(arg)
}
