package bus

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nkeys"

	"github.com/gpupool/gpupool/schemas"
)

// Role is what a gpupool process does on the bus; a credential's roles decide the
// subjects it may publish and subscribe to.
type Role string

// Roles, in the order of the data flow.
const (
	// RoleCollector publishes its own node's samples and its own cluster's job
	// events (gpupool.jobs.<cluster>, never the scheduler's
	// gpupool.jobs.<cluster>.scheduler).
	RoleCollector Role = "collector"
	// RoleAgent receives reclaim commands for its own node and answers them.
	RoleAgent Role = "agent"
	// RoleIngest consumes samples and job events, reads back stored batches,
	// publishes dead letters and keeps its intents in a key-value bucket.
	RoleIngest Role = "ingest"
	// RoleAnalyzer publishes findings.
	RoleAnalyzer Role = "analyzer"
	// RoleScheduler publishes job events for any cluster (its own jobs' on
	// SchedulerJobsSubject, which no other role may publish on) and notices for any
	// team, and sends commands to any node's agent.
	RoleScheduler Role = "scheduler"
	// RoleAlerter consumes findings and notices and keeps what it sent in a
	// key-value bucket.
	RoleAlerter Role = "alerter"
	// RoleStreams creates gpupool's streams and updates their limits
	// (bus.streams.manage); every other role only checks that they exist.
	RoleStreams Role = "streams"
	// RoleAdmin may do everything in gpupool's account (the embedded server's own
	// process, an operator's nats CLI).
	RoleAdmin Role = "admin"
)

// AllRoles lists every role, in the order of the data flow.
func AllRoles() []Role {
	return []Role{RoleCollector, RoleAgent, RoleIngest, RoleAnalyzer, RoleScheduler, RoleAlerter, RoleStreams, RoleAdmin}
}

// AnyName, as a User's Cluster or Node, scopes the collector and agent roles to
// every cluster or node: a simulated fleet or a replayed trace publishes for many.
const AnyName = "*"

// Default key-value buckets: ingest.intent_bucket and alerts.state_bucket.
const (
	DefaultIntentBucket = "gpupool_ingest_intents"
	DefaultStateBucket  = "gpupool_alerts"
)

// AgentReplyWindow is how long an agent may take to answer a command it received
// (one answer each): the agent's max_grace (5m by default) and the 10s it waits
// after SIGKILL, with room to spare.
const AgentReplyWindow = 10 * time.Minute

// Account is the NATS account gpupool's users live in, with JetStream enabled.
const Account = "GPUPOOL"

// User is one credential on the bus: its public nkey and what the process holding
// the seed does.
type User struct {
	// Name says whose credential this is (a comment in the server configuration).
	Name string `yaml:"name"`
	// NKey is the user's public nkey (U…); the process holds the seed
	// (bus.nkey_file).
	NKey string `yaml:"nkey"`
	// Roles are what the process does.
	Roles []Role `yaml:"roles"`
	// Cluster and Node scope the collector and agent roles (AnyName: every one).
	Cluster string `yaml:"cluster"`
	Node    string `yaml:"node"`
	// IntentBucket is the ingest role's key-value bucket (ingest.intent_bucket;
	// empty: DefaultIntentBucket).
	IntentBucket string `yaml:"intent_bucket"`
	// StateBucket is the alerter role's key-value bucket (alerts.state_bucket;
	// empty: DefaultStateBucket).
	StateBucket string `yaml:"state_bucket"`
}

// Validate checks the user; each error names its field.
func (u User) Validate() error {
	var errs []error
	if !nkeys.IsValidPublicUserKey(u.NKey) {
		errs = append(errs, schemas.Fieldf("nkey", "%q is not a public user nkey (U…; nk -gen user -pubout makes one)", u.NKey))
	}
	if len(u.Roles) == 0 {
		errs = append(errs, schemas.Field("roles", errors.New("empty (one or more of collector, agent, ingest, analyzer, scheduler, alerter, streams, admin)")))
	}
	for _, r := range u.Roles {
		if !slices.Contains(AllRoles(), r) {
			errs = append(errs, schemas.Fieldf("roles", "%q is not one of collector, agent, ingest, analyzer, scheduler, alerter, streams, admin", r))
		}
	}
	if (slices.Contains(u.Roles, RoleCollector) || slices.Contains(u.Roles, RoleAgent)) && (u.Cluster == "" || u.Node == "") {
		errs = append(errs, errors.New(`cluster and node: the collector and agent roles are scoped to one node (or "*")`))
	}
	return errors.Join(errs...)
}

// InboxPrefix is where the replies to a user's requests arrive: _INBOX.<public
// nkey>. Connect derives it from the seed, and a user may subscribe to nothing
// else of _INBOX, so no credential reads the replies another one asked for (the
// messages ingest fetches, the findings the alerter fetches).
func InboxPrefix(nkey string) string { return "_INBOX." + nkey }

// JetStream API subjects (see the nats-server JetStream API reference).
const (
	jsAPI = "$JS.API."
	jsAck = "$JS.ACK."
	jsFC  = "$JS.FC."
)

// gpupoolStreams lists the streams EnsureStreams creates or checks.
var gpupoolStreams = []string{StreamSamples, StreamJobs, StreamFindings, StreamDeadLetter}

// Permissions returns what the user may publish and subscribe to. Every role may
// check that gpupool's streams exist and receive replies on its own inbox; the
// roles add to that. Nothing is denied explicitly: what no role allows is denied.
func (u User) Permissions() (*server.Permissions, error) {
	if err := u.Validate(); err != nil {
		return nil, fmt.Errorf("bus: user %s: %w", u.Name, err)
	}
	var g grants
	g.sub(InboxPrefix(u.NKey) + ".>")
	for _, s := range gpupoolStreams {
		g.pub(jsAPI + "STREAM.INFO." + s)
	}
	for _, r := range u.Roles {
		g.add(r, u)
	}
	p := &server.Permissions{
		Publish:   &server.SubjectPermission{Allow: g.pubs},
		Subscribe: &server.SubjectPermission{Allow: g.subs},
	}
	if g.respond {
		p.Response = &server.ResponsePermission{MaxMsgs: 1, Expires: AgentReplyWindow}
	}
	return p, nil
}

// grants gathers a user's subjects in order, each once.
type grants struct {
	pubs, subs []string
	respond    bool
}

func (g *grants) pub(subjects ...string) {
	for _, s := range subjects {
		if !slices.Contains(g.pubs, s) {
			g.pubs = append(g.pubs, s)
		}
	}
}

func (g *grants) sub(subjects ...string) {
	for _, s := range subjects {
		if !slices.Contains(g.subs, s) {
			g.subs = append(g.subs, s)
		}
	}
}

// add grants one role.
func (g *grants) add(r Role, u User) {
	switch r {
	case RoleCollector:
		g.pub(SamplesPrefix+"."+scope(u.Cluster)+"."+scope(u.Node), JobsPrefix+"."+scope(u.Cluster))
		g.sub(RejectedPrefix + "." + scope(u.Cluster) + "." + scope(u.Node))
	case RoleAgent:
		g.sub(ActionsPrefix + "." + scope(u.Cluster) + "." + scope(u.Node))
		g.respond = true
	case RoleIngest:
		g.consume(StreamSamples)
		g.consume(StreamJobs)
		g.pub(jsAPI+"STREAM.MSG.GET."+StreamSamples, jsAPI+"STREAM.MSG.GET."+StreamJobs, DeadLetterPrefix+".>", RejectedPrefix+".>")
		g.bucket(cmpOr(u.IntentBucket, DefaultIntentBucket))
	case RoleAnalyzer:
		g.pub(FindingsPrefix + ".>")
	case RoleScheduler:
		g.pub(JobsPrefix+".>", AlertsPrefix+".>", ActionsPrefix+".>")
	case RoleAlerter:
		g.consume(StreamFindings)
		g.bucket(cmpOr(u.StateBucket, DefaultStateBucket))
	case RoleStreams:
		for _, s := range gpupoolStreams {
			g.pub(jsAPI+"STREAM.CREATE."+s, jsAPI+"STREAM.UPDATE."+s)
		}
	case RoleAdmin:
		g.pub(">")
		g.sub(">")
	}
}

// consume grants a durable pull consumer on stream: create or update it, read its
// state, fetch and acknowledge.
func (g *grants) consume(stream string) {
	g.pub(
		jsAPI+"CONSUMER.CREATE."+stream+".>",
		jsAPI+"CONSUMER.INFO."+stream+".*",
		jsAPI+"CONSUMER.MSG.NEXT."+stream+".*",
		jsAck+stream+".>",
	)
}

// bucket grants a key-value bucket: create it or update its limits (the client
// reads the account's JetStream limits first), put, get (directly, or through the
// stream on a bucket made without direct gets), delete and list its keys (an
// ordered consumer, answering the server's flow control).
func (g *grants) bucket(name string) {
	stream := "KV_" + name
	g.pub(
		jsAPI+"INFO",
		jsAPI+"STREAM.INFO."+stream,
		jsAPI+"STREAM.CREATE."+stream,
		jsAPI+"STREAM.UPDATE."+stream,
		jsAPI+"STREAM.MSG.GET."+stream,
		jsAPI+"DIRECT.GET."+stream+".>",
		jsAPI+"CONSUMER.CREATE."+stream+".>",
		jsAPI+"CONSUMER.DELETE."+stream+".*",
		jsFC+stream+".>",
		"$KV."+name+".>",
	)
}

// scope is one subject token of a user's cluster or node: its Token, or the
// wildcard for AnyName.
func scope(name string) string {
	if name == AnyName {
		return "*"
	}
	return Token(name)
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
