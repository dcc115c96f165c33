package attribution

import (
	"maps"
	"slices"

	"github.com/gpupool/gpupool/collector"
	"github.com/gpupool/gpupool/schemas"
)

// sanitize makes what attribution read from places gpupool does not control
// (pod labels, a process's environment, Slurm's variables, mapping rules
// expanded with them) fit the identifier rules of schemas' ident.go, so that
// the job events built from it are never dead-lettered and never carry a 7 MB
// string: names (team, project, queue, pool, workload) and the job key have
// each character outside their set replaced by "_" and are cut to their
// limit; the model name and labels are made printable and cut; labels past
// MaxLabels are dropped (the first in key order are kept). It returns the
// fields it changed, for the counter and the log line; info's Labels map is
// replaced, never modified, when a label changes.
func sanitize(info *collector.JobInfo) (changed []string) {
	for _, f := range [...]struct {
		name string
		v    *string
		fix  func(string) (string, bool)
	}{
		{"job", &info.Job, schemas.SanitizeKey}, {"team", &info.Team, schemas.SanitizeName},
		{"project", &info.Project, schemas.SanitizeName}, {"queue", &info.Queue, schemas.SanitizeName},
		{"pool", &info.Pool, schemas.SanitizeName}, {"workload", &info.Workload, schemas.SanitizeName},
		{"model_name", &info.ModelName, schemas.SanitizeText},
	} {
		if v, ok := f.fix(*f.v); ok {
			*f.v = v
			changed = append(changed, f.name)
		}
	}
	if schemas.CheckLabels("labels", info.Labels) != nil {
		labels := make(map[string]string, min(len(info.Labels), schemas.MaxLabels))
		for _, k := range slices.Sorted(maps.Keys(info.Labels)) {
			if len(labels) == schemas.MaxLabels {
				break
			}
			key, _ := schemas.SanitizeText(k)
			if key == "" {
				continue
			}
			labels[key], _ = schemas.SanitizeText(info.Labels[k])
		}
		info.Labels = labels
		changed = append(changed, "labels")
	}
	return changed
}
