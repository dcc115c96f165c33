package chargeback

import (
	"flag"
	"testing"

	"github.com/gpupool/gpupool/store/chdb/chdbtest"
)

var update = flag.Bool("update", false, "rewrite testdata golden files and the raw query in docs/finance.md")

func TestMain(m *testing.M) { chdbtest.Main(m) }
