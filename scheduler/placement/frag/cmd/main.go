// Command frag runs the FGD paper's experiment on the Alibaba GPU trace of 2023
// and prints, per demand level, the share of GPU capacity each placement policy
// leaves unallocated:
//
//	go run ./scheduler/placement/frag/cmd -trace ../shared/data/alibaba-gpu-2023
//
// With -replay it replays the trace with time instead (arrivals and run times
// from the trace, a queue, every policy under each queue discipline) and prints
// a table per task file: utilisation, waits, stranded GPU-hours, tasks never
// started. Two rows place the tasks with the scheduler's own placement
// (conservative backfill), trying a task's GPU models in the nodes' order
// ("engine | backfill") and small nodes' models first ("engine, small cards
// first | backfill"); -engine=false leaves them out. -gpu-only drops the
// tasks' CPU and memory for every row, as the engine's rows always do.
package main

import (
	"flag"
	"fmt"

	"github.com/gpupool/gpupool/scheduler/placement/frag"
	"github.com/gpupool/gpupool/scheduler/placement/frag/enginereplay"
	"github.com/gpupool/gpupool/scheduler/placement/simcli"
)

var cmd = simcli.Cmd{Name: "frag"}

func main() {
	cfg := frag.DefaultConfig()
	dir := flag.String("trace", "../shared/data/alibaba-gpu-2023", "directory of the trace (nodes.csv, pods.csv)")
	tasks := simcli.NamesVar(flag.CommandLine, "tasks", []string{"pods.csv", "pods_gpushare40.csv"}, nil, "task `files` in the trace directory, comma-separated; one table each")
	seeds := simcli.Seeds(flag.CommandLine, cfg.Seeds...)
	policies := simcli.NamesVar(flag.CommandLine, "policies", cfg.Policies, frag.PolicyNames, "`policies`, comma-separated")
	flag.Float64Var(&cfg.Step, "step", cfg.Step, "demand step, as a share of the cluster's GPUs")
	flag.Float64Var(&cfg.MaxDemand, "max", cfg.MaxDemand, "the last demand level, as a share of the cluster's GPUs")
	rc := frag.DefaultReplayConfig()
	replay := flag.Bool("replay", false, "replay the trace with time (arrivals, run times, a queue) instead of the paper's experiment; the first -seed seeds it")
	queues := simcli.NamesVar(flag.CommandLine, "queues", rc.Queues, frag.QueueNames, "with -replay: queue `disciplines`, comma-separated")
	flag.Float64Var(&rc.Load, "load", rc.Load, "with -replay: offered GPU load over the window, as a share of the cluster's GPUs; sets the time compression")
	flag.Float64Var(&rc.Compress, "compress", rc.Compress, "with -replay: divide arrival times by this instead of deriving it from -load (0: from -load)")
	flag.Float64Var(&rc.Nodes, "nodes", rc.Nodes, "with -replay: share of the trace's nodes the cluster keeps (per GPU model and size)")
	flag.IntVar(&rc.Samples, "samples", rc.Samples, "with -replay: stranded-capacity samples over the window")
	engine := flag.Bool("engine", true, "with -replay: add the engine's rows (the scheduler's own placement; a minute or two per row and file)")
	flag.BoolVar(&rc.GPUOnly, "gpu-only", rc.GPUOnly, "with -replay: drop the tasks' CPU and memory for every policy, as the engine's rows (which model neither) always do")
	flag.Parse()
	cfg.Policies, cfg.Seeds = policies.List, *seeds
	if *replay {
		rc.Policies, rc.Queues, rc.Seed = cfg.Policies, queues.List, cfg.Seeds[0]
		runReplay(*dir, tasks.List, rc, *engine)
		return
	}
	run(*dir, tasks.List, cfg)
}

// run is the paper's experiment on each task file.
func run(dir string, files []string, cfg frag.Config) {
	if err := cfg.Validate(); err != nil {
		cmd.Usage(err)
	}
	for _, f := range files {
		tr, err := frag.LoadTrace(dir, f)
		if err != nil {
			cmd.Fail(err)
		}
		res, err := frag.Run(tr, cfg)
		if err != nil {
			cmd.Fail(err)
		}
		fmt.Printf("\n%s/%s: %d nodes, %d GPUs, %d tasks; seeds %s; GPU capacity left unallocated (%%, mean over seeds)\n\n", dir, f, res.Nodes, res.GPUs, res.Tasks, (*simcli.Uints)(&cfg.Seeds))
		fmt.Print(res.Table())
	}
}

func runReplay(dir string, files []string, rc frag.ReplayConfig, engine bool) {
	if err := rc.Validate(); err != nil {
		cmd.Usage(err)
	}
	var engines []enginereplay.Config
	if engine {
		engines = enginereplay.Configs(rc.Samples)
	}
	for _, f := range files {
		tr, err := frag.LoadTrace(dir, f)
		if err != nil {
			cmd.Fail(err)
		}
		res, err := enginereplay.Replay(tr, rc, engines...)
		if err != nil {
			cmd.Fail(err)
		}
		fmt.Printf("\n%s\n\n%s", res.Caption(f), res.Table())
	}
}
