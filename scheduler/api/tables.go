package api

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/gpupool/gpupool/scheduler"
)

// The tables `gpupool queue ls`, `jobs ls` and `actions ls` print: one row per
// queue and card type, per job, per audit row, aligned for a terminal.

// WriteQueues writes queues with their quota and use per card type.
func WriteQueues(w io.Writer, qs []scheduler.QueueStatus) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "QUEUE\tPOOL\tTEAM\tCOHORT\tWEIGHT\tPENDING\tRUNNING\tRECLAIMING\tCARD\tUSED/NOMINAL\tBORROWED\tBORROW LIMIT")
	for _, s := range qs {
		head := fmt.Sprintf("%s\t%s\t%s\t%s\t%g\t%d\t%d\t%d\t", s.Name, s.Pool, dash(s.Team), dash(s.Cohort), s.Weight, s.Pending, s.Running, s.Reclaiming)
		if len(s.Cards) == 0 {
			fmt.Fprint(tw, head, "-\t-\t-\t-\n")
		}
		for i, u := range s.Cards {
			limit := "none"
			if u.BorrowingLimit != nil {
				limit = fmt.Sprint(*u.BorrowingLimit)
			}
			if i > 0 {
				head = strings.Repeat("\t", 8)
			}
			fmt.Fprintf(tw, "%s%s\t%d/%d\t%d\t%s\n", head, u.Card, u.Used, u.Nominal, u.Borrowed, limit)
		}
	}
	return tw.Flush()
}

// WriteJobs writes jobs with their state, where they run or are reserved,
// when a queued one is expected to start, and why they wait, are reclaimed or
// ended.
func WriteJobs(w io.Writer, jobs []scheduler.Job) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "JOB\tQUEUE\tTEAM\tSTATE\tATTEMPT\tGPUS\tCARD\tCLUSTER\tNODES\tPRIORITY\tQUEUE WAIT\tEXPECTED START\tWHY")
	for _, x := range jobs {
		card := x.Card
		if card == "" {
			card = x.Spec.Card
			if card == "" {
				card = fmt.Sprintf("≥%d GiB", x.Spec.MinMemoryGiB)
			}
		}
		why := x.WaitReason
		switch x.State {
		case scheduler.StateReclaiming:
			why = x.ReclaimReason
		case scheduler.StateFinished:
			why = x.Status
		}
		wait := time.Duration(x.QueueWaitS * float64(time.Second)).Round(time.Second)
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%d\t%s\t%s\t%s\t%d\t%s\t%s\t%s\n", x.AttemptKey(), x.Spec.Queue, x.Spec.Team, x.State, x.Attempt,
			x.Spec.GPUs, card, dash(x.Cluster), jobNodes(x), x.Priority, wait, expectedStart(x), why)
	}
	return tw.Flush()
}

// maxNodes is how many node names a NODES cell lists before "+N".
const maxNodes = 3

// jobNodes is where a job runs (its placement's nodes) or, queued, the nodes
// its reservation holds ("reserved n1,n2"); "-" for neither.
func jobNodes(x scheduler.Job) string {
	allocs, prefix := x.Placement, ""
	if x.State == scheduler.StateQueued {
		allocs, prefix = x.Reserved, "reserved "
	}
	if len(allocs) == 0 {
		return "-"
	}
	var names []string
	for i, a := range allocs {
		if i == maxNodes {
			names = append(names, fmt.Sprintf("+%d", len(allocs)-maxNodes))
			break
		}
		names = append(names, a.Node)
	}
	return prefix + strings.Join(names, ",")
}

// expectedStart is when a queued job is expected to start, in UTC to the
// minute; "-" when it is not queued or no start can be promised.
func expectedStart(x scheduler.Job) string {
	if x.State != scheduler.StateQueued || x.ExpectedStart.IsZero() {
		return "-"
	}
	return x.ExpectedStart.UTC().Format("2006-01-02 15:04")
}

// WriteActions writes audit rows, oldest first, with who asked for each change
// made through the API (ACTOR).
func WriteActions(w io.Writer, rows []scheduler.Action) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TIME\tDECISION\tOUTCOME\tJOB\tPOOL\tPOLICY\tEXECUTOR\tACTOR\tREASON")
	for _, r := range rows {
		policy := r.Policy
		if policy != "" {
			policy += fmt.Sprintf("[%d]", r.Step)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Time.UTC().Format("2006-01-02 15:04:05"), r.Decision, r.Outcome,
			dash(r.Job), dash(r.Pool), dash(policy), dash(r.Executor), dash(r.Actor), strings.ReplaceAll(r.Reason, "\n", " "))
	}
	return tw.Flush()
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// Print writes v as indented JSON when asJSON, else with table: the output of
// every CLI command that reads the API.
func Print(w io.Writer, asJSON bool, v any, table func(w io.Writer) error) error {
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	}
	return table(w)
}
