package workload

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// specFile is the shape of the testdata files: a list of sources as a scenario would hold them.
type specFile struct {
	Sources []struct {
		Arrivals ProcessSpec `yaml:"arrivals"`
		Demand   DistSpec    `yaml:"demand"`
	} `yaml:"sources"`
}

// decodeStrict decodes with unknown fields rejected, as the scenario loader does.
func decodeStrict(b []byte, out any) error {
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	return dec.Decode(out)
}

// directives returns the values of the "# key: value" comment lines of a testdata file.
func directives(b []byte, key string) []string {
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "# "+key+": "); ok {
			out = append(out, v)
		}
	}
	return out
}

// loadSpecs decodes, validates and builds every source of a testdata file with field paths.
func loadSpecs(b []byte, c *Traces) ([]Process, []Dist, error, error) {
	var f specFile
	if err := decodeStrict(b, &f); err != nil {
		return nil, nil, err, nil
	}
	var errs []error
	for i := range f.Sources {
		errs = append(errs, f.Sources[i].Arrivals.Validate(fmt.Sprintf("sources[%d].arrivals", i)))
		errs = append(errs, f.Sources[i].Demand.Validate(fmt.Sprintf("sources[%d].demand", i)))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, nil, err, nil
	}
	var ps []Process
	var ds []Dist
	for i, s := range f.Sources {
		p, err := s.Arrivals.BuildWith(0, c)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("sources[%d]: %w", i, err)
		}
		d, err := s.Demand.BuildWith(c)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("sources[%d]: %w", i, err)
		}
		ps = append(ps, p)
		ds = append(ds, d)
	}
	return ps, ds, nil, nil
}

func TestSpecTestdataGood(t *testing.T) {
	files, _ := filepath.Glob("testdata/good/*.yaml")
	if len(files) == 0 {
		t.Fatal("no testdata/good files")
	}
	c := sharedTraces
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			b, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			ps, ds, verr, berr := loadSpecs(b, c)
			if verr != nil || berr != nil {
				t.Fatalf("decode/validate: %v; build: %v", verr, berr)
			}
			check := func(key string, got float64) {
				for _, w := range directives(b, key) {
					want, err := strconv.ParseFloat(w, 64)
					if err != nil {
						t.Fatalf("bad directive %s: %q", key, w)
					}
					if math.Abs(got-want) > 1e-9*math.Max(1, want) {
						t.Errorf("%s = %v, want %v", key, got, want)
					}
				}
			}
			check("mean_rate", ps[0].MeanRate())
			check("demand_mean", ds[0].Mean())
			for i, p := range ps {
				rng := newRNG(uint64(i))
				if _, ok := p.Next(0, rng); !ok {
					t.Errorf("source %d produces no arrival", i)
				}
				if x := ds[i].Sample(rng); !(x >= 0) {
					t.Errorf("source %d demand sample %v", i, x)
				}
			}
		})
	}
}

func TestSpecTestdataBad(t *testing.T) {
	files, _ := filepath.Glob("testdata/bad/*.yaml")
	if len(files) == 0 {
		t.Fatal("no testdata/bad files")
	}
	c := sharedTraces
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			b, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			want, wantBuild := directives(b, "want"), directives(b, "build_error")
			if len(want)+len(wantBuild) == 0 {
				t.Fatal("bad file without a want or build_error directive")
			}
			_, _, verr, berr := loadSpecs(b, c)
			if len(want) > 0 {
				if verr == nil {
					t.Fatalf("decode/validate passed, want errors %q", want)
				}
				for _, w := range want {
					if !strings.Contains(verr.Error(), w) {
						t.Errorf("error %q\nlacks %q", verr, w)
					}
				}
				return
			}
			if verr != nil {
				t.Fatalf("decode/validate: %v, want it to pass and Build to fail", verr)
			}
			if berr == nil {
				t.Fatalf("build passed, want errors %q", wantBuild)
			}
			for _, w := range wantBuild {
				if !strings.Contains(berr.Error(), w) {
					t.Errorf("build error %q\nlacks %q", berr, w)
				}
			}
		})
	}
}

func TestSpecBuildRescales(t *testing.T) {
	c := sharedTraces
	specs := []ProcessSpec{
		{Kind: KindPoisson, Rate: 3},
		{Kind: KindDiurnal, Rate: 3, Amplitude: 0.5},
		{Kind: KindMMPP, States: []MMPPState{{Rate: 1, Dwell: 1e9}, {Rate: 5, Dwell: 1e9}}},
		{Kind: KindTrace, Trace: FormatWikipedia},
		{Kind: KindTrace, Trace: FormatAzureLLM, Loop: true},
		{Kind: KindTrace, Trace: FormatNASA, Scale: 2},
	}
	for _, s := range specs {
		p, err := s.BuildWith(123, c)
		if err != nil {
			t.Fatalf("%s: %v", s.Kind, err)
		}
		if math.Abs(p.MeanRate()-123) > 1e-9 {
			t.Errorf("%s %s: MeanRate = %v after Build(123)", s.Kind, s.Trace, p.MeanRate())
		}
	}
	// Without a load level the spec's own rate holds: Wikipedia's mean hourly sum_req / 3600.
	p, err := ProcessSpec{Kind: KindTrace, Trace: FormatWikipedia}.BuildWith(0, c)
	if err != nil {
		t.Fatal(err)
	}
	tr, _ := c.Load(FormatWikipedia, "")
	sum := 0.0
	for _, h := range tr.Wikipedia {
		sum += h.SumReq
	}
	if want := sum / 744 / 3600; math.Abs(p.MeanRate()/want-1) > 1e-12 {
		t.Errorf("wikipedia MeanRate = %v, want %v", p.MeanRate(), want)
	}
	if _, err := (ProcessSpec{Kind: KindPoisson, Rate: 1}).Build(-1); err == nil {
		t.Error("negative load level: want an error")
	}
}

func TestValidateWithoutPath(t *testing.T) {
	err := (&ProcessSpec{Kind: KindPoisson}).Validate("")
	if err == nil || !strings.HasPrefix(err.Error(), "rate: must be > 0") {
		t.Errorf("got %v, want an error starting with the bare field name", err)
	}
	if err := (&DistSpec{}).Validate("x"); err == nil || !strings.Contains(err.Error(), "x.dist: must be set") {
		t.Errorf("got %v, want x.dist: must be set", err)
	}
}
