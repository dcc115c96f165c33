package trace

import (
	"bufio"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/gpupool/gpupool/schemas"
)

// Writer writes records as trace lines, optionally gzip-compressed. Output is
// buffered: call Flush to push it to the underlying writer, and Close at the end
// (it does not close the underlying writer). A record a Reader would reject is not
// written; the write returns an error wrapping ErrInvalidRecord and the Writer stays
// usable. It is not safe for concurrent use.
type Writer struct {
	bw     *bufio.Writer
	zw     *gzip.Writer
	buf    []byte
	err    error
	closed bool
}

// NewWriter returns a Writer to w, gzip-compressing when gz is set.
func NewWriter(w io.Writer, gz bool) *Writer {
	tw := &Writer{}
	if gz {
		tw.zw = gzip.NewWriter(w)
		w = tw.zw
	}
	tw.bw = bufio.NewWriterSize(w, 64<<10)
	return tw
}

// usable returns why the Writer cannot write: closed, or a previous write failed.
func (w *Writer) usable() error {
	if w.closed {
		return ErrClosed
	}
	return w.err
}

func (w *Writer) emit(kind string) error {
	w.buf = append(w.buf, '}', '\n')
	if _, err := w.bw.Write(w.buf); err != nil {
		w.err = fmt.Errorf("trace: write %s line: %w", kind, err)
		return w.err
	}
	return nil
}

func invalid(kind, reason string) error {
	return fmt.Errorf("trace: write %s: %w: %s", kind, ErrInvalidRecord, reason)
}

// WriteGPU writes a `gpu` line. Card and ClockEventReasons are not in the format.
func (w *Writer) WriteGPU(s *schemas.GPUSample) error {
	if err := w.usable(); err != nil {
		return err
	}
	if r := checkGPU(s); r != "" {
		return invalid("gpu row", r)
	}
	b := w.start("gpu", s.TimeMs, s.Cluster)
	b = appendStr(appendKey(b, "node"), s.Node)
	b = appendStr(appendKey(b, "gpu_uuid"), s.GPUUUID)
	b = strconv.AppendUint(appendKey(b, "gpu_index"), uint64(s.GPUIndex), 10)
	b = appendOptStr(b, "model", s.Model)
	b = appendOptStr(b, "mig_profile", s.MIGProfile)
	b = strconv.AppendUint(appendKey(b, "fb_total_mib"), uint64(s.FBTotalMiB), 10)
	b = strconv.AppendUint(appendKey(b, "fb_used_mib"), uint64(s.FBUsedMiB), 10)
	b = appendOptFloat(b, "gr_engine_active", s.GrEngineActive)
	b = appendOptFloat(b, "sm_active", s.SMActive)
	b = appendOptFloat(b, "sm_occupancy", s.SMOccupancy)
	b = appendOptFloat(b, "tensor_active", s.TensorActive)
	b = appendOptFloat(b, "dram_active", s.DRAMActive)
	b = appendOptFloat(b, "gpu_util", s.GPUUtil)
	b = appendOptFloat(b, "pcie_tx_bytes_per_s", s.PCIeTxBytesPerS)
	b = appendOptFloat(b, "pcie_rx_bytes_per_s", s.PCIeRxBytesPerS)
	b = appendOptFloat(b, "power_w", s.PowerW)
	if s.EnergyMilliJ != 0 {
		b = strconv.AppendUint(appendKey(b, "energy_mj"), s.EnergyMilliJ, 10)
	}
	b = appendOptFloat(b, "temp_c", s.TempC)
	if s.XID != 0 {
		b = strconv.AppendUint(appendKey(b, "xid"), uint64(s.XID), 10)
	}
	w.buf = b
	return w.emit("gpu")
}

// WriteProcess writes a `process` line.
func (w *Writer) WriteProcess(s *schemas.ProcessSample) error {
	if err := w.usable(); err != nil {
		return err
	}
	if r := checkProcess(s); r != "" {
		return invalid("process row", r)
	}
	b := w.start("process", s.TimeMs, s.Cluster)
	b = appendStr(appendKey(b, "node"), s.Node)
	b = appendStr(appendKey(b, "gpu_uuid"), s.GPUUUID)
	b = strconv.AppendUint(appendKey(b, "pid"), uint64(s.PID), 10)
	b = appendOptStr(b, "process_name", s.ProcessName)
	b = appendOptStr(b, "job", s.Job)
	b = strconv.AppendUint(appendKey(b, "fb_used_mib"), uint64(s.FBUsedMiB), 10)
	b = appendOptFloat(b, "sm_util", s.SMUtil)
	b = appendOptFloat(b, "mem_util", s.MemUtil)
	w.buf = b
	return w.emit("process")
}

// WriteJob writes a `job` line. Source and Labels are not in the format.
func (w *Writer) WriteJob(e *schemas.JobEvent) error {
	if err := w.usable(); err != nil {
		return err
	}
	if r := checkJob(e); r != "" {
		return invalid("job event", r)
	}
	b := w.start("job", e.TimeMs, "")
	b = appendStr(appendKey(b, "job"), e.Job)
	b = appendStr(appendKey(b, "event"), e.Event)
	b = appendOptStr(b, "cluster", e.Cluster)
	b = appendOptStr(b, "team", e.Team)
	b = appendOptStr(b, "project", e.Project)
	b = appendOptStr(b, "queue", e.Queue)
	b = appendOptStr(b, "pool", e.Pool)
	b = appendOptStr(b, "model_name", e.ModelName)
	b = appendOptStr(b, "workload", e.Workload)
	if e.GPUs != 0 {
		b = strconv.AppendUint(appendKey(b, "gpus"), uint64(e.GPUs), 10)
	}
	b = appendOptStr(b, "card", e.Card)
	b = appendStrList(b, "nodes", e.Nodes)
	b = appendStrList(b, "gpu_uuids", e.GPUUUIDs)
	b = appendOptStr(b, "status", e.Status)
	if e.ExitCode != 0 || e.Event == schemas.EventEnd {
		b = strconv.AppendInt(appendKey(b, "exit_code"), int64(e.ExitCode), 10)
	}
	if e.Attempt != 0 {
		b = strconv.AppendUint(appendKey(b, "attempt"), uint64(e.Attempt), 10)
	}
	b = appendOptStr(b, "rerun_of", e.RerunOf)
	w.buf = b
	return w.emit("job")
}

// WriteRecord writes whichever record r holds.
func (w *Writer) WriteRecord(r Record) error {
	switch {
	case r.GPU != nil:
		return w.WriteGPU(r.GPU)
	case r.Process != nil:
		return w.WriteProcess(r.Process)
	case r.Job != nil:
		return w.WriteJob(r.Job)
	}
	return invalid("record", "it holds no gpu, process or job")
}

// WriteBatch writes a batch's GPU rows, then its process rows; a row without a
// cluster or node takes the batch's. An invalid row is left out and the others are
// written; the error then names the first and how many there were.
func (w *Writer) WriteBatch(b *schemas.SampleBatch) error {
	var first error
	bad := 0
	note := func(err error) error {
		if errors.Is(err, ErrInvalidRecord) {
			if first == nil {
				first = err
			}
			bad++
			return nil
		}
		return err
	}
	for i := range b.GPUs {
		s := b.GPUs[i]
		s.Cluster, s.Node = or(s.Cluster, b.Cluster), or(s.Node, b.Node)
		if err := note(w.WriteGPU(&s)); err != nil {
			return err
		}
	}
	for i := range b.Processes {
		s := b.Processes[i]
		s.Cluster, s.Node = or(s.Cluster, b.Cluster), or(s.Node, b.Node)
		if err := note(w.WriteProcess(&s)); err != nil {
			return err
		}
	}
	if first != nil {
		return fmt.Errorf("%w (%d of %d rows of node %q left out)", first, bad, b.Rows(), b.Node)
	}
	return nil
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// Flush writes buffered lines (and, with gzip, a sync point) to the underlying
// writer.
func (w *Writer) Flush() error {
	if err := w.usable(); err != nil {
		return err
	}
	if err := w.bw.Flush(); err != nil {
		w.err = fmt.Errorf("trace: flush: %w", err)
		return w.err
	}
	if w.zw != nil {
		if err := w.zw.Flush(); err != nil {
			w.err = fmt.Errorf("trace: flush gzip: %w", err)
			return w.err
		}
	}
	return nil
}

// Close flushes the buffered lines and ends the gzip stream. It does not close the
// underlying writer. Closing twice is a no-op.
func (w *Writer) Close() error {
	if w.closed {
		return nil
	}
	err := w.err
	if err == nil {
		if err = w.bw.Flush(); err != nil {
			err = fmt.Errorf("trace: flush: %w", err)
		}
	}
	if w.zw != nil {
		if zerr := w.zw.Close(); zerr != nil && err == nil {
			err = fmt.Errorf("trace: close gzip: %w", zerr)
		}
	}
	w.closed = true
	return err
}

// start begins a line: type, ts and, for sample rows, cluster.
func (w *Writer) start(kind string, ms int64, cluster string) []byte {
	b := append(w.buf[:0], `{"type":"`...)
	b = append(b, kind...)
	b = append(b, `","ts":"`...)
	b = appendTime(b, ms)
	b = append(b, '"')
	return appendOptStr(b, "cluster", cluster)
}

func appendTime(b []byte, ms int64) []byte {
	t := time.UnixMilli(ms).UTC()
	if ms%1000 == 0 {
		return t.AppendFormat(b, "2006-01-02T15:04:05Z")
	}
	return t.AppendFormat(b, "2006-01-02T15:04:05.000Z")
}

func appendKey(b []byte, name string) []byte {
	b = append(b, ',', '"')
	b = append(b, name...)
	return append(b, '"', ':')
}

func appendOptStr(b []byte, name, v string) []byte {
	if v == "" {
		return b
	}
	return appendStr(appendKey(b, name), v)
}

func appendStrList(b []byte, name string, vs []string) []byte {
	if len(vs) == 0 {
		return b
	}
	b = append(appendKey(b, name), '[')
	for i, v := range vs {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendStr(b, v)
	}
	return append(b, ']')
}

// appendOptFloat writes a float field unless it is Missing, formatted as
// encoding/json formats a float32: the shortest text that reads back exactly.
func appendOptFloat(b []byte, name string, v float32) []byte {
	if schemas.IsMissing(v) {
		return b
	}
	b = appendKey(b, name)
	abs := math.Abs(float64(v))
	format := byte('f')
	if abs != 0 && (float32(abs) < 1e-6 || float32(abs) >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, float64(v), format, -1, 32)
	if format == 'e' { // 1e-07 → 1e-7
		n := len(b)
		if n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}

const hexDigits = "0123456789abcdef"

// appendStr writes s as a JSON string; invalid UTF-8 becomes U+FFFD, as a Reader
// would read it.
func appendStr(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i++
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
