package workload

import (
	"bufio"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// maxBinnedBuckets bounds the buckets made by binning arrival instants (128 MiB of float64).
const maxBinnedBuckets = 1 << 24

// maxTraceValues bounds the number of values a reader accepts (guards memory on bad input).
const maxTraceValues = 1 << 28

// ReadNASA reads the NASA-HTTP per-second request counts: whitespace-separated non-negative
// integers (one line in the published file), value i being the requests in trace second i.
// It returns a RateSeries with a 1 s step whose values are therefore req/s. Gzip is detected.
func ReadNASA(r io.Reader) (*RateSeries, error) {
	br, err := decompress(r)
	if err != nil {
		return nil, err
	}
	return readNASA(br)
}

func readNASA(br *bufio.Reader) (*RateSeries, error) {
	vals := make([]float64, 0, 1<<16)
	line, fieldN := 1, 0
	var cur uint64
	in := false
	buf := make([]byte, 64<<10)
	for {
		n, err := br.Read(buf)
		for _, b := range buf[:n] {
			switch {
			case b >= '0' && b <= '9':
				if !in {
					in = true
					fieldN++
					cur = 0
				}
				cur = cur*10 + uint64(b-'0')
				if cur > 1<<40 {
					return nil, fmt.Errorf("line %d, field %d: count too large", line, fieldN)
				}
			case b == ' ' || b == '\t' || b == '\r' || b == '\n':
				if in {
					if len(vals) >= maxTraceValues {
						return nil, fmt.Errorf("line %d, field %d: more than %d counts", line, fieldN, maxTraceValues)
					}
					vals = append(vals, float64(cur))
					in = false
				}
				if b == '\n' {
					line++
					fieldN = 0
				}
			default:
				f := fieldN
				if !in {
					f++
				}
				return nil, fmt.Errorf("line %d, field %d: unexpected character %q (want a non-negative integer count)", line, f, b)
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", line, err)
		}
	}
	if in {
		vals = append(vals, float64(cur))
	}
	if len(vals) == 0 {
		return nil, errors.New("no counts")
	}
	return &RateSeries{Step: time.Second, Values: vals}, nil
}

// WikipediaHour is one row of the Wikipedia hourly summary (project en, January 2016).
type WikipediaHour struct {
	// Unix is the hour label in Unix seconds, UTC.
	Unix int64
	// SumReq is the total number of requests in the hour.
	SumReq float64
	// CountReq is the number of distinct pages requested in the hour.
	CountReq float64
	// MeanReq, StdReq and MaxReq are per-page request statistics.
	MeanReq, StdReq, MaxReq float64
	// SumBytes is the total bytes served in the hour.
	SumBytes float64
}

// ReadWikipedia reads the Wikipedia hourly summary: whitespace-separated, a header row naming the
// columns (timestamp and sum_req required; count_req, mean_req, std_req, max_req, sum_bytes read
// when present), every row with as many fields as the header. The rows of the published file are
// not in time order; the result is sorted by timestamp and must be consecutive hours.
func ReadWikipedia(r io.Reader) ([]WikipediaHour, error) {
	br, err := decompress(r)
	if err != nil {
		return nil, err
	}
	return readWikipedia(br)
}

func readWikipedia(br *bufio.Reader) ([]WikipediaHour, error) {
	sc := bufio.NewScanner(br)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	if !sc.Scan() {
		if err := sc.Err(); err != nil {
			return nil, fmt.Errorf("line 1: %w", err)
		}
		return nil, errors.New("empty file: want a header row")
	}
	header := strings.Fields(strings.TrimPrefix(sc.Text(), "\ufeff"))
	col := map[string]int{}
	for i, h := range header {
		col[h] = i
	}
	for _, need := range []string{"timestamp", "sum_req"} {
		if _, ok := col[need]; !ok {
			return nil, fmt.Errorf("line 1: header has no %q column", need)
		}
	}
	var rows []WikipediaHour
	line := 1
	for sc.Scan() {
		line++
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		if len(f) != len(header) {
			return nil, fmt.Errorf("line %d: %d fields, want %d (as in the header)", line, len(f), len(header))
		}
		num := func(name string) (float64, error) {
			i, ok := col[name]
			if !ok {
				return 0, nil
			}
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil || math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
				return 0, fmt.Errorf("line %d, field %d (%s): want a non-negative number, got %q", line, i+1, name, f[i])
			}
			return v, nil
		}
		var h WikipediaHour
		ts, err := num("timestamp")
		if err != nil {
			return nil, err
		}
		if ts != math.Trunc(ts) || ts > 1e12 {
			return nil, fmt.Errorf("line %d, field %d (timestamp): want whole Unix seconds, got %q", line, col["timestamp"]+1, f[col["timestamp"]])
		}
		h.Unix = int64(ts)
		for _, p := range []struct {
			name string
			dst  *float64
		}{{"sum_req", &h.SumReq}, {"count_req", &h.CountReq}, {"mean_req", &h.MeanReq}, {"std_req", &h.StdReq}, {"max_req", &h.MaxReq}, {"sum_bytes", &h.SumBytes}} {
			if *p.dst, err = num(p.name); err != nil {
				return nil, err
			}
		}
		if len(rows) >= maxTraceValues {
			return nil, fmt.Errorf("line %d: too many rows", line)
		}
		rows = append(rows, h)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("line %d: %w", line+1, err)
	}
	if len(rows) == 0 {
		return nil, errors.New("no data rows after the header")
	}
	sort.SliceStable(rows, func(i, j int) bool { return rows[i].Unix < rows[j].Unix })
	for i := 1; i < len(rows); i++ {
		if d := rows[i].Unix - rows[i-1].Unix; d != 3600 {
			return nil, fmt.Errorf("timestamps %d and %d are %d s apart: want consecutive hours (3600 s, no duplicates or gaps)", rows[i-1].Unix, rows[i].Unix, d)
		}
	}
	return rows, nil
}

// WikipediaSeries returns the hourly sum_req as a rate series: Step 1 h, values sum_req/3600 req/s.
func WikipediaSeries(hours []WikipediaHour) *RateSeries {
	s := &RateSeries{Step: time.Hour, Values: make([]float64, len(hours))}
	for i, h := range hours {
		s.Values[i] = h.SumReq / 3600
	}
	return s
}

// UsageSeries is a multi-column utilisation series with a fixed step (the Alibaba 2018
// cluster average: 30 s buckets, columns cpu_util_percent, mem_util_percent, net_in, net_out,
// disk_io_percent, all 0–100).
type UsageSeries struct {
	// Step is the bucket width (30 s for the Alibaba trace).
	Step time.Duration
	// Names are the column names from the header.
	Names []string
	// Columns[j][i] is column j in bucket i.
	Columns [][]float64
}

// Len returns the number of buckets.
func (u *UsageSeries) Len() int {
	if len(u.Columns) == 0 {
		return 0
	}
	return len(u.Columns[0])
}

// Column returns the named column as a relative RateSeries (a shape, not req/s: replaying it
// needs a target rate or a scale). It shares the column's values.
func (u *UsageSeries) Column(name string) (*RateSeries, error) {
	for j, n := range u.Names {
		if n == name {
			return &RateSeries{Step: u.Step, Values: u.Columns[j], Relative: true}, nil
		}
	}
	return nil, fmt.Errorf("no column %q (have %s)", name, strings.Join(u.Names, ", "))
}

// ReadAlibaba reads the Alibaba 2018 cluster utilisation series: CSV with a header row and no
// time column, row i being the 30 s bucket starting at trace second 30·i; every value a finite
// non-negative number. Gzip is detected.
func ReadAlibaba(r io.Reader) (*UsageSeries, error) {
	br, err := decompress(r)
	if err != nil {
		return nil, err
	}
	return readAlibaba(br)
}

func csvError(err error) error {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		if errors.Is(pe.Err, csv.ErrFieldCount) {
			return fmt.Errorf("line %d: wrong number of fields (not as in the header): %w", pe.Line, err)
		}
		return fmt.Errorf("line %d: %w", pe.Line, err)
	}
	return err
}

func readAlibaba(br *bufio.Reader) (*UsageSeries, error) {
	cr := csv.NewReader(br)
	cr.ReuseRecord = true
	header, err := cr.Read()
	if err == io.EOF {
		return nil, errors.New("empty file: want a header row")
	}
	if err != nil {
		return nil, csvError(err)
	}
	u := &UsageSeries{Step: 30 * time.Second, Names: slices.Clone(header), Columns: make([][]float64, len(header))}
	for j, n := range u.Names {
		n = strings.TrimSpace(strings.TrimPrefix(n, "\ufeff"))
		u.Names[j] = n
		if n == "" {
			return nil, fmt.Errorf("line 1, field %d: empty column name", j+1)
		}
	}
	line := 1
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, csvError(err)
		}
		line, _ = cr.FieldPos(0)
		if u.Len() >= maxTraceValues {
			return nil, fmt.Errorf("line %d: too many rows", line)
		}
		for j, s := range rec {
			v, err := strconv.ParseFloat(s, 64)
			if err != nil || math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
				return nil, fmt.Errorf("line %d, field %d (%s): want a non-negative number, got %q", line, j+1, u.Names[j], s)
			}
			u.Columns[j] = append(u.Columns[j], v)
		}
	}
	if u.Len() == 0 {
		return nil, errors.New("no data rows after the header")
	}
	return u, nil
}

// RequestTrace holds per-request arrivals and sizes (the Azure LLM inference trace).
type RequestTrace struct {
	// Start is the wall-clock instant of the first request (the trace's own clock, no zone: UTC).
	Start time.Time
	// At are the arrival instants relative to the first request, non-decreasing (At[0] = 0).
	At []time.Duration
	// Context are the input (prompt) tokens of each request, in the order of At.
	Context []float64
	// Generated are the output tokens of each request, in the order of At.
	Generated []float64
}

// Len returns the number of requests.
func (t *RequestTrace) Len() int { return len(t.At) }

// Span returns the time from the first to the last request.
func (t *RequestTrace) Span() time.Duration {
	if len(t.At) == 0 {
		return 0
	}
	return t.At[len(t.At)-1]
}

// Series counts the arrivals in bins of width bin (> 0) and returns them as a rate series in
// req/s (count / bin seconds); the last bin is the one holding the last request.
func (t *RequestTrace) Series(bin time.Duration) (*RateSeries, error) {
	if bin <= 0 {
		return nil, fmt.Errorf("bin must be > 0, got %v", bin)
	}
	if len(t.At) == 0 {
		return nil, errors.New("no requests")
	}
	if t.Span()/bin >= maxBinnedBuckets {
		return nil, fmt.Errorf("bin %v is too small for a span of %v", bin, t.Span())
	}
	n := int(t.Span()/bin) + 1
	s := &RateSeries{Step: bin, Values: make([]float64, n)}
	w := 1 / bin.Seconds()
	for _, a := range t.At {
		s.Values[int(a/bin)] += w
	}
	return s, nil
}

// azureTimeLayout parses `YYYY-MM-DD HH:MM:SS.fffffff`; Go accepts any number of fractional
// digits after the seconds when parsing.
const azureTimeLayout = "2006-01-02 15:04:05"

// ReadAzureLLM reads the Azure LLM inference trace: CSV with a header naming TIMESTAMP,
// ContextTokens and GeneratedTokens (any order, other columns ignored), TIMESTAMP as
// `YYYY-MM-DD HH:MM:SS.fffffff`, token counts non-negative integers. Rows out of time order are
// sorted (stably). Gzip is detected.
func ReadAzureLLM(r io.Reader) (*RequestTrace, error) {
	br, err := decompress(r)
	if err != nil {
		return nil, err
	}
	return readAzureLLM(br)
}

func readAzureLLM(br *bufio.Reader) (*RequestTrace, error) {
	cr := csv.NewReader(br)
	cr.ReuseRecord = true
	header, err := cr.Read()
	if err == io.EOF {
		return nil, errors.New("empty file: want a header row")
	}
	if err != nil {
		return nil, csvError(err)
	}
	iTS, iCtx, iGen := -1, -1, -1
	for j, h := range header {
		switch strings.TrimSpace(strings.TrimPrefix(h, "\ufeff")) {
		case "TIMESTAMP":
			iTS = j
		case "ContextTokens":
			iCtx = j
		case "GeneratedTokens":
			iGen = j
		}
	}
	if iTS < 0 || iCtx < 0 || iGen < 0 {
		return nil, fmt.Errorf("line 1: header %q must name TIMESTAMP, ContextTokens and GeneratedTokens", strings.Join(header, ","))
	}
	var times []time.Time
	t := &RequestTrace{}
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, csvError(err)
		}
		line, _ := cr.FieldPos(0)
		if len(times) >= maxTraceValues {
			return nil, fmt.Errorf("line %d: too many rows", line)
		}
		ts, err := time.Parse(azureTimeLayout, rec[iTS])
		if err != nil {
			return nil, fmt.Errorf("line %d, field %d (TIMESTAMP): want YYYY-MM-DD HH:MM:SS.fffffff, got %q", line, iTS+1, rec[iTS])
		}
		tok := func(i int, name string) (float64, error) {
			v, err := strconv.ParseInt(rec[i], 10, 64)
			if err != nil || v < 0 || v > 1<<50 {
				return 0, fmt.Errorf("line %d, field %d (%s): want a non-negative integer, got %q", line, i+1, name, rec[i])
			}
			return float64(v), nil
		}
		c, err := tok(iCtx, "ContextTokens")
		if err != nil {
			return nil, err
		}
		g, err := tok(iGen, "GeneratedTokens")
		if err != nil {
			return nil, err
		}
		times = append(times, ts)
		t.Context = append(t.Context, c)
		t.Generated = append(t.Generated, g)
	}
	if len(times) == 0 {
		return nil, errors.New("no data rows after the header")
	}
	if !slices.IsSortedFunc(times, time.Time.Compare) {
		idx := make([]int, len(times))
		for i := range idx {
			idx[i] = i
		}
		sort.SliceStable(idx, func(a, b int) bool { return times[idx[a]].Before(times[idx[b]]) })
		ts := make([]time.Time, len(times))
		c := make([]float64, len(times))
		g := make([]float64, len(times))
		for i, k := range idx {
			ts[i], c[i], g[i] = times[k], t.Context[k], t.Generated[k]
		}
		times, t.Context, t.Generated = ts, c, g
	}
	t.Start = times[0]
	t.At = make([]time.Duration, len(times))
	for i, ts := range times {
		d := ts.Sub(t.Start)
		if d == math.MaxInt64 {
			return nil, fmt.Errorf("request %d: %v is too far after the first request", i, ts)
		}
		t.At[i] = d
	}
	return t, nil
}
