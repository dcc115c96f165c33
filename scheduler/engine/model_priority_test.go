package engine

import (
	"errors"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// TestTeamPriorityClasses: a queue with no priority_classes lets a team name the
// classes up to its default (its own, else the model's); one with a list, those
// listed, above its default included; classes come highest first.
func TestTeamPriorityClasses(t *testing.T) {
	m := testModel()
	m.PriorityClasses = append(m.PriorityClasses, PriorityClass{Name: "production", Value: 500}, PriorityClass{Name: "routine", Value: 100})
	m.Queues[1].DefaultPriorityClass = "low"                                        // b
	m.Queues[3].PriorityClasses = []string{"low", "normal", "production"}           // dev
	m.Queues[2].DefaultPriorityClass, m.Queues[2].PriorityClasses = "critical", nil // online
	if err := m.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		queue, want string
	}{
		{"a", "normal routine low"}, // the model's default, and the class of its value
		{"b", "low"},
		{"online", "critical production normal routine low"},
		{"dev", "production normal low"},
	} {
		got, ok := m.TeamPriorityClasses(tc.queue)
		if !ok || strings.Join(got, " ") != tc.want {
			t.Errorf("queue %s: %v %v, want %s", tc.queue, got, ok, tc.want)
		}
	}
	if _, ok := m.TeamPriorityClasses("gaming"); ok {
		t.Error("an unknown queue has classes")
	}
}

// TestCheckTeamPriority is the rule the API applies to a team's submit: allowed
// and refused both ways (a queue's default, a queue's list), the refusal naming
// the classes the team may use; a queue or class the model lacks is Submit's
// error.
func TestCheckTeamPriority(t *testing.T) {
	m := testModel()
	m.PriorityClasses = append(m.PriorityClasses, PriorityClass{Name: "production", Value: 500})
	m.Queues[3].PriorityClasses = []string{"production", "normal"} // dev
	if err := m.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, queue, class string
		err                error
		text               string
	}{
		{"default class", "a", "", nil, ""},
		{"the default named", "a", "normal", nil, ""},
		{"below the default", "a", "low", nil, ""},
		{"above the default", "a", "critical", ErrPriorityNotAllowed,
			"critical (value 1000) in queue a; a team may use normal, low there (the classes up to its default, normal)"},
		{"listed above the default", "dev", "production", nil, ""},
		{"listed default", "dev", "", nil, ""},
		{"not listed, below the default", "dev", "low", ErrPriorityNotAllowed, "a team may use production, normal there (its priority_classes)"},
		{"not listed, above", "dev", "critical", ErrPriorityNotAllowed, "a team may use production, normal there"},
		{"unknown class", "a", "vip", ErrInvalidJob, `"vip" does not exist (classes: critical, normal, low, production)`},
		{"unknown queue", "gaming", "critical", ErrUnknownQueue, "gaming"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := m.CheckTeamPriority(tc.queue, tc.class)
			if tc.err == nil {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if !errors.Is(err, tc.err) || !strings.Contains(err.Error(), tc.text) {
				t.Fatalf("%v, want %v with %q", err, tc.err, tc.text)
			}
		})
	}
}

// TestSubmitUnknownPriorityListsClasses: an operator's submit naming a class the
// model lacks (gpupool submit --priority high) is refused with the classes there
// are, so the caller can pick one without reading the configuration.
func TestSubmitUnknownPriorityListsClasses(t *testing.T) {
	e, err := New(testModel())
	if err != nil {
		t.Fatal(err)
	}
	_, err = e.Submit(JobSpec{Team: "team-a", Queue: "a", GPUs: 1, Card: "H100-80GB", PriorityClass: "high"}, t0)
	want := `priority class "high" does not exist (classes: critical, normal, low)`
	if !errors.Is(err, ErrInvalidJob) || !strings.Contains(err.Error(), want) {
		t.Fatalf("%v, want %v with %q", err, ErrInvalidJob, want)
	}
}

// TestQueuePriorityClassesValidate: a queue's list names the model's classes,
// once each, and holds the queue's default; each error names the field.
func TestQueuePriorityClassesValidate(t *testing.T) {
	for _, tc := range []struct {
		name   string
		modify func(*Model)
		want   []string
	}{
		{"unknown class", func(m *Model) { m.Queues[0].PriorityClasses = []string{"normal", "urgent"} },
			[]string{`queues[0].priority_classes[1]: "urgent" is not one of priority_classes (critical, normal, low)`}},
		{"listed twice", func(m *Model) { m.Queues[1].PriorityClasses = []string{"normal", "low", "normal"} },
			[]string{`queues[1].priority_classes[2]: "normal" is listed twice`}},
		{"model default left out", func(m *Model) { m.Queues[3].PriorityClasses = []string{"low"} },
			[]string{`queues[3].priority_classes: [low] leaves out the queue's default class "normal"`}},
		{"queue default left out", func(m *Model) {
			m.Queues[2].DefaultPriorityClass, m.Queues[2].PriorityClasses = "critical", []string{"normal", "low"}
		}, []string{`queues[2].priority_classes: [normal low] leaves out the queue's default class "critical"`}},
		{"no classes in the model", func(m *Model) {
			m.PriorityClasses, m.DefaultPriorityClass, m.Queues[0].PriorityClasses = nil, "", []string{"normal"}
		}, []string{`queues[0].priority_classes[0]: "normal" is not one of priority_classes`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := testModel()
			tc.modify(&m)
			err := m.Validate()
			if err == nil {
				t.Fatal("invalid model accepted")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

// TestQueuePriorityClassesYAML: a queue's classes read from YAML as documented.
func TestQueuePriorityClassesYAML(t *testing.T) {
	var q Queue
	src := "{name: prod, pool: train, team: nlp, default_priority_class: normal, priority_classes: [production, normal, low]}"
	if err := yaml.Unmarshal([]byte(src), &q); err != nil {
		t.Fatal(err)
	}
	if strings.Join(q.PriorityClasses, " ") != "production normal low" || q.DefaultPriorityClass != "normal" {
		t.Fatalf("%+v", q)
	}
}
