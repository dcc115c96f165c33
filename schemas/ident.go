package schemas

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Identifier limits. Every entrance (the scheduler API and CLI, job events on the
// bus, trace lines, the collector's attribution from Kubernetes, Slurm and the
// environment, the scheduler's configuration) checks identifiers against them, so
// that no value that cannot be shown, cancelled, billed or published gets in.
// docs/data-model.md lists them.
const (
	// MaxNameLen bounds a name (team, project, queue, pool, cluster, card,
	// priority class): a Kubernetes label value's limit, since names come from
	// labels.
	MaxNameLen = 63
	// MaxKeyLen bounds a key (job key, node, GPU UUID): a DNS name's limit, since
	// keys are built from node and namespace names.
	MaxKeyLen = 253
	// MaxTextLen bounds free text (a job's name, a model name, label keys and
	// values).
	MaxTextLen = 256
	// MaxLabels bounds the labels of one job.
	MaxLabels = 64
)

// Names are letters, digits and "-_." and start with a letter or a digit: what
// Kubernetes namespaces and label values, Slurm accounts and partitions, and
// the pool's own queue and card names (H100-80GB) use. Keys add "/:@+" (job keys
// are paths: k8s/<namespace>/<pod-uid>, slurm/<cluster>/<id>, proc/<node>/<pid>;
// MIG UUIDs and heterogeneous Slurm jobs use the others). Text is any printable
// UTF-8.
const (
	nameChars = "-_."
	keyChars  = "-_./:@+"
)

// CheckName checks that v, the value of field, is a name: empty (the caller
// says whether the field is required), or at most MaxNameLen bytes of letters,
// digits and "-_." beginning with a letter or digit. The error names the field
// and what is wrong, and wraps ErrInvalidIdentifier.
func CheckName(field, v string) error { return check(field, v, MaxNameLen, nameChars) }

// CheckKey is CheckName for keys (job keys, nodes, GPU UUIDs): up to MaxKeyLen
// bytes, and "/:@+" allowed besides.
func CheckKey(field, v string) error { return check(field, v, MaxKeyLen, keyChars) }

// CheckText checks free text: at most MaxTextLen bytes of valid UTF-8 without
// control characters.
func CheckText(field, v string) error {
	if len(v) > MaxTextLen {
		return tooLong(field, v, MaxTextLen)
	}
	for i, r := range v {
		if r == utf8.RuneError || unicode.IsControl(r) {
			return fmt.Errorf("%w: %s: %s has %s at byte %d (text must be printable UTF-8)", ErrInvalidIdentifier, field, Clip(v), describeRune(v, i), i)
		}
	}
	return nil
}

// RequireName is CheckName for a field that must be set.
func RequireName(field, v string) error {
	if v == "" {
		return fmt.Errorf("%w: %s: missing (every job is billed to a %s)", ErrInvalidIdentifier, field, field)
	}
	return CheckName(field, v)
}

// CheckLabels checks a job's labels: at most MaxLabels, each key and value text.
func CheckLabels(field string, m map[string]string) error {
	if len(m) > MaxLabels {
		return fmt.Errorf("%w: %s: %d labels, more than %d", ErrInvalidIdentifier, field, len(m), MaxLabels)
	}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if k == "" {
			return fmt.Errorf("%w: %s: a label has an empty key", ErrInvalidIdentifier, field)
		}
		if err := CheckText(field+" key", k); err != nil {
			return err
		}
		if err := CheckText(field+"."+Clip(k), m[k]); err != nil {
			return err
		}
	}
	return nil
}

// SanitizeName makes v a name, for values read from places gpupool does not
// control (a pod's labels, a process's environment, Slurm's fields): each
// character outside a name's set becomes "_", leading characters that are not
// letters or digits are dropped, and the result is cut to MaxNameLen bytes. It
// reports whether v changed, so that the caller can count and log it.
func SanitizeName(v string) (string, bool) { return sanitize(v, MaxNameLen, nameChars) }

// SanitizeKey is SanitizeName for keys (MaxKeyLen, and "/:@+" kept).
func SanitizeKey(v string) (string, bool) { return sanitize(v, MaxKeyLen, keyChars) }

// SanitizeText makes v text: control characters and invalid UTF-8 become "_",
// and the result is cut to MaxTextLen bytes at a character boundary.
func SanitizeText(v string) (string, bool) {
	if CheckText("", v) == nil {
		return v, false
	}
	var b strings.Builder
	for _, r := range v {
		if r == utf8.RuneError || unicode.IsControl(r) {
			r = '_'
		}
		if b.Len()+utf8.RuneLen(r) > MaxTextLen {
			break
		}
		b.WriteRune(r)
	}
	return b.String(), true
}

func sanitize(v string, max int, extra string) (string, bool) {
	if check("", v, max, extra) == nil {
		return v, false
	}
	var b strings.Builder
	for _, r := range v {
		if b.Len() >= max {
			break
		}
		switch {
		case r < utf8.RuneSelf && isAlnum(byte(r)):
			b.WriteRune(r)
		case b.Len() == 0:
			// a name begins with a letter or digit
		case r < utf8.RuneSelf && isNameByte(byte(r), extra):
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	return b.String(), true
}

// Clip quotes v for an error message or a log line, cut to 64 bytes with its
// length given: a 7 MB value is named, never copied.
func Clip(v string) string {
	const n = 64
	if len(v) <= n {
		return fmt.Sprintf("%q", v)
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(v[cut]) {
		cut--
	}
	return fmt.Sprintf("%q… (%d bytes)", v[:cut], len(v))
}

// Truncate cuts v to at most n bytes at a character boundary, for values that
// must be stored even when they were refused (the audit row of a rejected job).
func Truncate(v string, n int) string {
	if len(v) <= n {
		return v
	}
	for n > 0 && !utf8.RuneStart(v[n]) {
		n--
	}
	return v[:n]
}

func check(field, v string, max int, extra string) error {
	if v == "" {
		return nil
	}
	if len(v) > max {
		return tooLong(field, v, max)
	}
	for i := 0; i < len(v); i++ {
		if !isNameByte(v[i], extra) {
			return fmt.Errorf("%w: %s: %s has %s at byte %d (allowed: %s)", ErrInvalidIdentifier, field, Clip(v), describeRune(v, i), i, allowed(extra))
		}
	}
	if !isAlnum(v[0]) {
		return fmt.Errorf("%w: %s: %s begins with %q (allowed: %s)", ErrInvalidIdentifier, field, Clip(v), v[0], allowed(extra))
	}
	return nil
}

// allowed says what a name or key may hold. Letters are ASCII only: a name
// ends up in label values, SQL, subjects and file names, where "é" and "e"
// would look alike and compare apart.
func allowed(extra string) string {
	return fmt.Sprintf("ASCII letters a-z and A-Z, digits 0-9 and %q, beginning with a letter or digit; no accented or other non-ASCII letters", extra)
}

func tooLong(field, v string, max int) error {
	return fmt.Errorf("%w: %s: %s is %d bytes, longer than %d", ErrInvalidIdentifier, field, Clip(v), len(v), max)
}

func describeRune(v string, i int) string {
	r, _ := utf8.DecodeRuneInString(v[i:])
	switch {
	case r == utf8.RuneError:
		return fmt.Sprintf("invalid UTF-8 byte %#x", v[i])
	case r >= utf8.RuneSelf:
		return fmt.Sprintf("the non-ASCII character %q", r)
	}
	return fmt.Sprintf("%q", r)
}

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

func isNameByte(c byte, extra string) bool {
	return isAlnum(c) || strings.IndexByte(extra, c) >= 0
}

// CheckJobEventIdents checks the identifiers of a job event: its key, names,
// text, node and GPU lists, and labels.
func CheckJobEventIdents(e *JobEvent) error {
	for _, c := range [...]struct {
		check    func(string, string) error
		field, v string
	}{
		{CheckKey, "job", e.Job}, {CheckKey, "rerun_of", e.RerunOf},
		{CheckName, "cluster", e.Cluster}, {CheckName, "team", e.Team}, {CheckName, "project", e.Project},
		{CheckName, "queue", e.Queue}, {CheckName, "pool", e.Pool}, {CheckName, "card", e.Card},
		{CheckName, "workload", e.Workload}, {CheckName, "source", e.Source},
		{CheckName, "mig_profile", e.MIGProfile}, {CheckName, "sharing", e.Sharing}, {CheckText, "model_name", e.ModelName},
	} {
		if err := c.check(c.field, c.v); err != nil {
			return err
		}
	}
	if err := checkKeys("nodes", e.Nodes); err != nil {
		return err
	}
	if err := checkKeys("gpu_uuids", e.GPUUUIDs); err != nil {
		return err
	}
	return CheckLabels("labels", e.Labels)
}

// maxListLen bounds a job event's nodes and GPUs: more than any job holds.
const maxListLen = 4096

func checkKeys(field string, vs []string) error {
	if len(vs) > maxListLen {
		return fmt.Errorf("%w: %s: %d entries, more than %d", ErrInvalidIdentifier, field, len(vs), maxListLen)
	}
	for i, v := range vs {
		if err := CheckKey(fmt.Sprintf("%s[%d]", field, i), v); err != nil {
			return err
		}
	}
	return nil
}
