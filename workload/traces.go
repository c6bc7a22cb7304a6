package workload

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"embed"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// Trace formats (also the names of the embedded traces).
const (
	FormatNASA      = "nasa"
	FormatWikipedia = "wikipedia"
	FormatAlibaba   = "alibaba"
	FormatAzureLLM  = "azure-llm"
)

func validFormat(f string) bool {
	switch f {
	case FormatNASA, FormatWikipedia, FormatAlibaba, FormatAzureLLM:
		return true
	}
	return false
}

// The four public traces of traces/SOURCES.md (origin, license, format), embedded so a binary
// needs no data directory.
//
//go:embed traces/SOURCES.md traces/nasa_http_1995_requests_per_second.txt.gz traces/wikipedia_en_2016-01_hourly_requests.txt traces/alibaba2018_machine_usage_cluster_avg_30s.csv.gz traces/azure_llm_inference_2023_conv.csv
var embedded embed.FS

// EmbeddedFile returns the file inside the package's traces/ folder that holds the embedded trace
// name (nasa, wikipedia, alibaba, azure-llm); ok=false for any other name.
func EmbeddedFile(name string) (file string, ok bool) {
	switch name {
	case FormatNASA:
		return "traces/nasa_http_1995_requests_per_second.txt.gz", true
	case FormatWikipedia:
		return "traces/wikipedia_en_2016-01_hourly_requests.txt", true
	case FormatAlibaba:
		return "traces/alibaba2018_machine_usage_cluster_avg_30s.csv.gz", true
	case FormatAzureLLM:
		return "traces/azure_llm_inference_2023_conv.csv", true
	}
	return "", false
}

// OpenEmbedded opens the embedded trace file of the given name (nasa, wikipedia, alibaba,
// azure-llm) or "SOURCES.md"; the caller closes it.
func OpenEmbedded(name string) (io.ReadCloser, error) {
	p, ok := EmbeddedFile(name)
	if name == "SOURCES.md" {
		p, ok = "traces/SOURCES.md", true
	}
	if !ok {
		return nil, fmt.Errorf("workload: no embedded trace %q (have nasa, wikipedia, alibaba, azure-llm)", name)
	}
	return embedded.Open(p)
}

// Trace is one parsed trace. Exactly one of the format fields is set.
type Trace struct {
	// Ref is the name or path the trace was loaded by; File is the file that was read.
	Ref, File string
	// Format is nasa, wikipedia, alibaba or azure-llm.
	Format string
	// NASA is the per-second request count series (Step 1 s, req/s).
	NASA *RateSeries
	// Wikipedia are the hourly rows, sorted by time.
	Wikipedia []WikipediaHour
	// Alibaba is the cluster utilisation series.
	Alibaba *UsageSeries
	// Requests are the per-request arrivals (azure-llm).
	Requests *RequestTrace
}

// Series returns the rate series replayed for the trace: nasa requests per second; wikipedia
// sum_req per hour as req/s (column "" or "sum_req"); alibaba the named column (default
// cpu_util_percent) as a relative shape; azure-llm arrival counts per bin as req/s (bin required).
// A bin > 0 aggregates the series to that width (a multiple of its step).
func (t *Trace) Series(column string, bin time.Duration) (*RateSeries, error) {
	var s *RateSeries
	switch {
	case t.NASA != nil:
		if column != "" && column != "requests" {
			return nil, fmt.Errorf("workload: trace %s has no column %q (only requests)", t.Ref, column)
		}
		s = t.NASA
	case t.Wikipedia != nil:
		if column != "" && column != "sum_req" {
			return nil, fmt.Errorf("workload: trace %s: column %q is not replayable (only sum_req)", t.Ref, column)
		}
		s = WikipediaSeries(t.Wikipedia)
	case t.Alibaba != nil:
		if column == "" {
			column = "cpu_util_percent"
		}
		var err error
		if s, err = t.Alibaba.Column(column); err != nil {
			return nil, fmt.Errorf("workload: trace %s: %w", t.Ref, err)
		}
	case t.Requests != nil:
		if column != "" {
			return nil, fmt.Errorf("workload: trace %s has no series columns, got %q", t.Ref, column)
		}
		if bin <= 0 {
			return nil, fmt.Errorf("workload: trace %s holds arrival instants: a bin is needed to make a rate series", t.Ref)
		}
		return t.Requests.Series(bin)
	default:
		return nil, fmt.Errorf("workload: trace %s is empty", t.Ref)
	}
	if bin > 0 && bin != s.Step {
		return s.Aggregate(bin)
	}
	return s, nil
}

// Traces is a catalog that resolves trace references and caches the parsed traces. It is owned
// by the caller (one per run or per process) and safe for concurrent use; the cached traces are
// shared and must be treated as read-only.
type Traces struct {
	base  string
	mu    sync.Mutex
	cache map[string]*Trace
}

// NewTraces returns a catalog. A reference that is one of the embedded names (nasa, wikipedia,
// alibaba, azure-llm) is read from the package; any other reference is a file path, absolute or
// relative to baseDir ("" is the working directory).
func NewTraces(baseDir string) *Traces {
	return &Traces{base: baseDir, cache: map[string]*Trace{}}
}

// Load returns the trace for ref, parsing it on first use. format is required to match an embedded
// trace's own format when ref names one; for a file it selects the reader (empty: detected from the
// first line). Errors name the file and, for malformed content, the line and field.
func (c *Traces) Load(ref, format string) (*Trace, error) {
	if format != "" && !validFormat(format) {
		return nil, fmt.Errorf("workload: trace %q: unknown format %q (want nasa, wikipedia, alibaba, azure-llm)", ref, format)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	embeddedFile, isEmbedded := EmbeddedFile(ref)
	key := ref
	file := embeddedFile
	if isEmbedded {
		if format != "" && format != ref {
			return nil, fmt.Errorf("workload: trace %q has format %s, not %s", ref, ref, format)
		}
		format = ref
		key = "embedded:" + ref
	} else {
		file = ref
		if !filepath.IsAbs(file) {
			file = filepath.Join(c.base, file)
		}
		key = "file:" + file
	}
	if t, ok := c.cache[key]; ok {
		if format != "" && t.Format != format {
			return nil, fmt.Errorf("workload: trace %q (%s) has format %s, not %s", ref, file, t.Format, format)
		}
		return t, nil
	}
	var rc io.ReadCloser
	var err error
	if isEmbedded {
		rc, err = embedded.Open(embeddedFile)
	} else {
		rc, err = os.Open(file)
	}
	if err != nil {
		return nil, fmt.Errorf("workload: opening trace %q: %w", ref, err)
	}
	defer rc.Close()
	t, err := ReadTrace(rc, format)
	if err != nil {
		return nil, fmt.Errorf("workload: reading trace %q (%s): %w", ref, file, err)
	}
	t.Ref, t.File = ref, file
	c.cache[key] = t
	return t, nil
}

// ReadTrace reads a trace of the given format from r (gzip detected by its magic bytes); an empty
// format is detected from the first line: a TIMESTAMP,... header is azure-llm, "timestamp ..." is
// wikipedia, "cpu_util_percent,..." is alibaba, a line of integers is nasa.
func ReadTrace(r io.Reader, format string) (*Trace, error) {
	br, err := decompress(r)
	if err != nil {
		return nil, err
	}
	if format == "" {
		head, _ := br.Peek(64)
		head = bytes.TrimPrefix(head, []byte("\ufeff"))
		switch {
		case bytes.HasPrefix(head, []byte("TIMESTAMP,")):
			format = FormatAzureLLM
		case bytes.HasPrefix(head, []byte("timestamp ")):
			format = FormatWikipedia
		case bytes.HasPrefix(head, []byte("cpu_util_percent")):
			format = FormatAlibaba
		case len(head) > 0 && head[0] >= '0' && head[0] <= '9':
			format = FormatNASA
		default:
			return nil, errors.New("cannot detect the trace format from the first line: set format")
		}
	}
	t := &Trace{Format: format}
	switch format {
	case FormatNASA:
		t.NASA, err = readNASA(br)
	case FormatWikipedia:
		t.Wikipedia, err = readWikipedia(br)
	case FormatAlibaba:
		t.Alibaba, err = readAlibaba(br)
	case FormatAzureLLM:
		t.Requests, err = readAzureLLM(br)
	default:
		return nil, fmt.Errorf("unknown trace format %q", format)
	}
	if err != nil {
		return nil, err
	}
	return t, nil
}

// gzipReader makes gzip read errors say where they came from.
type gzipReader struct{ z *gzip.Reader }

// Read reads decompressed bytes, wrapping errors other than io.EOF.
func (g gzipReader) Read(p []byte) (int, error) {
	n, err := g.z.Read(p)
	if err != nil && err != io.EOF {
		err = fmt.Errorf("decompressing gzip: %w", err)
	}
	return n, err
}

// decompress returns a buffered reader of r's content, transparently gunzipping it when it
// starts with the gzip magic bytes 1f 8b.
func decompress(r io.Reader) (*bufio.Reader, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	magic, err := br.Peek(2)
	if err != nil && err != io.EOF {
		return nil, fmt.Errorf("reading: %w", err)
	}
	if len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		z, err := gzip.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("opening gzip: %w", err)
		}
		z.Multistream(true)
		return bufio.NewReaderSize(gzipReader{z}, 64<<10), nil
	}
	return br, nil
}
