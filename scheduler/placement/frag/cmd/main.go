// Command frag runs the FGD paper's experiment on the Alibaba GPU trace of 2023
// and prints, per demand level, the share of GPU capacity each placement policy
// leaves unallocated:
//
//	go run ./scheduler/placement/frag/cmd -trace ../shared/data/alibaba-gpu-2023
//
// With -replay it replays the trace with time instead (arrivals and run times
// from the trace, a queue, every policy under each queue discipline) and prints
// a table per task file: utilisation, waits, stranded GPU-hours, tasks never
// started.
package main

import (
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/gpupool/gpupool/scheduler/placement/frag"
)

func main() {
	cfg := frag.DefaultConfig()
	dir := flag.String("trace", "../shared/data/alibaba-gpu-2023", "directory of the trace (nodes.csv, pods.csv)")
	tasks := flag.String("tasks", "pods.csv,pods_gpushare40.csv", "task files in the trace directory, comma-separated; one table each")
	seeds := flag.String("seed", "1,2,3,4,5", "seeds, comma-separated")
	policies := flag.String("policies", strings.Join(cfg.Policies, ","), "policies, comma-separated")
	flag.Float64Var(&cfg.Step, "step", cfg.Step, "demand step, as a share of the cluster's GPUs")
	flag.Float64Var(&cfg.MaxDemand, "max", cfg.MaxDemand, "the last demand level, as a share of the cluster's GPUs")
	rc := frag.DefaultReplayConfig()
	replay := flag.Bool("replay", false, "replay the trace with time (arrivals, run times, a queue) instead of the paper's experiment; the first -seed seeds it")
	queues := flag.String("queues", strings.Join(rc.Queues, ","), "with -replay: queue disciplines, comma-separated (fifo, reserve)")
	flag.Float64Var(&rc.Load, "load", rc.Load, "with -replay: offered GPU load over the window, as a share of the cluster's GPUs; sets the time compression")
	flag.Float64Var(&rc.Compress, "compress", rc.Compress, "with -replay: divide arrival times by this instead of deriving it from -load (0: from -load)")
	flag.Float64Var(&rc.Nodes, "nodes", rc.Nodes, "with -replay: share of the trace's nodes the cluster keeps (per GPU model and size)")
	flag.IntVar(&rc.Samples, "samples", rc.Samples, "with -replay: stranded-capacity samples over the window")
	flag.Parse()
	cfg.Policies = strings.Split(*policies, ",")
	cfg.Seeds = nil
	for _, s := range strings.Split(*seeds, ",") {
		v, err := strconv.ParseUint(strings.TrimSpace(s), 10, 64)
		if err != nil {
			fail(fmt.Errorf("-seed %q: not a whole number", s))
		}
		cfg.Seeds = append(cfg.Seeds, v)
	}
	if *replay {
		rc.Policies, rc.Queues, rc.Seed = cfg.Policies, strings.Split(*queues, ","), cfg.Seeds[0]
		runReplay(*dir, strings.Split(*tasks, ","), rc)
		return
	}
	for _, f := range strings.Split(*tasks, ",") {
		tr, err := frag.LoadTrace(*dir, f)
		if err != nil {
			fail(err)
		}
		res, err := frag.Run(tr, cfg)
		if err != nil {
			fail(err)
		}
		fmt.Printf("\n%s/%s: %d nodes, %d GPUs, %d tasks; seeds %s; GPU capacity left unallocated (%%, mean over seeds)\n\n", *dir, f, res.Nodes, res.GPUs, res.Tasks, *seeds)
		fmt.Print(res.Table())
	}
}

func runReplay(dir string, files []string, rc frag.ReplayConfig) {
	for _, f := range files {
		tr, err := frag.LoadTrace(dir, f)
		if err != nil {
			fail(err)
		}
		res, err := frag.Replay(tr, rc)
		if err != nil {
			fail(err)
		}
		fmt.Printf("\n%s\n\n%s", res.Caption(f), res.Table())
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "frag:", err)
	os.Exit(1)
}
