package scenario

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"go.yaml.in/yaml/v3"
)

// maxBaseDepth bounds a chain of bases (and so catches cycles).
const maxBaseDepth = 8

// withBase resolves a scenario file's base: the text of the base scenario
// (an embedded name, or a path relative to the file's folder) with the
// file's top-level fields in place of the base's. Files without a base, and
// files that do not parse, come back as they are, for the strict decoder to
// judge.
func withBase(data []byte, name string, depth int) ([]byte, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil || len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		return data, nil
	}
	top := doc.Content[0]
	base := ""
	for i := 0; i+1 < len(top.Content); i += 2 {
		if top.Content[i].Value == "base" {
			base = top.Content[i+1].Value
		}
	}
	if base == "" {
		return data, nil
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return nil, errors.New("more than one YAML document")
	}
	if depth >= maxBaseDepth {
		return nil, fmt.Errorf("base: more than %d bases in a row (a cycle?)", maxBaseDepth)
	}
	raw, file, err := readBase(base, name)
	if err != nil {
		return nil, fmt.Errorf("base: %w", err)
	}
	if raw, err = withBase(raw, file, depth+1); err != nil {
		return nil, fmt.Errorf("base %s: %w", base, err)
	}
	var bdoc yaml.Node
	if err := yaml.Unmarshal(raw, &bdoc); err != nil || len(bdoc.Content) == 0 || bdoc.Content[0].Kind != yaml.MappingNode {
		return nil, fmt.Errorf("base %s: not a scenario (%v)", base, err)
	}
	btop := bdoc.Content[0]
	for i := 0; i+1 < len(top.Content); i += 2 {
		k, v := top.Content[i], top.Content[i+1]
		j := 0
		for j < len(btop.Content) && btop.Content[j].Value != k.Value {
			j += 2
		}
		if j < len(btop.Content) {
			btop.Content[j+1] = v
		} else {
			btop.Content = append(btop.Content, k, v)
		}
	}
	return yaml.Marshal(&bdoc)
}

// readBase reads the scenario a file called name builds on: an embedded
// scenario, or a file relative to name's folder.
func readBase(base, name string) ([]byte, string, error) {
	if !strings.ContainsAny(base, "/.") {
		raw, err := Raw(base)
		return raw, base + ".yaml", err
	}
	path := filepath.Join(filepath.Dir(name), base)
	raw, err := os.ReadFile(path)
	return raw, path, err
}
