package proxy

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/shoal-project/shoal/control/lb"
)

func TestGoodConfigs(t *testing.T) {
	files, _ := filepath.Glob("testdata/good/*.yaml")
	if len(files) < 3 {
		t.Fatalf("only %d good files", len(files))
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			if _, err := LoadConfig(f, lb.Classical().Names()); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestBadConfigsNameTheField(t *testing.T) {
	files, _ := filepath.Glob("testdata/bad/*.yaml")
	if len(files) < 15 {
		t.Fatalf("only %d bad files", len(files))
	}
	known := lb.Classical()
	delete(known, "oracle")
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			first, _, _ := strings.Cut(string(data), "\n")
			want, ok := strings.CutPrefix(first, "# want: ")
			if !ok {
				t.Fatal("first line must be '# want: ERROR SUBSTRING'")
			}
			_, err = LoadConfig(f, known.Names())
			if err == nil {
				t.Fatalf("no error, want %q", want)
			}
			if !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), f) {
				t.Fatalf("error %q does not name the file and %q", err, want)
			}
		})
	}
}

func TestDefaults(t *testing.T) {
	c, err := LoadConfig("testdata/good/minimal.yaml", lb.Classical().Names())
	if err != nil {
		t.Fatal(err)
	}
	if c.Listen != DefaultListen || c.Policy != DefaultPolicy || *c.Retries != DefaultRetries || c.Backends[0].Weight != 1 ||
		c.Timeouts.ReadHeader != DefaultReadHeader || c.Health.Failures != DefaultFailures || c.Health.Check != nil ||
		c.Admission != (lb.Admission{MaxRequests: lb.DefaultMaxRequests, MaxPending: lb.DefaultMaxPending, QueueTimeout: lb.DefaultQueueTimeout}) ||
		c.MaxConnections != DefaultMaxConnections {
		t.Fatalf("defaults not applied: %+v", c)
	}
	full, err := LoadConfig("testdata/good/full.yaml", lb.Classical().Names())
	if err != nil {
		t.Fatal(err)
	}
	if *full.Retries != 0 || full.Health.Check.Rise != 2 || full.Agent.Period != 500*time.Millisecond ||
		full.Admission != (lb.Admission{MaxRequests: 8, QueueTimeout: 250 * time.Millisecond}) || full.MaxConnections != 1000 {
		t.Fatalf("explicit values lost: %+v", full)
	}
}

// A policy's settings in its name join Params, as the registry reads them.
func TestSettingsInThePolicyName(t *testing.T) {
	c, err := LoadConfig("testdata/good/settings-in-name.yaml", lb.Classical().Names())
	if err != nil {
		t.Fatal(err)
	}
	if c.Policy != "prequal" || c.Params["qrif"] != 0.9 || c.Params["max_age"] != 0.5 {
		t.Errorf("policy %q, params %v; want prequal with qrif 0.9 and max_age 0.5", c.Policy, c.Params)
	}
}

// FuzzDecode: any input either decodes to a configuration that validates
// or gives an error naming the file; it never panics.
func FuzzDecode(f *testing.F) {
	files, _ := filepath.Glob("testdata/*/*.yaml")
	for _, name := range files {
		data, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	known := lb.Classical().Names()
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Decode(bytes.NewReader(data), "fuzz.yaml", known)
		if err != nil {
			if !strings.Contains(err.Error(), "fuzz.yaml") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		if err := c.Validate(known); err != nil {
			t.Fatalf("decoded config does not validate: %v", err)
		}
		if len(c.Backends) == 0 || c.Retries == nil {
			t.Fatalf("decoded config lacks backends or defaults: %+v", c)
		}
	})
}
