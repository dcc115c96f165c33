package console

import (
	"net/http"
	"strings"
	"testing"

	"github.com/gpupool/gpupool/scheduler"
)

// TestPoolsKeepMIGApart: a pool's MIG instances are shown beside its GPUs,
// never added to them (an instance is a slice of a GPU, not one).
func TestPoolsKeepMIGApart(t *testing.T) {
	f := &fakeScheduler{
		model: scheduler.Model{
			Cards: []scheduler.Card{{Name: "H100-80GB", MemoryGiB: 80}},
			Pools: []scheduler.Pool{{Name: "train", Capacity: map[string]int{"H100-80GB": 8, "H100-80GB/1g.10gb": 14}}},
		},
		queues: []scheduler.QueueStatus{{Name: "nlp", Pool: "train", Team: "nlp", Running: 2, Cards: []scheduler.CardUsage{
			{Card: "H100-80GB", Nominal: 8, Used: 4}, {Card: "H100-80GB/1g.10gb", Nominal: 14, Used: 3}}}},
	}
	srv := testConsole(t, simStore(t), f)
	code, body, _ := get(t, srv, "/pools", "tok-admin")
	if code != http.StatusOK {
		t.Fatalf("pools: %d\n%.600s", code, body)
	}
	pools := section(body, "pools")
	if !strings.Contains(pools, `<td class="n">4 <span class="muted">+3 MIG</span></td>`) {
		t.Errorf("the pools table does not show 4 GPUs and 3 MIG instances apart:\n%s", pools)
	}
	if strings.Contains(pools, `<td class="n">7`) {
		t.Errorf("the pools table adds instances to GPUs:\n%s", pools)
	}
}
