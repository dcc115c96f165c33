package console

import (
	"math"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gpupool/gpupool/auth"
	"github.com/gpupool/gpupool/reports/billing"
	"github.com/gpupool/gpupool/scheduler"
	"github.com/gpupool/gpupool/schemas"
)

func TestLocalPath(t *testing.T) {
	for in, want := range map[string]string{
		"/jobs?state=running":  "/jobs?state=running",
		"":                     "/fleet",
		"https://evil.example": "/fleet",
		"//evil.example/x":     "/fleet",
		"/\\evil.example":      "/fleet",
	} {
		if got := localPath(in); got != want {
			t.Errorf("localPath(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestSameOrigin(t *testing.T) {
	for _, tc := range []struct {
		name, origin, site string
		ok                 bool
	}{
		{"no browser headers", "", "", true},
		{"same origin", "http://console.example", "same-origin", true},
		{"another site", "https://evil.example", "", false},
		{"cross-site fetch", "", "cross-site", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest("POST", "http://console.example/login", nil)
			if tc.origin != "" {
				r.Header.Set("Origin", tc.origin)
			}
			if tc.site != "" {
				r.Header.Set("Sec-Fetch-Site", tc.site)
			}
			if got := sameOrigin(r); got != tc.ok {
				t.Errorf("sameOrigin = %v, want %v", got, tc.ok)
			}
		})
	}
}

// TestScopeReportLeavesTheCachedReport checks that cutting a report to a team
// copies it: the cached report every viewer shares keeps every team.
func TestScopeReportLeavesTheCachedReport(t *testing.T) {
	c1, c2, i1, i2 := 10.0, 30.0, 1.0, 3.0
	rep := billing.Report{Currency: "USD",
		Teams: []billing.Line{
			{Team: "nlp", Figures: billing.Figures{GPUHours: 4, Cost: &c1, IdleCost: &i1, Currency: "USD"}},
			{Team: "vision", Figures: billing.Figures{GPUHours: 6, Cost: &c2, IdleCost: &i2, Currency: "USD"}},
		},
		Projects: []billing.Line{{Team: "nlp", Project: "a"}, {Team: "vision", Project: "b"}},
		Cards:    []billing.Line{{Card: "H100-80GB"}},
	}
	v := viewerOf(auth.Identity{Name: "v", Method: "token", Roles: []auth.Role{auth.TeamRole("vision")}})
	got := scopeReport(rep, v)
	if len(got.Teams) != 1 || got.Teams[0].Team != "vision" || len(got.Projects) != 1 || got.Cards != nil {
		t.Errorf("scoped report: teams %v, projects %v, cards %v", got.Teams, got.Projects, got.Cards)
	}
	if got.Totals.GPUHours != 6 || got.Totals.Cost == nil || *got.Totals.Cost != 30 {
		t.Errorf("scoped totals %+v, want vision's 6 GPU-hours and 30 USD", got.Totals.Figures)
	}
	if rep.Teams[0].Team != "nlp" || rep.Teams[1].Team != "vision" || rep.Projects[0].Project != "a" || len(rep.Cards) != 1 {
		t.Errorf("the shared report changed: teams %v, projects %v", rep.Teams, rep.Projects)
	}
}

func TestSparkline(t *testing.T) {
	svg := string(sparkline("x", []float64{0.1, 0.5, math.NaN(), 1.2}))
	if strings.Count(svg, "<polyline") != 1 || !strings.Contains(svg, "spark-dot") || !strings.Contains(svg, "spark-end") {
		t.Errorf("sparkline: want one line (before the gap), one dot (after it) and the end marker:\n%s", svg)
	}
	if strings.Contains(svg, `cy="-`) {
		t.Errorf("sparkline: a value over 1 is drawn outside the box:\n%s", svg)
	}
}

func TestNextStep(t *testing.T) {
	since := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	ps := []scheduler.Policy{
		{Name: "dev-idle", Finding: schemas.KindIdle, Pools: []string{"dev"}, DryRun: true,
			Steps: []scheduler.Step{{Action: "notify", After: 30 * time.Minute}, {Action: "reclaim", After: 15 * time.Minute}}},
		{Name: "zombie-kill", Finding: schemas.KindZombie, Steps: []scheduler.Step{{Action: "kill", After: 10 * time.Minute}}},
	}
	idle := schemas.Finding{Kind: schemas.KindIdle, Pool: "dev", State: schemas.StateOpen, Severity: schemas.SeverityWarning, Since: since}
	last := since.Add(40 * time.Minute)
	for _, tc := range []struct {
		name  string
		f     schemas.Finding
		taken map[string]int
		want  string
	}{
		{"first step from since", idle, nil, "notify at 2026-11-30 10:30 (dev-idle, dry run: recorded only)"},
		{"next step after the last action", idle, map[string]int{"dev-idle": 1}, "reclaim at 2026-11-30 10:55 (dev-idle, dry run: recorded only)"},
		{"every step taken", idle, map[string]int{"dev-idle": 2}, "dev-idle: every step taken"},
		{"another pool", schemas.Finding{Kind: schemas.KindIdle, Pool: "training-prod", State: schemas.StateOpen, Since: since}, nil, ""},
		{"resolved", schemas.Finding{Kind: schemas.KindZombie, State: schemas.StateResolved, Since: since}, nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := nextStep(ps, tc.f, tc.taken, last); got != tc.want {
				t.Errorf("nextStep = %q, want %q", got, tc.want)
			}
		})
	}
}
