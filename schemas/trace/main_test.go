package trace

import (
	"flag"
	"fmt"
)

var update = flag.Bool("update", false, "rewrite testdata golden files")

// recordString renders a record for golden files and comparisons; unlike
// reflect.DeepEqual it treats NaN (Missing) as equal to itself.
func recordString(r Record) string {
	switch {
	case r.GPU != nil:
		return fmt.Sprintf("%v %+v", r.Kind, *r.GPU)
	case r.Process != nil:
		return fmt.Sprintf("%v %+v", r.Kind, *r.Process)
	case r.Job != nil:
		return fmt.Sprintf("%v %+v", r.Kind, *r.Job)
	}
	return fmt.Sprintf("%v <empty>", r.Kind)
}
