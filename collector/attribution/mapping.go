package attribution

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"

	"go.yaml.in/yaml/v3"
)

// The mapping file (Config.MappingFile) attributes processes that no scheduler
// knows, and fills ownership that Kubernetes labels or Slurm leave empty. It is YAML
// (JSON, being YAML, works too), parsed strictly: an unknown key is an error.
//
//	rules:                          # tried in order; the first that matches wins
//	  - name: vllm-serving          # optional, for error messages
//	    match:                      # every selector given must match; at least one
//	      exe: python3              # executable's base name (comm when exe is unreadable)
//	      cmdline: 'vllm serve (?P<model>\S+)'  # RE2, searched in the argv joined by spaces
//	      uids: [1000, 1001]        # real user ID (from /proc/<pid>/status)
//	      cgroup_prefix: /system.slice/inference-  # prefix of the cgroup path
//	      namespace: ml-prod        # Kubernetes namespace (pod processes only)
//	      slurm_account: vision     # Slurm account (Slurm processes only)
//	      slurm_partition: a100     # Slurm partition (Slurm processes only)
//	    job: 'proc/{node}/vllm-{model}'  # job key; default proc/{node}/{pid}/{start}
//	    team: inference
//	    project: llm-serving
//	    queue: online
//	    pool: online-inference
//	    model: '{model}'
//	    workload: inference
//	    labels: {tier: prod}
//
// job, team, project, queue, pool, model and workload are templates: {node},
// {cluster}, {pid}, {start} (process start, seconds since the epoch), {uid}, {exe}
// and the cmdline regexp's named groups are replaced by their values. For a process
// Kubernetes, Slurm or GPUPOOL_JOB already attributes, job is ignored and the other
// fields only fill what is still empty; labels are added where the job has no label
// of that name.

// defaultRuleJob is the job key of a rule that names none: one job per process
// instance.
const defaultRuleJob = "proc/{node}/{pid}/{start}"

// maxMappingBytes bounds the mapping file.
const maxMappingBytes = 4 << 20

// mappingFile is the mapping file's document.
type mappingFile struct {
	Rules []mappingRuleDoc `yaml:"rules"`
}

type mappingRuleDoc struct {
	Name     string            `yaml:"name"`
	Match    mappingMatchDoc   `yaml:"match"`
	Job      string            `yaml:"job"`
	Team     string            `yaml:"team"`
	Project  string            `yaml:"project"`
	Queue    string            `yaml:"queue"`
	Pool     string            `yaml:"pool"`
	Model    string            `yaml:"model"`
	Workload string            `yaml:"workload"`
	Labels   map[string]string `yaml:"labels"`
}

type mappingMatchDoc struct {
	Exe            string   `yaml:"exe"`
	Cmdline        string   `yaml:"cmdline"`
	UIDs           []uint32 `yaml:"uids"`
	CgroupPrefix   string   `yaml:"cgroup_prefix"`
	Namespace      string   `yaml:"namespace"`
	SlurmAccount   string   `yaml:"slurm_account"`
	SlurmPartition string   `yaml:"slurm_partition"`
}

// mapping is a loaded, compiled mapping file.
type mapping struct {
	rules []*rule
}

// rule is one compiled mapping rule.
type rule struct {
	name string

	exe            string
	cmdline        *regexp.Regexp
	uids           []uint32
	cgroupPrefix   string
	namespace      string
	slurmAccount   string
	slurmPartition string

	job, team, project, queue, pool, model, workload template
	labels                                           map[string]string
}

// template is a string with {placeholder}s, split into parts.
type template []templatePart

type templatePart struct {
	literal     string
	placeholder string // when not empty, the part is this placeholder's value
}

// fixedPlaceholders are the placeholders every rule may use.
var fixedPlaceholders = map[string]bool{"node": true, "cluster": true, "pid": true, "start": true, "uid": true, "exe": true}

// loadMapping reads and compiles the mapping file at path.
func loadMapping(path string) (*mapping, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("mapping_file: %w: %w", ErrMapping, err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxMappingBytes+1))
	if err != nil {
		return nil, fmt.Errorf("mapping_file: %w: read %s: %w", ErrMapping, path, err)
	}
	if len(b) > maxMappingBytes {
		return nil, fmt.Errorf("mapping_file: %w: %s is over %d bytes", ErrMapping, path, maxMappingBytes)
	}
	m, err := parseMapping(b)
	if err != nil {
		return nil, fmt.Errorf("mapping_file: %w: %s: %w", ErrMapping, path, err)
	}
	return m, nil
}

// parseMapping decodes and compiles a mapping document.
func parseMapping(b []byte) (*mapping, error) {
	var doc mappingFile
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&doc); err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	m := &mapping{}
	for i, d := range doc.Rules {
		r, err := compileRule(d)
		if err != nil {
			where := fmt.Sprintf("rules[%d]", i)
			if d.Name != "" {
				where += " (" + d.Name + ")"
			}
			return nil, fmt.Errorf("%s: %w", where, err)
		}
		m.rules = append(m.rules, r)
	}
	return m, nil
}

func compileRule(d mappingRuleDoc) (*rule, error) {
	mt := d.Match
	r := &rule{
		name: d.Name, exe: mt.Exe, uids: mt.UIDs, cgroupPrefix: mt.CgroupPrefix,
		namespace: mt.Namespace, slurmAccount: mt.SlurmAccount, slurmPartition: mt.SlurmPartition,
		labels: d.Labels,
	}
	if mt.Cmdline != "" {
		re, err := regexp.Compile(mt.Cmdline)
		if err != nil {
			return nil, fmt.Errorf("match.cmdline: %w", err)
		}
		r.cmdline = re
	}
	if r.exe == "" && r.cmdline == nil && len(r.uids) == 0 && r.cgroupPrefix == "" &&
		r.namespace == "" && r.slurmAccount == "" && r.slurmPartition == "" {
		return nil, errors.New(`match: no selector (give exe, cmdline, uids, cgroup_prefix, namespace, slurm_account or slurm_partition; cmdline: "." matches every process)`)
	}
	if d.Job == "" && d.Team == "" && d.Project == "" && d.Queue == "" && d.Pool == "" &&
		d.Model == "" && d.Workload == "" && len(d.Labels) == 0 {
		return nil, errors.New("the rule sets nothing (give job, team, project, queue, pool, model, workload or labels)")
	}
	allowed := map[string]bool{}
	if r.cmdline != nil {
		for _, g := range r.cmdline.SubexpNames() {
			if g != "" {
				allowed[g] = true
			}
		}
	}
	job := d.Job
	if job == "" {
		job = defaultRuleJob
	}
	for _, f := range []struct {
		name string
		src  string
		dst  *template
	}{
		{"job", job, &r.job}, {"team", d.Team, &r.team}, {"project", d.Project, &r.project},
		{"queue", d.Queue, &r.queue}, {"pool", d.Pool, &r.pool}, {"model", d.Model, &r.model},
		{"workload", d.Workload, &r.workload},
	} {
		t, err := parseTemplate(f.src, allowed)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f.name, err)
		}
		*f.dst = t
	}
	return r, nil
}

// parseTemplate splits s into literals and placeholders, each of which must be a
// fixed placeholder or in groups.
func parseTemplate(s string, groups map[string]bool) (template, error) {
	var t template
	for s != "" {
		open := strings.IndexByte(s, '{')
		if open < 0 {
			if strings.IndexByte(s, '}') >= 0 {
				return nil, errors.New("'}' without '{'")
			}
			t = append(t, templatePart{literal: s})
			break
		}
		if strings.IndexByte(s[:open], '}') >= 0 {
			return nil, errors.New("'}' without '{'")
		}
		if open > 0 {
			t = append(t, templatePart{literal: s[:open]})
		}
		end := strings.IndexByte(s[open:], '}')
		if end < 0 {
			return nil, fmt.Errorf("unclosed '{' in %q", s)
		}
		name := s[open+1 : open+end]
		if !fixedPlaceholders[name] && !groups[name] {
			return nil, fmt.Errorf("unknown placeholder {%s} (use {node}, {cluster}, {pid}, {start}, {uid}, {exe} or a named group of match.cmdline)", name)
		}
		t = append(t, templatePart{placeholder: name})
		s = s[open+end+1:]
	}
	return t, nil
}

// expand fills the template's placeholders with value.
func (t template) expand(value func(name string) string) string {
	if len(t) == 1 && t[0].placeholder == "" {
		return t[0].literal
	}
	var b strings.Builder
	for _, p := range t {
		if p.placeholder != "" {
			b.WriteString(value(p.placeholder))
		} else {
			b.WriteString(p.literal)
		}
	}
	return b.String()
}

// match returns the first rule that matches the process, and the values of its
// cmdline regexp's named groups; nil if none matches.
func (m *mapping) match(f *procFacts) (*rule, map[string]string) {
	if m == nil {
		return nil, nil
	}
	for _, r := range m.rules {
		if groups, ok := r.matches(f); ok {
			return r, groups
		}
	}
	return nil, nil
}

func (r *rule) matches(f *procFacts) (map[string]string, bool) {
	if r.namespace != "" && f.namespace != r.namespace {
		return nil, false
	}
	if r.slurmAccount != "" && f.slurmAccount != r.slurmAccount {
		return nil, false
	}
	if r.slurmPartition != "" && f.slurmPartition != r.slurmPartition {
		return nil, false
	}
	if r.cgroupPrefix != "" && !strings.HasPrefix(f.cgroup.Path, r.cgroupPrefix) {
		return nil, false
	}
	if r.exe != "" && f.exe() != r.exe {
		return nil, false
	}
	if len(r.uids) > 0 {
		uid, ok := f.uid()
		if !ok || !containsUID(r.uids, uid) {
			return nil, false
		}
	}
	if r.cmdline == nil {
		return nil, true
	}
	sub := r.cmdline.FindStringSubmatch(f.cmdline())
	if sub == nil {
		return nil, false
	}
	var groups map[string]string
	for i, name := range r.cmdline.SubexpNames() {
		if name != "" && i < len(sub) {
			if groups == nil {
				groups = make(map[string]string)
			}
			groups[name] = sub[i]
		}
	}
	return groups, true
}

func containsUID(uids []uint32, uid uint32) bool {
	for _, u := range uids {
		if u == uid {
			return true
		}
	}
	return false
}
