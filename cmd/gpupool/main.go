// Command gpupool is the one binary of gpupool: collectors, ingest, migrations, SQL
// and the all-in-one demo are its subcommands. This is the only package that reads
// flags and the environment, and the only one that exits the process.
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/alecthomas/kong"

	"github.com/gpupool/gpupool/internal/config"
)

// version is set at build time (-ldflags "-X main.version=…").
var version = "dev"

// Globals are flags every subcommand takes.
type Globals struct {
	Config   string `short:"c" help:"Configuration file (YAML); see deploy/gpupool.example.yaml." type:"existingfile" env:"GPUPOOL_CONFIG"`
	DataDir  string `help:"Directory for the embedded NATS and ClickHouse data (default gpupool-data)." env:"GPUPOOL_DATA_DIR"`
	LogLevel string `help:"debug, info, warn or error." enum:",debug,info,warn,error" default:""`
	// Connections to external servers; empty means embedded.
	NATSURL        string         `name:"nats-url" help:"External NATS server(s), e.g. nats://n1:4222 (default: embedded server)." env:"GPUPOOL_NATS_URL"`
	ClickHouseAddr []string       `name:"clickhouse-addr" help:"External ClickHouse server(s), host:9000 (default: embedded chDB)." env:"GPUPOOL_CLICKHOUSE_ADDR"`
	CHDBLib        string         `name:"chdb-lib" help:"Path of libchdb.so (default: the make deps cache)." env:"GPUPOOL_CHDB_LIB"`
	base           *config.Config // the command's defaults, the file read over them; nil: config.Default
}

// CLI lists the subcommands.
type CLI struct {
	Globals

	Demo      DemoCmd      `cmd:"" help:"Run everything on this machine: embedded NATS and ClickHouse, a simulated fleet, collectors, ingest, then a summary."`
	Collector CollectorCmd `cmd:"" help:"Sample GPUs and publish them to NATS."`
	Ingest    IngestCmd    `cmd:"" help:"Move batches from NATS into ClickHouse, exactly once in effect."`
	Migrate   MigrateCmd   `cmd:"" help:"Create or upgrade the ClickHouse schema."`
	SQL       SQLCmd       `cmd:"" name:"sql" help:"Run a read-only SQL query against the store and print the result."`
	Capacity  CapacityCmd  `cmd:"" help:"Forecast GPU demand and capacity per cluster and card type, and the GPUs that keep the p95 queue wait under a target."`
	Version   VersionCmd   `cmd:"" help:"Print the version."`
	SchedulerCommands
	AnalyzerCommands
	ReportCommands
	Alerts  AlertsCmd  `cmd:"" help:"Post findings and scheduler notices to Slack, one message per finding, routed per team."`
	Console ConsoleCmd `cmd:"" help:"Serve the web console: fleet, pools, jobs, findings, chargeback and capacity, behind the API tokens."`
	Token   TokenCmd   `cmd:"" help:"Manage the API's static tokens in the tokens file: create (printed once), list, revoke."`
}

// VersionCmd prints the version.
type VersionCmd struct{}

// Run prints the version.
func (VersionCmd) Run() error {
	fmt.Println("gpupool", version)
	return nil
}

// newParser is the command line of cli; a parse error is returned alone (main
// prints it without the usage text, which would bury it).
func newParser(cli *CLI, opts ...kong.Option) *kong.Kong {
	return kong.Must(cli, append([]kong.Option{
		kong.Name("gpupool"),
		kong.Description("gpupool turns scattered GPU servers into one governed, measured and billed pool."),
	}, opts...)...)
}

func main() {
	var cli CLI
	kctx, err := newParser(&cli).Parse(os.Args[1:])
	if err != nil {
		// The error alone, and where the usage is: not the usage with the error
		// last under it.
		fmt.Fprintf(os.Stderr, "gpupool: %v\n(gpupool --help lists the commands and flags)\n", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	kctx.BindTo(ctx, (*context.Context)(nil))
	if err := kctx.Run(&cli.Globals); err != nil {
		if errors.Is(err, context.Canceled) {
			os.Exit(130)
		}
		fmt.Fprintln(os.Stderr, "gpupool:", err)
		os.Exit(1)
	}
}

// loadConfig reads the configuration file and applies the global flags over it.
// Every command starts here, so it also makes what the process creates its
// owner's alone (privateFiles).
func (g *Globals) loadConfig() (config.Config, error) {
	privateFiles()
	c, err := config.ReadOver(g.base, g.Config)
	if err != nil {
		return c, err
	}
	setIf(&c.DataDir, g.DataDir)
	setIf(&c.LogLevel, g.LogLevel)
	setIf(&c.Bus.URL, g.NATSURL)
	if len(g.ClickHouseAddr) > 0 {
		c.Store.Backend = "clickhouse"
		c.Store.ClickHouse.Addr = g.ClickHouseAddr
	}
	setIf(&c.Store.CHDB.LibPath, g.CHDBLib)
	return c, nil
}

func newLogger(level string) *slog.Logger {
	var l slog.Level
	_ = l.UnmarshalText([]byte(level))
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: l}))
}

// privateFiles sets the process's umask to 077: every file and directory
// gpupool creates is 0600 or 0700, those the embedded NATS server and chDB create
// for themselves included. gpupool's data (samples, jobs, findings, costs) says
// who ran what, and, like the token files, is nobody else's to read.
func privateFiles() { syscall.Umask(0o077) }
