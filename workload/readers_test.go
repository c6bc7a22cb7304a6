package workload

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// loadEmbedded loads an embedded trace through a shared catalog.
func loadEmbedded(t testing.TB, c *Traces, name string) *Trace {
	t.Helper()
	tr, err := c.Load(name, "")
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// The numbers below are those stated in traces/SOURCES.md.
func TestRealTracesMatchSources(t *testing.T) {
	c := NewTraces("")
	t.Run("nasa", func(t *testing.T) {
		s := loadEmbedded(t, c, FormatNASA).NASA
		if s.Len() != 5059950 || s.Step != time.Second {
			t.Fatalf("%d values with step %v, want 5,059,950 at 1s", s.Len(), s.Step)
		}
		sum, max := 0.0, 0.0
		run, longest, longestEnd := 0, 0, 0
		for i, v := range s.Values {
			sum += v
			max = math.Max(max, v)
			if v == 0 {
				run++
				if run > longest {
					longest, longestEnd = run, i
				}
			} else {
				run = 0
			}
		}
		if sum != 3461610 || max != 20 {
			t.Errorf("sum %v max %v, want 3,461,610 and 20", sum, max)
		}
		// Hurricane Erin outage 08-01 14:52 to 08-03 04:36 (37 h 44 min = 135,840 s) appears as
		// the longest zero run, a little after the July part (~27.6 days = 2.38M s).
		if longest < 135000 || longest > 137000 {
			t.Errorf("longest zero run %d s, want about 135,840 s (the outage)", longest)
		}
		if start := longestEnd - longest + 1; start < 2380000 || start > 2480000 {
			t.Errorf("outage starts at second %d, want early August (about 2.43M)", start)
		}
	})
	t.Run("wikipedia", func(t *testing.T) {
		h := loadEmbedded(t, c, FormatWikipedia).Wikipedia
		if len(h) != 744 {
			t.Fatalf("%d hours, want 744", len(h))
		}
		if h[0].Unix != time.Date(2016, 1, 1, 0, 0, 0, 0, time.UTC).Unix() || h[743].Unix != time.Date(2016, 1, 31, 23, 0, 0, 0, time.UTC).Unix() {
			t.Errorf("hours from %v to %v, want 2016-01-01 00:00 to 01-31 23:00 UTC", time.Unix(h[0].Unix, 0).UTC(), time.Unix(h[743].Unix, 0).UTC())
		}
		lo, hi := math.Inf(1), 0.0
		for i, r := range h {
			if i > 0 && r.Unix != h[i-1].Unix+3600 {
				t.Fatalf("row %d not sorted/consecutive: %d after %d", i, r.Unix, h[i-1].Unix)
			}
			lo, hi = math.Min(lo, r.SumReq), math.Max(hi, r.SumReq)
		}
		if lo < 2.75e6 || lo > 2.85e6 || hi < 10.45e6 || hi > 10.55e6 {
			t.Errorf("sum_req range [%.4g, %.4g], want about [2.8M, 10.5M]", lo, hi)
		}
		// The first row of the (unsorted) file is hour 1452441600 with sum_req 8159304.
		for _, r := range h {
			if r.Unix == 1452441600 && (r.SumReq != 8159304 || r.CountReq != 2400604 || r.MaxReq != 530053) {
				t.Errorf("hour 1452441600 = %+v, want sum_req 8159304, count_req 2400604, max_req 530053", r)
			}
		}
		s := WikipediaSeries(h)
		if s.Step != time.Hour || math.Abs(s.Values[0]-h[0].SumReq/3600) > 1e-9 {
			t.Errorf("series step %v value %v, want 1h and sum_req/3600", s.Step, s.Values[0])
		}
	})
	t.Run("alibaba", func(t *testing.T) {
		u := loadEmbedded(t, c, FormatAlibaba).Alibaba
		want := []string{"cpu_util_percent", "mem_util_percent", "net_in", "net_out", "disk_io_percent"}
		if u.Len() != 22415 || strings.Join(u.Names, ",") != strings.Join(want, ",") || u.Step != 30*time.Second {
			t.Fatalf("%d rows, columns %v, step %v; want 22,415 rows of %v at 30s", u.Len(), u.Names, u.Step, want)
		}
		for j, col := range u.Columns {
			for i, v := range col {
				if v < 0 || v > 100 {
					t.Fatalf("%s[%d] = %v, want within 0–100", u.Names[j], i, v)
				}
			}
		}
		if got := u.Columns[0][0]; math.Abs(got-16.126976521322472) > 1e-12 {
			t.Errorf("first cpu_util_percent %v, want 16.126976521322472", got)
		}
	})
	t.Run("azure-llm", func(t *testing.T) {
		r := loadEmbedded(t, c, FormatAzureLLM).Requests
		if r.Len() != 19366 {
			t.Fatalf("%d requests, want 19,366", r.Len())
		}
		if span := r.Span(); span < 57*time.Minute || span > 59*time.Minute {
			t.Errorf("span %v, want ~58 min", span)
		}
		if want := time.Date(2023, 11, 16, 18, 15, 46, 680590000, time.UTC); !r.Start.Equal(want) {
			t.Errorf("start %v, want %v", r.Start, want)
		}
		// 18:15:50.9951690 − 18:15:46.6805900: 7-digit fractions kept to 100 ns.
		if r.At[0] != 0 || r.At[1] != 4314579000*time.Nanosecond {
			t.Errorf("first instants %v %v, want 0 and 4.314579s", r.At[0], r.At[1])
		}
		if r.Context[0] != 374 || r.Generated[0] != 44 || r.Context[r.Len()-1] != 197 || r.Generated[r.Len()-1] != 183 {
			t.Errorf("tokens of first/last request %v/%v and %v/%v, want 374/44 and 197/183",
				r.Context[0], r.Generated[0], r.Context[r.Len()-1], r.Generated[r.Len()-1])
		}
	})
	t.Run("SOURCES.md", func(t *testing.T) {
		f, err := OpenEmbedded("SOURCES.md")
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		b, _ := io.ReadAll(f)
		if !bytes.Contains(b, []byte("CC-BY 4.0")) {
			t.Error("embedded SOURCES.md lacks the license terms")
		}
	})
}

func TestAzureReplayIsTheRecording(t *testing.T) {
	c := sharedTraces
	spec := ProcessSpec{Kind: KindTrace, Trace: FormatAzureLLM, Speedup: 4}
	p, err := spec.BuildWith(0, c)
	if err != nil {
		t.Fatal(err)
	}
	rec := loadEmbedded(t, c, FormatAzureLLM).Requests.At
	at := arrivals(t, p, nil, 24*time.Hour)
	if len(at) != len(rec) {
		t.Fatalf("replayed %d arrivals, want %d", len(at), len(rec))
	}
	for i := range at {
		if d := at[i] - rec[i]/4; d < -1 || d > 1 {
			t.Fatalf("arrival %d at %v, want the recorded %v / 4", i, at[i], rec[i])
		}
	}
	// Load level: rate sets the mean of the replay.
	p, err = spec.BuildWith(50, c)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(p.MeanRate()-50) > 1e-9 {
		t.Errorf("MeanRate = %v, want 50", p.MeanRate())
	}
}

func gz(b []byte) []byte {
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	w.Write(b)
	w.Close()
	return buf.Bytes()
}

func TestReadersDetectGzipByMagic(t *testing.T) {
	wiki := "timestamp sum_req\n7200 30\n3600 20\n0 10\n"
	for _, in := range [][]byte{[]byte(wiki), gz([]byte(wiki))} {
		h, err := ReadWikipedia(bytes.NewReader(in))
		if err != nil {
			t.Fatal(err)
		}
		if len(h) != 3 || h[0].SumReq != 10 || h[2].SumReq != 30 {
			t.Errorf("got %+v, want 3 hours sorted 10, 20, 30", h)
		}
	}
	// File names do not matter: a plain file called .gz and a gzip file called .txt.
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "plain.gz"), []byte("1 2 3\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "packed.txt"), gz([]byte("4 5\n")), 0o644)
	c := NewTraces(dir)
	for ref, want := range map[string]int{"plain.gz": 3, "packed.txt": 2} {
		tr, err := c.Load(ref, FormatNASA)
		if err != nil {
			t.Fatal(err)
		}
		if tr.NASA.Len() != want {
			t.Errorf("%s: %d values, want %d", ref, tr.NASA.Len(), want)
		}
	}
}

// Windows line ends and a UTF-8 byte-order mark are accepted by every reader.
func TestReadersAcceptCRLFAndBOM(t *testing.T) {
	bom := "\ufeff"
	r, err := ReadAzureLLM(strings.NewReader(bom + "TIMESTAMP,ContextTokens,GeneratedTokens\r\n2023-11-16 18:15:46.6805900,374,44\r\n"))
	if err != nil || r.Len() != 1 || r.Generated[0] != 44 {
		t.Errorf("azure: %v %+v", err, r)
	}
	u, err := ReadAlibaba(strings.NewReader(bom + "cpu_util_percent,net_in\r\n1.5,2\r\n"))
	if err != nil || u.Names[0] != "cpu_util_percent" || u.Columns[1][0] != 2 {
		t.Errorf("alibaba: %v %+v", err, u)
	}
	h, err := ReadWikipedia(strings.NewReader(bom + "timestamp sum_req\r\n0 5\r\n"))
	if err != nil || len(h) != 1 || h[0].SumReq != 5 {
		t.Errorf("wikipedia: %v %+v", err, h)
	}
	n, err := ReadNASA(strings.NewReader("1 2\r\n3\r\n"))
	if err != nil || n.Len() != 3 {
		t.Errorf("nasa: %v %+v", err, n)
	}
}

func TestReaderErrors(t *testing.T) {
	nasa, _ := os.ReadFile("traces/nasa_http_1995_requests_per_second.txt.gz")
	cases := []struct {
		name, format string
		in           []byte
		want         []string
	}{
		{"nasa letter", FormatNASA, []byte("1 2 x 3"), []string{"line 1, field 3", `'x'`}},
		{"nasa negative line 2", FormatNASA, []byte("1 2\n3 -4\n"), []string{"line 2, field 2"}},
		{"nasa empty", FormatNASA, []byte(" \n"), []string{"no counts"}},
		{"nasa truncated gzip", FormatNASA, nasa[:len(nasa)/2], []string{"gzip", "unexpected EOF"}},
		{"nasa bad gzip header", FormatNASA, []byte{0x1f, 0x8b, 0}, []string{"gzip"}},
		{"wiki no sum_req", FormatWikipedia, []byte("timestamp count_req\n0 1\n"), []string{"line 1", `"sum_req"`}},
		{"wiki column count", FormatWikipedia, []byte("timestamp sum_req\n0 1\n3600 2 7\n"), []string{"line 3", "3 fields, want 2"}},
		{"wiki bad number", FormatWikipedia, []byte("timestamp sum_req\n0 abc\n"), []string{"line 2, field 2 (sum_req)", `"abc"`}},
		{"wiki fractional time", FormatWikipedia, []byte("timestamp sum_req\n0.5 1\n"), []string{"line 2, field 1 (timestamp)"}},
		{"wiki duplicate hour", FormatWikipedia, []byte("timestamp sum_req\n0 1\n0 2\n"), []string{"consecutive hours"}},
		{"wiki gap", FormatWikipedia, []byte("timestamp sum_req\n0 1\n7200 2\n"), []string{"7200 s apart"}},
		{"wiki header only", FormatWikipedia, []byte("timestamp sum_req\n"), []string{"no data rows"}},
		{"alibaba column count", FormatAlibaba, []byte("a,b\n1,2\n3\n"), []string{"line 3", "wrong number of fields"}},
		{"alibaba bad value", FormatAlibaba, []byte("cpu_util_percent,b\n1,2\nNaN,2\n"), []string{"line 3, field 1 (cpu_util_percent)"}},
		{"alibaba empty", FormatAlibaba, []byte(""), []string{"empty file"}},
		{"azure header", FormatAzureLLM, []byte("TIMESTAMP,ContextTokens\n"), []string{"line 1", "GeneratedTokens"}},
		{"azure time", FormatAzureLLM, []byte("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.6805900,1,2\n2023-11-16 25:00:00.0,1,2\n"), []string{"line 3, field 1 (TIMESTAMP)"}},
		{"azure tokens", FormatAzureLLM, []byte("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.6805900,1,-2\n"), []string{"line 2, field 3 (GeneratedTokens)"}},
		{"azure column count", FormatAzureLLM, []byte("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.6805900,1\n"), []string{"line 2", "wrong number of fields"}},
		{"undetectable", "", []byte("hello\n"), []string{"cannot detect"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := ReadTrace(bytes.NewReader(c.in), c.format)
			if err == nil {
				t.Fatal("want an error")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

func TestCatalog(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "bad.txt"), []byte("timestamp sum_req\n0 1\n3600 oops\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "azure.csv"), []byte("TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:47.5,3,4\n2023-11-16 18:15:46.5,1,2\n"), 0o644)
	c := NewTraces(dir)

	_, err := c.Load("missing.txt", FormatNASA)
	if err == nil || !strings.Contains(err.Error(), filepath.Join(dir, "missing.txt")) {
		t.Errorf("missing file: error %v does not name the file", err)
	}
	_, err = c.Load("bad.txt", "")
	if err == nil || !strings.Contains(err.Error(), filepath.Join(dir, "bad.txt")) || !strings.Contains(err.Error(), "line 3") {
		t.Errorf("malformed file: error %v does not name the file and line 3", err)
	}
	// Detected format, unsorted rows sorted with their tokens, absolute path resolves to the same cache entry.
	tr, err := c.Load("azure.csv", "")
	if err != nil {
		t.Fatal(err)
	}
	r := tr.Requests
	if tr.Format != FormatAzureLLM || r.Len() != 2 || r.At[1] != time.Second || r.Context[0] != 1 || r.Generated[1] != 4 {
		t.Errorf("got %s %+v, want azure-llm sorted by time with tokens", tr.Format, r)
	}
	again, err := c.Load(filepath.Join(dir, "azure.csv"), "")
	if err != nil || again != tr {
		t.Errorf("absolute path: got %p %v, want the cached %p", again, err, tr)
	}
	if _, err := c.Load("azure.csv", FormatNASA); err == nil {
		t.Error("cached trace asked with another format: want an error")
	}
	if _, err := c.Load(FormatNASA, FormatWikipedia); err == nil {
		t.Error("embedded nasa asked as wikipedia: want an error")
	}
	n1, _ := c.Load(FormatWikipedia, "")
	n2, _ := c.Load(FormatWikipedia, "")
	if n1 == nil || n1 != n2 {
		t.Error("embedded trace is not cached")
	}
}

func TestTraceSeries(t *testing.T) {
	c := sharedTraces
	nasa := loadEmbedded(t, c, FormatNASA)
	m, err := nasa.Series("", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	// Aggregation keeps the mean rate (the final partial minute averages its own seconds).
	if m.Step != time.Minute || m.Len() != (5059950+59)/60 {
		t.Fatalf("minute series: step %v, %d values", m.Step, m.Len())
	}
	sum := 0.0
	for i, v := range m.Values {
		w := 60.0
		if i == m.Len()-1 {
			w = float64(5059950 % 60)
		}
		sum += v * w
	}
	if math.Abs(sum-3461610) > 1e-6 {
		t.Errorf("minute series integrates to %v requests, want 3,461,610", sum)
	}
	az := loadEmbedded(t, c, FormatAzureLLM)
	s, err := az.Series("", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	n := 0.0
	for _, v := range s.Values {
		n += v * 10
	}
	if math.Abs(n-19366) > 1e-6 {
		t.Errorf("azure 10 s series counts %v requests, want 19,366", n)
	}
	if _, err := az.Series("", 0); err == nil {
		t.Error("azure without a bin: want an error")
	}
	ali := loadEmbedded(t, c, FormatAlibaba)
	if _, err := ali.Series("nope", 0); err == nil || !strings.Contains(err.Error(), "cpu_util_percent") {
		t.Errorf("unknown alibaba column: error %v should list the columns", err)
	}
	// Alibaba is a shape: replay it at a target rate.
	p, err := ProcessSpec{Kind: KindTrace, Trace: FormatAlibaba, Column: "net_in", Rate: 30, Speedup: 30}.BuildWith(0, c)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(p.MeanRate()-30) > 1e-9 {
		t.Errorf("alibaba replay MeanRate = %v, want 30", p.MeanRate())
	}
	if _, err := (ProcessSpec{Kind: KindTrace, Trace: FormatAlibaba}).BuildWith(0, c); err == nil {
		t.Error("alibaba without rate or scale: want an error")
	}
}

// TestNASAReplayWindow replays one day of NASA compressed 60× (one trace hour per simulated
// minute) at a target mean, and checks the per-simulated-minute counts follow the hourly means.
func TestNASAReplayWindow(t *testing.T) {
	c := sharedTraces
	spec := ProcessSpec{Kind: KindTrace, Trace: FormatNASA, Rate: 200, Speedup: 60, Start: 24 * time.Hour, Window: 24 * time.Hour}
	p, err := spec.BuildWith(0, c)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(p.MeanRate()-200) > 1e-9 {
		t.Fatalf("MeanRate = %v, want 200", p.MeanRate())
	}
	at := arrivals(t, p, newRNG(4), 48*time.Hour)
	if want := 200.0 * 24 * 60; math.Abs(float64(len(at))-want) > 5*math.Sqrt(want) {
		t.Errorf("%d arrivals in one pass, want %v ± 5 sd", len(at), want)
	}
	if last := at[len(at)-1]; last >= 24*time.Minute {
		t.Errorf("last arrival at %v, want before the 24 simulated minutes of the window", last)
	}
	vals := loadEmbedded(t, c, FormatNASA).NASA.Values[86400 : 2*86400]
	mean := 0.0
	for _, v := range vals {
		mean += v
	}
	mean /= float64(len(vals))
	counts := make([]float64, 24)
	for _, a := range at {
		counts[int(a/time.Minute)]++
	}
	for h := range 24 {
		hm := 0.0
		for _, v := range vals[h*3600 : (h+1)*3600] {
			hm += v
		}
		hm /= 3600
		want := hm * 200 / mean * 60
		within(t, "arrivals in simulated minute", counts[h], want, math.Sqrt(want), 5)
	}
}

// TestNASAFullReplayPerDay replays all 58.6 days of NASA at the recorded rate (about 3.46M
// arrivals) and checks the arrivals per day against the recorded daily totals.
func TestNASAFullReplayPerDay(t *testing.T) {
	vals := loadEmbedded(t, sharedTraces, FormatNASA).NASA.Values
	p, err := ProcessSpec{Kind: KindTrace, Trace: FormatNASA}.BuildWith(0, sharedTraces)
	if err != nil {
		t.Fatal(err)
	}
	days := (len(vals) + 86399) / 86400
	got := make([]float64, days)
	rng := newRNG(6)
	total := 0
	for at, ok := p.Next(0, rng); ok; at, ok = p.Next(at, rng) {
		got[int(at/(24*time.Hour))]++
		total++
	}
	want := make([]float64, days)
	for i, v := range vals {
		want[i/86400] += v
	}
	within(t, "total arrivals", float64(total), 3461610, math.Sqrt(3461610), 5)
	for d := range days {
		if want[d] == 0 {
			if got[d] != 0 {
				t.Errorf("day %d: %v arrivals, recorded none", d, got[d])
			}
			continue
		}
		within(t, fmt.Sprintf("day %d arrivals", d), got[d], want[d], math.Sqrt(want[d]), 5)
	}
}
