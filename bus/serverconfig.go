package bus

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/gpupool/gpupool/schemas"
)

// ServerTLS is TLS on a NATS server's client port.
type ServerTLS struct {
	// CertFile and KeyFile are the server's certificate and key (PEM); set both to
	// require TLS from every client.
	CertFile string `yaml:"cert_file"`
	KeyFile  string `yaml:"key_file"`
	// CAFile holds the CAs client certificates are checked against (PEM).
	CAFile string `yaml:"ca_file"`
	// Verify requires every client to present a certificate signed by CAFile
	// (mutual TLS), besides its nkey.
	Verify bool `yaml:"verify"`
}

// Enabled reports whether TLS is configured.
func (t ServerTLS) Enabled() bool { return t.CertFile != "" }

// Validate checks the settings; each error names its field.
func (t ServerTLS) Validate() error {
	switch {
	case (t.CertFile == "") != (t.KeyFile == ""):
		return errors.New("cert_file and key_file: give both or neither")
	case t.Verify && t.CAFile == "":
		return schemas.Field("verify", errors.New("needs ca_file to check client certificates against"))
	case !t.Enabled() && (t.CAFile != "" || t.Verify):
		return errors.New("ca_file and verify: need cert_file and key_file (TLS on the server)")
	}
	return nil
}

// ServerConfig is a nats-server configuration for gpupool: where it listens, its
// JetStream store, TLS, and gpupool's account with one least-privilege user per
// credential.
type ServerConfig struct {
	// Comment is written at the top, one "# " line per line.
	Comment string
	// Name is the server_name.
	Name string
	// Listen is host:port for clients.
	Listen string
	// StoreDir is JetStream's directory; MaxStoreBytes caps it (0: the server's
	// default).
	StoreDir      string
	MaxStoreBytes int64
	TLS           ServerTLS
	Users         []User
}

// Render returns the configuration in nats-server's format; `nats-server -c FILE`
// runs it, and server.ProcessConfigFile reads it.
func (c ServerConfig) Render() ([]byte, error) {
	if c.Name == "" || c.Listen == "" || c.StoreDir == "" {
		return nil, errors.New("bus: server config: name, listen and store_dir are needed")
	}
	sec, err := securityConfig(c.TLS, c.Users)
	if err != nil {
		return nil, err
	}
	var b strings.Builder
	if c.Comment != "" {
		for line := range strings.SplitSeq(strings.TrimRight(c.Comment, "\n"), "\n") {
			b.WriteString(strings.TrimRight("# "+line, " ") + "\n")
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "server_name: %s\nlisten: %s\n\njetstream {\n  store_dir: %s\n", q(c.Name), q(c.Listen), q(c.StoreDir))
	if c.MaxStoreBytes > 0 {
		fmt.Fprintf(&b, "  max_file_store: %d\n", c.MaxStoreBytes)
	}
	b.WriteString("}\n")
	b.WriteString(sec)
	return []byte(b.String()), nil
}

// securityConfig renders the tls block (when enabled) and gpupool's account with
// its users (when there are any).
func securityConfig(tls ServerTLS, users []User) (string, error) {
	if err := tls.Validate(); err != nil {
		return "", fmt.Errorf("bus: server config: tls.%w", err)
	}
	var b strings.Builder
	if tls.Enabled() {
		fmt.Fprintf(&b, "\ntls {\n  cert_file: %s\n  key_file: %s\n", q(tls.CertFile), q(tls.KeyFile))
		if tls.CAFile != "" {
			fmt.Fprintf(&b, "  ca_file: %s\n", q(tls.CAFile))
		}
		if tls.Verify {
			b.WriteString("  verify: true\n")
		}
		b.WriteString("}\n")
	}
	if len(users) == 0 {
		return b.String(), nil
	}
	fmt.Fprintf(&b, "\naccounts {\n  %s {\n    jetstream: enabled\n    users: [\n", Account)
	seen := map[string]string{}
	for i, u := range users {
		if prev, dup := seen[u.NKey]; dup {
			return "", fmt.Errorf("bus: server config: users[%d] (%s): nkey already given to %s", i, u.Name, prev)
		}
		seen[u.NKey] = u.Name
		p, err := u.Permissions()
		if err != nil {
			return "", fmt.Errorf("bus: server config: users[%d]: %w", i, err)
		}
		writeUser(&b, u, p)
	}
	b.WriteString("    ]\n  }\n}\n")
	return b.String(), nil
}

// writeUser renders one entry of the account's users.
func writeUser(b *strings.Builder, u User, p *server.Permissions) {
	roles := make([]string, len(u.Roles))
	for i, r := range u.Roles {
		roles[i] = string(r)
	}
	fmt.Fprintf(b, "      # %s: %s", cmpOr(u.Name, "(unnamed)"), strings.Join(roles, ", "))
	if u.Cluster != "" || u.Node != "" {
		fmt.Fprintf(b, " (cluster %s, node %s)", u.Cluster, u.Node)
	}
	fmt.Fprintf(b, "\n      {\n        nkey: %s\n        permissions: {\n", u.NKey)
	writeAllow(b, "publish", p.Publish.Allow)
	writeAllow(b, "subscribe", p.Subscribe.Allow)
	if p.Response != nil {
		fmt.Fprintf(b, "          allow_responses: { max: %d, expires: %s }\n", p.Response.MaxMsgs, q(p.Response.Expires.String()))
	}
	b.WriteString("        }\n      }\n")
}

func writeAllow(b *strings.Builder, what string, subjects []string) {
	fmt.Fprintf(b, "          %s: {\n            allow: [\n", what)
	for _, s := range subjects {
		fmt.Fprintf(b, "              %s\n", q(s))
	}
	b.WriteString("            ]\n          }\n")
}

// q quotes a string for nats-server's configuration format (quoted strings are
// taken literally, so "$JS.API.>" is not a variable).
func q(s string) string { return strconv.Quote(s) }
