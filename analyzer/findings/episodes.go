package findings

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/gpupool/gpupool/schemas"
	"github.com/gpupool/gpupool/store"
)

// EpisodeFilter selects finding episodes to read; empty fields match everything.
type EpisodeFilter struct {
	// From and To bound the episodes' last_seen (To exclusive; zero: unbounded).
	From, To time.Time
	// ID and Episode name one episode (Episode 0: every episode of ID).
	ID      string
	Episode uint32
	Job     string
	Kind    schemas.FindingKind
	// Teams keeps the episodes of these teams only (nil: every team).
	Teams []string
	// Limit keeps the latest-seen episodes (0: all).
	Limit int
}

// Episodes reads the latest version of every finding episode f selects, latest
// seen first, from q's findings table: what the console lists. Unlike History it
// filters on the job, team and kind in the store.
func Episodes(ctx context.Context, q store.Querier, f EpisodeFilter) ([]schemas.Finding, error) {
	var where []string
	p := store.Params{}
	add := func(cond, name, value string) {
		where = append(where, cond)
		p[name] = value
	}
	if !f.From.IsZero() {
		add("last_seen >= {from:DateTime64(3, 'UTC')}", "from", tsParam(f.From))
	}
	if !f.To.IsZero() {
		add("first_seen < {to:DateTime64(3, 'UTC')}", "to", tsParam(f.To))
	}
	if f.ID != "" {
		add("id = {id:String}", "id", f.ID)
	}
	if f.Episode > 0 {
		add("episode = {episode:UInt32}", "episode", strconv.FormatUint(uint64(f.Episode), 10))
	}
	if f.Job != "" {
		add("job = {job:String}", "job", f.Job)
	}
	if f.Kind != "" {
		add("kind = {kind:String}", "kind", string(f.Kind))
	}
	if f.Teams != nil {
		add("team IN {teams:Array(String)}", "teams", arrayParam(f.Teams))
	}
	sql := "SELECT id," + findingColumns + "\nFROM " + Table
	if len(where) > 0 {
		sql += "\nWHERE " + strings.Join(where, " AND ")
	}
	sql += "\nGROUP BY id, episode\nORDER BY last_seen_ DESC, id"
	if f.Limit > 0 {
		sql += " LIMIT " + strconv.Itoa(f.Limit)
	}
	res, err := q.Query(ctx, sql, p)
	if err != nil {
		return nil, fmt.Errorf("findings: read episodes: %w", err)
	}
	fs, err := readFindings(res)
	if err != nil {
		return nil, fmt.Errorf("findings: read episodes: %w", err)
	}
	return fs, nil
}
