package console

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"

	"github.com/gpupool/gpupool/auth"
)

// Start serves the console on addr in the background until ctx ends, over a
// store someone else keeps open (the demo's); it returns the console's URL.
func Start(ctx context.Context, cfg Config, st Store, g *auth.Guard, log *slog.Logger, opts ...Option) (string, error) {
	c, err := New(cfg, st, g, append([]Option{WithLogger(log)}, opts...)...)
	if err != nil {
		return "", err
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return "", fmt.Errorf("console: listen %s: %w", cfg.Listen, err)
	}
	go func() {
		if err := c.Serve(ctx, ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			c.log.Warn("console stopped", "err", err)
		}
	}()
	return "http://" + ln.Addr().String(), nil
}
