// Package modelfile reads and writes the frame of Shoal's files of trained
// models (controllers' policy files, forecasters): one JSON header line
// (what the model is, decoded strictly) followed by whatever the model
// stores after it, usually learn/nn's weights under an architecture string
// derived from the header, so that a header that does not match its
// weights is refused.
package modelfile

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/shoal-project/shoal/learn/nn"
)

// MaxHeader bounds a header line (a multi-cloud file keeps its SVRs' support
// vectors there: 19 MB for Online Boutique's ten services).
const MaxHeader = 64 << 20

// WriteHeader writes h as one JSON line.
func WriteHeader(w io.Writer, h any) error {
	head, err := json.Marshal(h)
	if err != nil {
		return err
	}
	_, err = w.Write(append(head, '\n'))
	return err
}

// ReadHeader decodes the header line of r into h, refusing unknown fields,
// and returns a reader of what follows it. format names the kind of file
// in errors. Given a *bufio.Reader it reads from it, so a model can be
// embedded in a larger file and what follows read from the same reader.
func ReadHeader(r io.Reader, h any, format string) (*bufio.Reader, error) {
	br := bufio.NewReader(r) // r itself when it is a *bufio.Reader already
	chunk, err := br.ReadSlice('\n')
	line := append([]byte(nil), chunk...) // copied before the next read reuses the buffer
	for errors.Is(err, bufio.ErrBufferFull) && len(line) < MaxHeader {
		chunk, err = br.ReadSlice('\n')
		line = append(line, chunk...)
	}
	if err != nil {
		return nil, fmt.Errorf("header: %w (not a %s file?)", err, format)
	}
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(h); err != nil {
		return nil, fmt.Errorf("header: %w (not a %s file?)", err, format)
	}
	return br, nil
}

// Duration is a time.Duration written as "500ms" in JSON.
type Duration time.Duration

// MarshalJSON implements json.Marshaler.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// UnmarshalJSON implements json.Unmarshaler.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

// WriteFile writes a file through a temporary file in the same directory,
// synced and renamed into place, so that a reader (or a run resuming after
// a crash) finds the old file or the whole new one, never half of one.
func WriteFile(path string, write func(io.Writer) error) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // after a successful rename, a no-op
	bw := bufio.NewWriterSize(tmp, 1<<16)
	err = write(bw)
	if err == nil {
		err = bw.Flush()
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return os.Rename(tmp.Name(), path)
}

// Write writes a model file of one set of weights: h's header line, then
// the weights under arch in learn/nn's format.
func Write[T nn.Float](w io.Writer, h any, arch string, weights []*nn.Node[T]) error {
	if err := WriteHeader(w, h); err != nil {
		return err
	}
	return nn.Save(w, arch, weights)
}

// Read reads a model file written by Write into h: the header, then build,
// which makes the networks the header describes and returns their
// architecture string and weights, then the weights into them. It returns
// a reader of what follows.
func Read[T nn.Float](r io.Reader, h any, format string, build func() (string, []*nn.Node[T], error)) (*bufio.Reader, error) {
	br, err := ReadHeader(r, h, format)
	if err != nil {
		return nil, err
	}
	arch, weights, err := build()
	if err != nil {
		return nil, err
	}
	if err := nn.Load(br, arch, weights); err != nil {
		return nil, fmt.Errorf("weights: %w", err)
	}
	return br, nil
}
