// Command sim prints the four-strategy table for a simulated fleet:
//
//	go run ./scheduler/placement/sim/cmd -load 0.95 -seed 1
package main

import (
	"flag"
	"fmt"
	"time"

	"github.com/gpupool/gpupool/scheduler/placement/sim"
	"github.com/gpupool/gpupool/scheduler/placement/simcli"
)

var cmd = simcli.Cmd{Name: "sim"}

// strategies are the names -strategies takes, in the order tables list them.
var strategies = []string{string(sim.Counting), string(sim.BestEffort), string(sim.Strict), string(sim.Backfill), string(sim.Conservative)}

func main() {
	c := sim.DefaultConfig()
	flag.IntVar(&c.Clusters, "clusters", c.Clusters, "clusters")
	flag.IntVar(&c.NodesPerCluster, "nodes", c.NodesPerCluster, "nodes per cluster")
	flag.IntVar(&c.GPUsPerNode, "gpus", c.GPUsPerNode, "GPUs per node")
	flag.IntVar(&c.RackNodes, "rack", c.RackNodes, "nodes per rack (a block is two racks)")
	flag.DurationVar(&c.MinAgeReserve, "min-age-reserve", c.MinAgeReserve, "how long a job waits before backfill reserves for it")
	flag.Float64Var(&c.Slack, "slack", c.Slack, "relaxed backfill: jobs may run on reserved GPUs until the first promised start plus slack × the promised wait (0: EASY)")
	flag.IntVar(&c.Replan, "replan", c.Replan, "backfill: how many jobs per pass may start on reserved GPUs by re-planning the reservations they overlap to start no later (0: off)")
	flag.BoolVar(&c.PackOnly, "pack-only", c.PackOnly, "place by bin-packing alone, not weighing the expected workload of job shapes")
	bySize := flag.Bool("by-size", false, "also print each strategy's p95 wait per job size")
	days := flag.Float64("days", 7, "simulated days")
	loads := simcli.Floats{0.95}
	flag.Var(&loads, "load", "offered `loads`, comma-separated")
	seeds := simcli.Seeds(flag.CommandLine, 1)
	names := simcli.NamesVar(flag.CommandLine, "strategies", strategies, strategies, "`strategies`, comma-separated; conservative-backfill is the scheduler's default")
	flag.Parse()
	c.Horizon = time.Duration(*days * 24 * float64(time.Hour))
	for _, c.Load = range loads { // the fleet and every load, before any table
		if err := c.Validate(); err != nil {
			cmd.Usage(err)
		}
	}
	for _, c.Load = range loads {
		for _, c.Seed = range *seeds {
			table(c, *days, names.List, *bySize)
		}
	}
}

// table runs each strategy on c's workload and prints their table.
func table(c sim.Config, days float64, strategies []string, bySize bool) {
	jobs := sim.Workload(c)
	var results []sim.Result
	for _, st := range strategies {
		r, err := sim.Run(c, jobs, sim.Strategy(st))
		if err != nil {
			cmd.Fail(err)
		}
		results = append(results, r)
	}
	fmt.Printf("\n%d clusters × %d nodes × %d GPUs, %.3g days, load %.2f, seed %d\n\n", c.Clusters, c.NodesPerCluster, c.GPUsPerNode, days, c.Load, c.Seed)
	fmt.Print(sim.Table(results))
	if bySize {
		fmt.Print("\n", sim.SizeTable(results, jobs))
	}
}
