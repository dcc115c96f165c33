package bench

import (
	"bytes"
	"os"
	"runtime/metrics"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// procSample is one look at the process while the pipeline runs.
type procSample struct {
	at                time.Time
	published, stored uint64
	rssBytes          uint64
	heapBytes         uint64 // the Go heap's live and not yet swept objects
	goBytes           uint64 // everything the Go runtime has mapped
	load1             float64
}

// sampler looks at the process every interval until stop is called.
type sampler struct {
	mu      sync.Mutex
	samples []procSample
	stopped chan struct{}
	done    chan struct{}
}

func startSampler(every time.Duration, counts func() (uint64, uint64)) *sampler {
	s := &sampler{stopped: make(chan struct{}), done: make(chan struct{})}
	ms := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/memory/classes/total:bytes"}}
	go func() {
		defer close(s.done)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			metrics.Read(ms)
			p := procSample{at: time.Now(), rssBytes: rssBytes(), heapBytes: ms[0].Value.Uint64(), goBytes: ms[1].Value.Uint64(), load1: loadAvg()}
			p.published, p.stored = counts()
			s.mu.Lock()
			s.samples = append(s.samples, p)
			s.mu.Unlock()
			select {
			case <-s.stopped:
				return
			case <-t.C:
			}
		}
	}()
	return s
}

// stop ends the sampling and returns the samples.
func (s *sampler) stop() []procSample {
	close(s.stopped)
	<-s.done
	return s.samples
}

// rssBytes is the process's resident set now (/proc/self/statm).
func rssBytes() uint64 {
	data, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(data))
	if len(f) < 2 {
		return 0
	}
	pages, _ := strconv.ParseUint(f[1], 10, 64)
	return pages * uint64(os.Getpagesize())
}

// peakRSSBytes is the process's resident set high-water mark (VmHWM).
func peakRSSBytes() uint64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for line := range bytes.Lines(data) {
		if v, ok := bytes.CutPrefix(line, []byte("VmHWM:")); ok {
			kb, _ := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(string(v)), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// loadAvg is the machine's 1-minute load average.
func loadAvg() float64 {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(data))
	if len(f) == 0 {
		return 0
	}
	v, _ := strconv.ParseFloat(f[0], 64)
	return v
}

// processCPU is the CPU time every thread of the process has used, Go's and
// the native library's.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// ingestLag is the wall time from a row's publication (the bus acknowledged it)
// to its storage, read off the two counts' curves as if rows were stored in the
// order published: for every sample, the rows stored since the one before took
// the time since the published count first reached the stored one. The result
// is the lags' quantiles weighted by rows (q in 0..1).
func ingestLag(samples []procSample, qs ...float64) []time.Duration {
	type lag struct {
		d    time.Duration
		rows uint64
	}
	var lags []lag
	var total uint64
	j := 0
	for i := 1; i < len(samples); i++ {
		s := samples[i]
		rows := s.stored - min(samples[i-1].stored, s.stored)
		if rows == 0 {
			continue
		}
		for j < i && samples[j].published < s.stored {
			j++
		}
		lags = append(lags, lag{s.at.Sub(samples[j].at), rows})
		total += rows
	}
	out := make([]time.Duration, len(qs))
	if total == 0 {
		return out
	}
	slices.SortFunc(lags, func(a, b lag) int { return int(a.d - b.d) })
	for k, q := range qs {
		want, seen := uint64(q*float64(total)), uint64(0)
		for _, l := range lags {
			seen += l.rows
			if seen >= want {
				out[k] = l.d
				break
			}
		}
	}
	return out
}

// median is the middle of ds (the mean of the two middle ones when even).
func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
