package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/shoal-project/shoal/control/lb"
	"github.com/shoal-project/shoal/experiment"
	"github.com/shoal-project/shoal/experiment/report"
	"github.com/shoal-project/shoal/scenario"
	"github.com/shoal-project/shoal/workload"
	"go.yaml.in/yaml/v3"
)

func cmdSim(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("sim", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	policy := fs.String("policy", "", "")
	seeds := fs.Int("seeds", 0, "")
	seed := fs.Uint64("seed", 0, "")
	load := fs.Float64("load", 0, "")
	horizon := fs.Duration("horizon", 0, "")
	out := fs.String("out", "", "")
	asJSON := fs.Bool("json", false, "")
	workers := fs.Int("workers", 0, "")
	quiet := fs.Bool("quiet", false, "")
	arrivals := fs.String("arrivals", "", "")
	slo := fs.Duration("slo", 0, "")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return fmt.Errorf("sim: want one scenario (a name from 'shoal scenarios' or a file), got %d: %w", len(pos), errUsage)
	}
	sc, err := scenario.Lookup(pos[0])
	if err != nil {
		return err
	}
	if *seeds < 0 || *workers < 0 || *horizon < 0 {
		return fmt.Errorf("sim: --seeds, --workers and --horizon must not be negative: %w", errUsage)
	}
	if *seed != 0 {
		sc.Seed = *seed
	}
	if *horizon > 0 {
		sc.SetHorizon(*horizon)
	}
	if *load != 0 && *arrivals != "" {
		return fmt.Errorf("sim: --load and --arrivals both set the arrivals; give one: %w", errUsage)
	}
	if *load != 0 {
		if err := sc.SetLoad(*load); err != nil {
			return fmt.Errorf("sim --load: %w", err)
		}
	}
	if *arrivals != "" {
		spec, err := parseArrivals(*arrivals)
		if err == nil {
			err = sc.SetArrivals(spec)
		}
		if err != nil {
			return fmt.Errorf("sim --arrivals: %w", err)
		}
	}
	if *slo < 0 {
		return fmt.Errorf("sim: --slo must not be negative: %w", errUsage)
	}
	if *slo > 0 {
		sc.SetSLO(*slo)
	}
	if err := sc.Validate(); err != nil {
		return fmt.Errorf("sim: %w", err)
	}
	cmp := experiment.Comparison{
		Scenario:  sc,
		Seeds:     *seeds,
		Selectors: lb.Classical(),
		Workers:   *workers,
	}
	if *policy != "" {
		cmp.Policies, cmp.Learned, err = learnedPolicies(strings.Split(*policy, ","))
		if err != nil {
			return fmt.Errorf("sim: %w", err)
		}
	}
	if !*quiet && isTerminal(os.Stderr) && stderr == os.Stderr {
		bar := newProgressBar(stderr)
		cmp.Progress = bar.update
		defer bar.done()
	}
	res, err := cmp.Run(ctx)
	if err != nil {
		return err
	}
	if *asJSON {
		err = res.WriteJSON(stdout)
	} else {
		err = res.WriteTable(stdout)
	}
	if err != nil {
		return err
	}
	if *out != "" {
		meta := []report.KV{{Key: "command", Value: "shoal " + strings.Join(args0(args), " ")}}
		if err := res.WriteFiles(*out, meta); err != nil {
			return err
		}
		if !*asJSON {
			fmt.Fprintf(stdout, "wrote %s/{results.json,runs.csv,summary.csv,classes.csv,scaling.csv,report.html}\n", strings.TrimSuffix(*out, "/"))
		}
	}
	return nil
}

// args0 is the sim command line as given, for the report.
func args0(args []string) []string { return append([]string{"sim"}, args...) }

func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// progressBar draws a progress bar on a terminal, at most every 100 ms.
type progressBar struct {
	mu    sync.Mutex
	w     io.Writer
	start time.Time
	last  time.Time
}

func newProgressBar(w io.Writer) *progressBar {
	return &progressBar{w: w, start: time.Now()}
}

func (b *progressBar) update(done float64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := time.Now()
	if now.Sub(b.last) < 100*time.Millisecond && done < 1 {
		return
	}
	b.last = now
	const width = 30
	n := int(done * width)
	eta := ""
	if el := now.Sub(b.start); done > 0.02 && done < 1 {
		eta = fmt.Sprintf(" eta %s", (time.Duration(float64(el)/done) - el).Round(time.Second))
	}
	fmt.Fprintf(b.w, "\r[%s%s] %3.0f%%%s   ", strings.Repeat("#", n), strings.Repeat(" ", width-n), 100*done, eta)
}

func (b *progressBar) done() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.last.IsZero() {
		fmt.Fprint(b.w, "\r\033[K")
	}
}

// parseArrivals reads an arrival process given as YAML, strictly, e.g.
// '{kind: trace, trace: nasa, rate: 200, speedup: 60}'.
func parseArrivals(text string) (workload.ProcessSpec, error) {
	var spec workload.ProcessSpec
	dec := yaml.NewDecoder(strings.NewReader(text))
	dec.KnownFields(true)
	if err := dec.Decode(&spec); err != nil {
		return spec, fmt.Errorf("want an arrival process in YAML, like '{kind: trace, trace: nasa, rate: 200}': %s", strings.TrimPrefix(err.Error(), "yaml: "))
	}
	return spec, nil
}
