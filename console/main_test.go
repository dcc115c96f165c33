package console

import (
	"flag"
	"testing"

	"github.com/gpupool/gpupool/store/chdb/chdbtest"
)

var updateScreenshots = flag.Bool("update-screenshots", false, "write the browser test's screenshots into docs/console/")

func TestMain(m *testing.M) { chdbtest.Main(m) }
