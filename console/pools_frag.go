package console

import (
	"context"
	"fmt"
	"html/template"
	"strings"
	"time"

	"github.com/gpupool/gpupool/scheduler"
	"github.com/gpupool/gpupool/scheduler/placement"
)

// fragmenter is a Scheduler that also reports its fragmentation figure (the
// scheduler API's client does: GET /v1/fragmentation).
type fragmenter interface {
	Fragmentation(ctx context.Context) ([]placement.Fragmentation, error)
}

// fragFinder is a Scheduler that also reports the open fragmentation findings
// (the scheduler API's client does: GET /v1/fragmentation's findings).
type fragFinder interface {
	FragmentationFindings(ctx context.Context) ([]scheduler.FragmentationFinding, error)
}

// fragFindingRow is one open fragmentation finding as the viewer may see it: the
// figures for every viewer; the plans in words only to a viewer who sees every
// team's jobs, since they name other teams' jobs. Another viewer gets Hidden,
// how many plans there are. The console's own credential does not decide it:
// a team viewer never sees a plan, whatever the console may read. NoPlan is
// the scheduler's why (no job in it), or, when the console's credential is a
// team's, how many plans the scheduler withheld from it.
type fragFindingRow struct {
	Cluster, Card     string
	Since             time.Time
	Open              time.Duration // Since to the last pass that saw it
	Stranded, Waiting int
	StrandedGPUHours  float64
	Plans             []string
	Hidden            int
	NoPlan            string
}

// fragRow is one cluster and card type's fragmentation with its bar: fleet
// aggregates, the same for every viewer (no job or team is in them).
type fragRow struct {
	placement.Fragmentation
	Bar template.HTML
}

// fragmentation reads the figure when the scheduler gives it; nothing when it
// does not (an older scheduler, or one that counts GPUs).
func (c *Console) fragmentation(ctx context.Context, d *poolsData, v viewer) error {
	fs, ok := c.sched.(fragmenter)
	if !ok {
		return nil
	}
	got, err := fs.Fragmentation(ctx)
	if err != nil {
		return err
	}
	for _, f := range got {
		d.Frag = append(d.Frag, fragRow{Fragmentation: f, Bar: fragBar(f)})
	}
	return c.fragFindings(ctx, d, v)
}

// fragFindings reads the open fragmentation findings when the scheduler gives
// them, each plan in words for a viewer who sees every team, counted for
// another.
func (c *Console) fragFindings(ctx context.Context, d *poolsData, v viewer) error {
	fs, ok := c.sched.(fragFinder)
	if !ok {
		return nil
	}
	got, err := fs.FragmentationFindings(ctx)
	if err != nil {
		return err
	}
	for _, f := range got {
		r := fragFindingRow{Cluster: f.Cluster, Card: f.Card, Since: f.Since, Open: f.LastSeen.Sub(f.Since), Stranded: f.Stranded,
			Waiting: f.Waiting, StrandedGPUHours: f.StrandedGPUHours, NoPlan: f.NoPlan}
		if v.all {
			for _, p := range f.Plans {
				r.Plans = append(r.Plans, p.String())
			}
		} else {
			r.Hidden = len(f.Plans)
		}
		d.FragFindings = append(d.FragFindings, r)
	}
	return nil
}

// fragBar draws a domain's GPUs as one bar: held (grey), free and usable by
// what waits (green), stranded (orange, hatched for those who cannot tell
// orange from green).
func fragBar(f placement.Fragmentation) template.HTML {
	const w, h = 160, 14
	if f.GPUs <= 0 {
		return ""
	}
	held, stranded := f.GPUs-f.Free, f.Stranded
	usable := f.Free - stranded
	title := fmt.Sprintf("%s %s: %d of %d GPUs held, %d free for what waits, %d stranded", f.Cluster, f.Card, held, f.GPUs, usable, stranded)
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="fragbar" role="img" aria-label="%s" xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d"><title>%s</title>`,
		template.HTMLEscapeString(title), w, h, w, h, template.HTMLEscapeString(title))
	b.WriteString(`<defs><pattern id="strand" width="4" height="4" patternUnits="userSpaceOnUse" patternTransform="rotate(45)"><rect width="4" height="4" fill="#E69F00"/><line x1="0" y1="0" x2="0" y2="4" stroke="#8c6d1f" stroke-width="1.5"/></pattern></defs>`)
	x := 0.0
	for _, seg := range []struct {
		n    int
		fill string
	}{{held, "#999999"}, {usable, "#009E73"}, {stranded, "url(#strand)"}} {
		width := float64(w) * float64(seg.n) / float64(f.GPUs)
		if seg.n > 0 {
			fmt.Fprintf(&b, `<rect x="%.1f" y="0" width="%.1f" height="%d" fill="%s"/>`, x, width, h, seg.fill)
		}
		x += width
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}
