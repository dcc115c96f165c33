package trace

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"time"
)

// ReaderOptions tune a Reader. The zero value is a lenient reader with the defaults.
type ReaderOptions struct {
	// Strict stops reading at the first bad line: Next returns its *LineError, then
	// keeps returning it. Otherwise bad lines are counted and skipped.
	Strict bool
	// MaxErrors is how many bad lines Errors keeps for a report; 0 means 100.
	MaxErrors int
	// MaxLineBytes is the longest line read; a longer one is a bad line. 0 means
	// 16 MiB.
	MaxLineBytes int
	// MaxSpan bounds how far a record's time may lie from the first record's, either
	// way; a record further away is a bad line that says how far. It keeps what
	// reads a trace (the analyzer's pass clock, chargeback's hourly refresh) from
	// stepping through a span one mistyped year chooses. 0 means DefaultMaxSpan.
	MaxSpan time.Duration
	// ReorderWindow, when positive, returns records in time order (order.go):
	// lines may come up to this much trace time before the latest line read and
	// are put back in place; a line further back is late. 0 reads in file order.
	ReorderWindow time.Duration
	// FutureSkew, when positive with ReorderWindow, bounds how far a line may lie
	// after the trace's clock unless the lines after it follow (a gap); a line
	// further ahead is a future line. 0 allows any (up to MaxSpan).
	FutureSkew time.Duration
	// MaxHeld bounds the records held for ordering; 0 means DefaultMaxHeld.
	MaxHeld int
}

// Defaults of ReaderOptions.
const (
	DefaultMaxErrors    = 100
	DefaultMaxLineBytes = 16 << 20
	DefaultMaxSpan      = 366 * 24 * time.Hour
)

// Reader reads Records from a trace. It is not safe for concurrent use.
type Reader struct {
	opts    ReaderOptions
	src     io.Reader
	br      *bufio.Reader
	started bool
	eof     bool
	line    int
	long    []byte
	dec     *decoder
	errs    []LineError
	skipped int
	err     error
	// firstMs is the first good record's time; 0 before it.
	firstMs int64
	ord     *orderer // nil when reading in file order
	phys    physics
}

// NewReader returns a Reader of the trace in r, gzip-compressed or not (it looks at
// the first bytes, so r need not be seekable).
func NewReader(r io.Reader, opts ReaderOptions) *Reader {
	if opts.MaxErrors <= 0 {
		opts.MaxErrors = DefaultMaxErrors
	}
	if opts.MaxLineBytes <= 0 {
		opts.MaxLineBytes = DefaultMaxLineBytes
	}
	if opts.MaxSpan <= 0 {
		opts.MaxSpan = DefaultMaxSpan
	}
	rd := &Reader{opts: opts, src: r, dec: newDecoder()}
	if opts.ReorderWindow > 0 {
		rd.ord = newOrderer(opts, func(line int, reason string) { rd.skipLine(line, reason) })
	}
	return rd
}

const readBufferBytes = 64 << 10

func (r *Reader) start() error {
	r.started = true
	br := bufio.NewReaderSize(r.src, readBufferBytes)
	magic, err := br.Peek(2)
	if err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("trace: read: %w", err)
	}
	if len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return fmt.Errorf("trace: gzip header: %w", err)
		}
		br = bufio.NewReaderSize(zr, readBufferBytes)
	}
	r.br = br
	return nil
}

// Next returns the next record, io.EOF after the last, or the error that stopped
// reading: a *LineError in strict mode (an *OrderError when ordering found late or
// future lines), or a read or decompression error. Once it has returned an error
// it returns the same one.
func (r *Reader) Next() (Record, error) {
	if r.ord != nil {
		return r.nextOrdered()
	}
	for {
		rec, err := r.nextLine()
		if err != nil {
			return Record{}, err
		}
		if reason := r.phys.check(rec); reason != "" {
			if err := r.badAt(r.line, reason); err != nil {
				return Record{}, err
			}
			continue
		}
		return rec, nil
	}
}

// nextOrdered returns the records in time order (order.go).
func (r *Reader) nextOrdered() (Record, error) {
	o := r.ord
	for {
		if r.err != nil {
			return Record{}, r.err
		}
		if o.first == nil || !r.opts.Strict {
			if h, ok := o.next(); ok {
				if reason := r.phys.check(h.rec); reason != "" {
					o.stats.Invalid++
					if err := r.badAt(h.line, reason); err != nil {
						return Record{}, err
					}
					continue
				}
				return h.rec, nil
			}
		}
		if o.eof {
			if o.first != nil && r.opts.Strict {
				r.err = &OrderError{Late: o.stats.Late, Future: o.stats.Future, First: *o.first}
				return Record{}, r.err
			}
			return Record{}, io.EOF
		}
		rec, err := r.nextLine()
		switch {
		case errors.Is(err, io.EOF):
			r.err = nil
			o.finish()
		case err != nil:
			return Record{}, err
		default:
			o.seq++
			o.add(held{rec: rec, ms: rec.TimeMs(), line: r.line, seq: o.seq})
		}
	}
}

// nextLine returns the next good line's record in file order.
func (r *Reader) nextLine() (Record, error) {
	if r.err != nil {
		return Record{}, r.err
	}
	if !r.started {
		if err := r.start(); err != nil {
			r.err = err
			return Record{}, err
		}
	}
	for {
		line, tooLong, err := r.readLine()
		if err != nil {
			r.err = err
			return Record{}, err
		}
		r.line++
		if tooLong {
			if err := r.bad("line is longer than " + strconv.Itoa(r.opts.MaxLineBytes) + " bytes"); err != nil {
				return Record{}, err
			}
			continue
		}
		if r.line == 1 {
			line = bytes.TrimPrefix(line, []byte("\xef\xbb\xbf")) // a UTF-8 byte order mark
		}
		if isBlank(line) {
			continue
		}
		rec, reason := r.dec.decode(line)
		if reason == "" {
			reason = r.checkSpan(rec.TimeMs())
		}
		if reason != "" {
			if err := r.bad(reason); err != nil {
				return Record{}, err
			}
			continue
		}
		r.phys.saw(rec)
		return rec, nil
	}
}

// checkSpan returns why a record at ms lies too far from the trace's first
// record, or "" (the first record sets where the trace is).
func (r *Reader) checkSpan(ms int64) string {
	if r.firstMs == 0 {
		r.firstMs = ms
		return ""
	}
	if ms-r.firstMs > r.opts.MaxSpan.Milliseconds() || r.firstMs-ms > r.opts.MaxSpan.Milliseconds() {
		// Durations overflow past 292 years: say how far in whole units of ms.
		way, gap := "after", ms-r.firstMs
		if gap < 0 {
			way, gap = "before", -gap
		}
		return fmt.Sprintf("ts: %s is %s %s the trace's first record (%s); a trace spans at most %s",
			time.UnixMilli(ms).UTC().Format(time.RFC3339), spanWords(gap), way,
			time.UnixMilli(r.firstMs).UTC().Format(time.RFC3339), spanWords(r.opts.MaxSpan.Milliseconds()))
	}
	return ""
}

// spanWords says a span of ms in years (over two) or days, with thousands
// separators: "7,973 years", "400 days".
func spanWords(ms int64) string {
	const day = 24 * 3600 * 1000
	if days := ms / day; days < 730 {
		return group(days) + " days"
	}
	return group(int64(math.Round(float64(ms)/(365.25*day)))) + " years"
}

func group(n int64) string {
	s := strconv.FormatInt(n, 10)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// bad records a rejected line; in strict mode it returns the error that stops
// reading.
func (r *Reader) bad(reason string) error { return r.badAt(r.line, reason) }

// badAt is bad for a line read before.
func (r *Reader) badAt(line int, reason string) error {
	if r.opts.Strict {
		r.err = &LineError{Line: line, Reason: reason}
		return r.err
	}
	r.skipLine(line, reason)
	return nil
}

// skipLine counts a skipped line and keeps it for a report.
func (r *Reader) skipLine(line int, reason string) {
	r.skipped++
	if len(r.errs) < r.opts.MaxErrors {
		r.errs = append(r.errs, LineError{Line: line, Reason: reason})
	}
}

func isBlank(b []byte) bool {
	for _, c := range b {
		if c != ' ' && c != '\t' && c != '\r' && c != '\n' {
			return false
		}
	}
	return true
}

// readLine returns the next line without its end, valid until the next call.
// tooLong reports a line over the limit, which it skips.
func (r *Reader) readLine() (line []byte, tooLong bool, err error) {
	if r.eof {
		return nil, false, io.EOF
	}
	if cap(r.long) > 1<<20 {
		r.long = nil // let a rare huge line's buffer go
	}
	frag, err := r.br.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		r.long = append(r.long[:0], frag...)
		for errors.Is(err, bufio.ErrBufferFull) {
			frag, err = r.br.ReadSlice('\n')
			if !tooLong && len(r.long)+len(frag) > r.opts.MaxLineBytes+2 {
				tooLong, r.long = true, r.long[:0]
			}
			if !tooLong {
				r.long = append(r.long, frag...)
			}
		}
		frag = r.long
	}
	switch {
	case errors.Is(err, io.EOF):
		r.eof = true
		if len(frag) == 0 && !tooLong {
			return nil, false, io.EOF
		}
	case err != nil:
		return nil, false, fmt.Errorf("trace: read line %d: %w", r.line+1, err)
	}
	frag = bytes.TrimSuffix(frag, []byte{'\n'})
	frag = bytes.TrimSuffix(frag, []byte{'\r'})
	if len(frag) > r.opts.MaxLineBytes {
		tooLong = true
	}
	return frag, tooLong, nil
}

// Line returns the number of lines read so far.
func (r *Reader) Line() int { return r.line }

// OrderStats returns what ordering did (zero when reading in file order).
func (r *Reader) OrderStats() OrderStats {
	if r.ord == nil {
		return OrderStats{}
	}
	return r.ord.stats
}

// Skipped returns how many bad lines a lenient Reader has skipped.
func (r *Reader) Skipped() int { return r.skipped }

// Errors returns the first bad lines a lenient Reader skipped (at most
// ReaderOptions.MaxErrors), in line order.
func (r *Reader) Errors() []LineError { return append([]LineError(nil), r.errs...) }
