package clickhouse

import (
	"bytes"
	"reflect"
	"testing"
	"time"

	chproto "github.com/ClickHouse/ch-go/proto"
	"github.com/ClickHouse/clickhouse-go/v2/lib/column"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
	"github.com/ClickHouse/clickhouse-go/v2/lib/proto"

	"github.com/gpupool/gpupool/store"
)

// These helpers stand in for a server: values go into clickhouse-go's own column
// implementations exactly as Insert appends them to a batch, the block is encoded
// in the Native format, decoded as clickhouse-go decodes a server's reply, and read
// back through readRows, the function Query uses. What they cannot show is what a
// server does with the bytes; the integration tests do that.

// testCol is a column to round-trip: its ClickHouse type and the Go slice to
// append (what a batch column's Append receives).
type testCol struct {
	name, typ string
	values    any
}

// encodeBlock appends every column and returns the block in the Native format.
func encodeBlock(t *testing.T, cols []testCol) []byte {
	t.Helper()
	b := proto.NewBlock()
	b.ServerContext.Timezone = time.UTC
	for _, c := range cols {
		if err := b.AddColumn(c.name, column.Type(c.typ)); err != nil {
			t.Fatalf("column %s %s: %v", c.name, c.typ, err)
		}
	}
	for i, c := range cols {
		if _, err := b.Columns[i].Append(c.values); err != nil {
			t.Fatalf("append %T to %s %s: %v", c.values, c.name, c.typ, err)
		}
	}
	var buf chproto.Buffer
	if err := b.Encode(&buf, proto.DBMS_TCP_PROTOCOL_VERSION); err != nil {
		t.Fatalf("encode block: %v", err)
	}
	return buf.Buf
}

// roundTrip encodes cols, decodes the block and reads it with readRows. Dates are
// decoded in UTC, as Query asks clickhouse-go to (WithUserLocation).
func roundTrip(t *testing.T, cols []testCol) *store.Result {
	t.Helper()
	data := encodeBlock(t, cols)
	dec := proto.Block{ServerContext: &column.ServerContext{Timezone: time.UTC}}
	if err := dec.Decode(chproto.NewReader(bytes.NewReader(data)), proto.DBMS_TCP_PROTOCOL_VERSION); err != nil {
		t.Fatalf("decode block: %v", err)
	}
	res, err := readRows(&blockRows{b: &dec})
	if err != nil {
		t.Fatalf("readRows: %v", err)
	}
	return res
}

// blockRows is driver.Rows over one decoded block, scanning as clickhouse-go's
// rows.Scan does (each column's ScanRow).
type blockRows struct {
	driver.Rows // methods readRows does not call
	b           *proto.Block
	row         int
}

func (r *blockRows) Next() bool { r.row++; return r.row <= r.b.Rows() }
func (r *blockRows) Err() error { return nil }
func (r *blockRows) Scan(dest ...any) error {
	for i, d := range dest {
		if err := r.b.Columns[i].ScanRow(d, r.row-1); err != nil {
			return err
		}
	}
	return nil
}
func (r *blockRows) ColumnTypes() []driver.ColumnType {
	out := make([]driver.ColumnType, len(r.b.Columns))
	for i, c := range r.b.Columns {
		out[i] = colType{c}
	}
	return out
}

type colType struct{ c column.Interface }

func (c colType) Name() string             { return c.c.Name() }
func (c colType) Nullable() bool           { return false }
func (c colType) ScanType() reflect.Type   { return c.c.ScanType() }
func (c colType) DatabaseTypeName() string { return string(c.c.Type()) }
