// Command sim prints the four-strategy table for a simulated fleet:
//
//	go run ./scheduler/placement/sim/cmd -load 0.95 -seed 1
package main

import (
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/gpupool/gpupool/scheduler/placement/sim"
)

func main() {
	c := sim.DefaultConfig()
	flag.IntVar(&c.Clusters, "clusters", c.Clusters, "clusters")
	flag.IntVar(&c.NodesPerCluster, "nodes", c.NodesPerCluster, "nodes per cluster")
	flag.IntVar(&c.GPUsPerNode, "gpus", c.GPUsPerNode, "GPUs per node")
	flag.IntVar(&c.RackNodes, "rack", c.RackNodes, "nodes per rack (a block is two racks)")
	flag.DurationVar(&c.MinAgeReserve, "min-age-reserve", c.MinAgeReserve, "how long a job waits before backfill reserves for it")
	flag.Float64Var(&c.Slack, "slack", c.Slack, "relaxed backfill: jobs may run on reserved GPUs until the first promised start plus slack × the promised wait (0: EASY)")
	flag.BoolVar(&c.PackOnly, "pack-only", c.PackOnly, "place by bin-packing alone, not weighing the expected workload of job shapes")
	bySize := flag.Bool("by-size", false, "also print each strategy's p95 wait per job size")
	days := flag.Float64("days", 7, "simulated days")
	loads := flag.String("load", "0.95", "offered loads, comma-separated")
	seeds := flag.String("seed", "1", "seeds, comma-separated")
	strategies := flag.String("strategies", "counting,best-effort-fifo,strict-fifo,backfill,conservative-backfill", "strategies, comma-separated (conservative-backfill is the scheduler's default)")
	flag.Parse()
	c.Horizon = time.Duration(*days * 24 * float64(time.Hour))
	for _, l := range strings.Split(*loads, ",") {
		for _, s := range strings.Split(*seeds, ",") {
			var err error
			if c.Load, err = strconv.ParseFloat(l, 64); err != nil {
				fail(fmt.Errorf("-load %q: %w", l, err))
			}
			if c.Seed, err = strconv.ParseUint(s, 10, 64); err != nil {
				fail(fmt.Errorf("-seed %q: %w", s, err))
			}
			jobs := sim.Workload(c)
			var results []sim.Result
			for _, st := range strings.Split(*strategies, ",") {
				r, err := sim.Run(c, jobs, sim.Strategy(st))
				if err != nil {
					fail(err)
				}
				results = append(results, r)
			}
			fmt.Printf("\n%d clusters × %d nodes × %d GPUs, %.3g days, load %.2f, seed %d\n\n", c.Clusters, c.NodesPerCluster, c.GPUsPerNode, *days, c.Load, c.Seed)
			fmt.Print(sim.Table(results))
			if *bySize {
				fmt.Print("\n", sim.SizeTable(results, jobs))
			}
		}
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "sim:", err)
	os.Exit(1)
}
