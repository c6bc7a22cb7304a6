package nn

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
)

// File format (version 1), all integers little-endian:
//
//	magic    8 bytes  "SHOALNN\n"
//	version  uint16   1
//	dtype    uint8    4 = float32, 8 = float64
//	arch     uint32 length + UTF-8 bytes
//	count    uint32   number of tensors
//	count ×: name (uint32 length + bytes), rows uint32, cols uint32,
//	         rows·cols elements of dtype (IEEE 754)
//	crc      uint32   CRC-32 (IEEE) of every preceding byte
const (
	fileMagic   = "SHOALNN\n"
	fileVersion = 1
	maxString   = 1 << 16 // longest name or architecture string accepted
)

// ErrFormat is wrapped by every Load error about a malformed or foreign
// file (as opposed to an architecture mismatch or a read error).
var ErrFormat = errors.New("not a valid shoal nn file")

// ErrMismatch is wrapped by every Load error about a file of another
// architecture than the destination network.
var ErrMismatch = errors.New("architecture mismatch")

// Save writes arch and the values of nodes (typically a Module's State) to
// w in the versioned binary format described above.
func Save[T Float](w io.Writer, arch string, nodes []*Node[T]) error {
	if len(arch) > maxString {
		return fmt.Errorf("nn: save: architecture string of %d bytes exceeds %d", len(arch), maxString)
	}
	crc := crc32.NewIEEE()
	bw := bufio.NewWriter(io.MultiWriter(w, crc))
	var buf [8]byte
	putU32 := func(v uint32) {
		binary.LittleEndian.PutUint32(buf[:4], v)
		bw.Write(buf[:4])
	}
	putStr := func(s string) {
		putU32(uint32(len(s)))
		bw.WriteString(s)
	}
	bw.WriteString(fileMagic)
	binary.LittleEndian.PutUint16(buf[:2], fileVersion)
	bw.Write(buf[:2])
	size := dtypeSize[T]()
	bw.WriteByte(byte(size))
	putStr(arch)
	putU32(uint32(len(nodes)))
	var chunk []byte
	for i, n := range nodes {
		if len(n.Name) > maxString {
			return fmt.Errorf("nn: save: tensor %d name of %d bytes exceeds %d", i, len(n.Name), maxString)
		}
		putStr(n.Name)
		putU32(uint32(n.Value.Rows))
		putU32(uint32(n.Value.Cols))
		for k, v := range n.Value.Data { // encoded a chunk at a time: a checkpoint's replay buffer has millions
			if size == 4 {
				chunk = binary.LittleEndian.AppendUint32(chunk, math.Float32bits(float32(v)))
			} else {
				chunk = binary.LittleEndian.AppendUint64(chunk, math.Float64bits(float64(v)))
			}
			if len(chunk) >= 1<<15 || k == len(n.Value.Data)-1 {
				bw.Write(chunk)
				chunk = chunk[:0]
			}
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("nn: save: %w", err)
	}
	binary.LittleEndian.PutUint32(buf[:4], crc.Sum32())
	if _, err := w.Write(buf[:4]); err != nil {
		return fmt.Errorf("nn: save: %w", err)
	}
	return nil
}

func dtypeSize[T Float]() int {
	var z T
	if _, ok := any(z).(float32); ok {
		return 4
	}
	return 8
}

// SaveModule saves m.State() (or m.Params() if m has no State method) under
// m.Arch().
func SaveModule[T Float](w io.Writer, m Module[T]) error {
	return Save(w, m.Arch(), moduleState(m))
}

// LoadModule loads a file written by SaveModule into m.
func LoadModule[T Float](r io.Reader, m Module[T]) error {
	return Load(r, m.Arch(), moduleState(m))
}

func moduleState[T Float](m Module[T]) []*Node[T] {
	if s, ok := m.(interface{ State() []*Node[T] }); ok {
		return s.State()
	}
	return m.Params()
}

// Load reads a file written by Save into nodes. The file's architecture
// string, tensor count, names and shapes must match arch and nodes exactly;
// otherwise Load returns an error wrapping ErrMismatch that names the first
// difference. Malformed files give errors wrapping ErrFormat. Files of the
// other precision load with conversion. nodes are modified only when the
// whole file has been read and verified.
func Load[T Float](r io.Reader, arch string, nodes []*Node[T]) error {
	crc := crc32.NewIEEE()
	br := bufio.NewReader(r)
	tr := io.TeeReader(br, crc)
	var buf [8]byte
	read := func(n int, what string) ([]byte, error) {
		if _, err := io.ReadFull(tr, buf[:n]); err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				return nil, fmt.Errorf("nn: load: %s: truncated file: %w", what, ErrFormat)
			}
			return nil, fmt.Errorf("nn: load: %s: %w", what, err)
		}
		return buf[:n], nil
	}
	u32 := func(what string) (uint32, error) {
		b, err := read(4, what)
		if err != nil {
			return 0, err
		}
		return binary.LittleEndian.Uint32(b), nil
	}
	str := func(what string) (string, error) {
		n, err := u32(what)
		if err != nil {
			return "", err
		}
		if n > maxString {
			return "", fmt.Errorf("nn: load: %s: length %d exceeds %d: %w", what, n, maxString, ErrFormat)
		}
		b := make([]byte, n)
		if _, err := io.ReadFull(tr, b); err != nil {
			return "", fmt.Errorf("nn: load: %s: truncated file: %w", what, ErrFormat)
		}
		return string(b), nil
	}
	magic := make([]byte, len(fileMagic))
	if _, err := io.ReadFull(tr, magic); err != nil || string(magic) != fileMagic {
		return fmt.Errorf("nn: load: bad magic %q: %w", magic, ErrFormat)
	}
	b, err := read(2, "version")
	if err != nil {
		return err
	}
	if v := binary.LittleEndian.Uint16(b); v != fileVersion {
		return fmt.Errorf("nn: load: unsupported version %d (this build reads %d): %w", v, fileVersion, ErrFormat)
	}
	b, err = read(1, "dtype")
	if err != nil {
		return err
	}
	size := int(b[0])
	if size != 4 && size != 8 {
		return fmt.Errorf("nn: load: unknown element size %d: %w", size, ErrFormat)
	}
	fileArch, err := str("architecture")
	if err != nil {
		return err
	}
	if fileArch != arch {
		return fmt.Errorf("nn: load: %w: file has %q, network is %q", ErrMismatch, fileArch, arch)
	}
	count, err := u32("tensor count")
	if err != nil {
		return err
	}
	if int(count) != len(nodes) {
		return fmt.Errorf("nn: load: %w: file has %d tensors, network has %d", ErrMismatch, count, len(nodes))
	}
	vals := make([][]T, len(nodes))
	for i, n := range nodes {
		name, err := str(fmt.Sprintf("tensor %d name", i))
		if err != nil {
			return err
		}
		rows, err := u32(fmt.Sprintf("tensor %d rows", i))
		if err != nil {
			return err
		}
		cols, err := u32(fmt.Sprintf("tensor %d cols", i))
		if err != nil {
			return err
		}
		if name != n.Name || int(rows) != n.Value.Rows || int(cols) != n.Value.Cols {
			return fmt.Errorf("nn: load: %w: tensor %d is %q %dx%d in the file, %q %s in the network",
				ErrMismatch, i, name, rows, cols, n.Name, n.Value.shape())
		}
		raw := make([]byte, n.Value.Len()*size) // read whole: a replay buffer in a checkpoint has millions of values
		if _, err := io.ReadFull(tr, raw); err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				err = fmt.Errorf("truncated file: %w", ErrFormat)
			}
			return fmt.Errorf("nn: load: tensor %d (%q) data: %w", i, name, err)
		}
		v := make([]T, n.Value.Len())
		for k := range v {
			if size == 4 {
				v[k] = T(math.Float32frombits(binary.LittleEndian.Uint32(raw[4*k:])))
			} else {
				v[k] = T(math.Float64frombits(binary.LittleEndian.Uint64(raw[8*k:])))
			}
		}
		vals[i] = v
	}
	want := crc.Sum32()
	if _, err := io.ReadFull(br, buf[:4]); err != nil {
		return fmt.Errorf("nn: load: checksum: truncated file: %w", ErrFormat)
	}
	if got := binary.LittleEndian.Uint32(buf[:4]); got != want {
		return fmt.Errorf("nn: load: checksum %08x does not match contents %08x: %w", got, want, ErrFormat)
	}
	for i, n := range nodes {
		copy(n.Value.Data, vals[i])
	}
	return nil
}
