package collector

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// cgroupRoot is a recorded cgroup v2 tree: a pod whose cgroup counted two OOM
// kills, a Slurm job with none, and a file that is not memory.events.
const (
	cgroupRoot = "testdata/cgroup"
	podCgroup  = "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod8d2f3e1a_7b4c_4e5f_9a0b_1c2d3e4f5a6b.slice"
	jobCgroup  = "/system.slice/slurmstepd.scope/job_5151"
)

func TestReadMemoryEvents(t *testing.T) {
	tests := []struct {
		name    string
		cgroup  string
		want    memoryEvents
		wantErr func(error) bool
	}{
		{"pod with two OOM kills", podCgroup, memoryEvents{OOM: 3, OOMKill: 2}, nil},
		{"slurm job without", jobCgroup, memoryEvents{}, nil},
		{"gone", "/kubepods.slice/kubepods-pod00000000_0000_0000_0000_000000000000.slice", memoryEvents{}, isGone},
		{"garbled", "/broken.slice", memoryEvents{}, func(err error) bool { return errors.Is(err, ErrBadMemoryEvents) }},
		{"climbs out", "/../etc", memoryEvents{}, func(err error) bool { return err != nil && !isGone(err) }},
		{"relative", "kubepods.slice", memoryEvents{}, func(err error) bool { return err != nil && !isGone(err) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := readMemoryEvents(cgroupRoot, tt.cgroup)
			if tt.wantErr != nil {
				if !tt.wantErr(err) {
					t.Fatalf("err = %v, not the kind wanted", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestParseMemoryEventsErrors(t *testing.T) {
	for _, in := range []string{"", "\n", "oom 1\n", "oom_kill\n", "oom_kill -1\n", "oom_kill 1 2\n", " 3\n"} {
		if _, err := parseMemoryEvents([]byte(in)); !errors.Is(err, ErrBadMemoryEvents) {
			t.Errorf("%q: err = %v, want ErrBadMemoryEvents", in, err)
		}
	}
}

func FuzzParseMemoryEvents(f *testing.F) {
	seeds := 0
	err := filepath.WalkDir(cgroupRoot, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.Name() != "memory.events" {
			return err
		}
		b, err := os.ReadFile(p)
		f.Add(b)
		seeds++
		return err
	})
	if err != nil || seeds != 3 {
		f.Fatalf("seeds from %s: %d, %v", cgroupRoot, seeds, err)
	}
	f.Add([]byte("oom_kill 18446744073709551615\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		ev, err := parseMemoryEvents(data)
		if err != nil {
			if !errors.Is(err, ErrBadMemoryEvents) || ev != (memoryEvents{}) {
				t.Fatalf("error %v with %+v", err, ev)
			}
		}
	})
}
