package findings

import (
	"encoding/json"
	"log/slog"
	"testing"
	"time"

	"github.com/gpupool/gpupool/bus"
	"github.com/gpupool/gpupool/bus/bustest"
	"github.com/gpupool/gpupool/schemas"
)

func TestJetStreamPublisher(t *testing.T) {
	b := bustest.Start(t)
	ctx := t.Context()
	// gpupool's streams (bustest creates them) capture gpupool.findings.>.
	stream, err := b.JS.Stream(ctx, bus.StreamFindings)
	if err != nil {
		t.Fatal(err)
	}
	f := schemas.Finding{ID: "abc", Kind: schemas.KindIdle, Episode: 1, Job: "j", UpdatedAt: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	a := &Analyzer{pub: JetStreamPublisher{JS: b.JS}}
	a.log = discardLog()
	// The same event twice (a retried pass): one message, by its ID.
	for range 2 {
		if sent, failed := a.publish(ctx, []event{{schemas.EventOpened, f}}); sent != 1 || failed != 0 {
			t.Fatalf("sent %d, failed %d", sent, failed)
		}
	}
	info, err := stream.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Msgs != 1 {
		t.Errorf("stream holds %d messages, want 1", info.State.Msgs)
	}
	msg, err := stream.GetLastMsgForSubject(ctx, "gpupool.findings.idle")
	if err != nil {
		t.Fatal(err)
	}
	var v map[string]any
	if err := json.Unmarshal(msg.Data, &v); err != nil || v["event"] != string(schemas.EventOpened) || v["job"] != "j" {
		t.Errorf("message %s: %v", msg.Data, err)
	}
}

func discardLog() *slog.Logger { return slog.New(slog.DiscardHandler) }
