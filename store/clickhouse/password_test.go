package clickhouse

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPasswordFile checks that password_file is read when connecting (a mounted
// Secret ends with a newline, which is not part of the password), that a missing
// file is named in the error, and that password and password_file together are
// refused.
func TestPasswordFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "password")
	if err := os.WriteFile(p, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c := DefaultConfig()
	c.Username, c.PasswordFile = "gpupool", p
	if err := c.Validate(); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	opts, err := c.options()
	if err != nil {
		t.Fatalf("options: %v", err)
	}
	if opts.Auth.Password != "s3cret" {
		t.Errorf("password = %q, want s3cret", opts.Auth.Password)
	}

	c.PasswordFile = filepath.Join(dir, "missing")
	if _, err := c.options(); err == nil || !strings.Contains(err.Error(), "password_file") || !strings.Contains(err.Error(), "missing") {
		t.Errorf("missing file: err = %v, want one naming password_file and the path", err)
	}

	c.PasswordFile, c.Password = p, "inline"
	if err := c.Validate(); err == nil || !strings.HasPrefix(err.Error(), "password_file:") {
		t.Errorf("both set: Validate = %v, want a password_file error", err)
	}
}
