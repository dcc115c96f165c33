package schemas

import "flag"

var update = flag.Bool("update", false, "rewrite testdata files")
