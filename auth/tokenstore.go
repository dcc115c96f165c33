package auth

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// tokensHeader starts a tokens file this package creates.
const tokensHeader = `# gpupool API tokens, one a line: <name> <role>[,<role>…] sha256:<hex of the token's SHA-256>
# Roles: admin, operator, finance, analyzer, agent, team:<name>. Edits take effect within a
# second, without a restart; delete a line to revoke its token. Add one with:
#   gpupool token create alice --role team:nlp [--expires 720h]
# (list: gpupool token list; revoke: gpupool token revoke alice). A line may end with
# expires=<RFC 3339 time>, after which its token is refused.
`

// AdminName is the name of the generated admin token in the tokens file.
const AdminName = "admin"

// EnsureAdminToken makes sure an admin token exists: on the first start it writes
// a new token to adminFile (0600, its folder 0700) and adds its hash to
// tokensFile as AdminName with role admin; later it checks that the tokens file
// still knows the token in adminFile (restoring its line if not). Deleting
// adminFile and starting again rotates the token. created says a new token was
// written.
func EnsureAdminToken(tokensFile, adminFile string) (created bool, err error) {
	data, err := os.ReadFile(adminFile)
	tok := strings.TrimSpace(string(data))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if tok, err = NewToken(); err != nil {
			return false, err
		}
		if err := writePrivate(adminFile, []byte(tok+"\n")); err != nil {
			return false, err
		}
		created = true
	case err != nil:
		return false, fmt.Errorf("auth: admin token: %w", err)
	case tok == "":
		return false, fmt.Errorf("auth: admin token file %s is empty: delete it to have a new one made", adminFile)
	}
	e := TokenEntry{Name: AdminName, Roles: []Role{RoleAdmin}, Hash: HashToken(tok)}
	if err := putToken(tokensFile, e); err != nil {
		return false, err
	}
	return created, nil
}

// putToken puts e in the tokens file in place of the line of the same name, or
// adds it; a file already holding e unchanged is left alone.
func putToken(path string, e TokenEntry) error {
	unlock, err := lockTokens(path)
	if err != nil {
		return err
	}
	defer unlock()
	data, err := readTokens(path)
	if err != nil {
		return err
	}
	entries, err := ParseTokens(data)
	if err != nil {
		return fmt.Errorf("auth: tokens file %s: %w", path, err)
	}
	if len(data) == 0 {
		data = []byte(tokensHeader)
	}
	for _, old := range entries {
		switch {
		case old.Name == e.Name && old.String() == e.String():
			return nil
		case old.Name != e.Name && old.Hash == e.Hash:
			return fmt.Errorf("auth: tokens file %s: token of %q is already %q's", path, e.Name, old.Name)
		}
	}
	var out bytes.Buffer
	for _, line := range strings.SplitAfter(string(data), "\n") {
		if f := strings.Fields(line); len(f) > 0 && f[0] == e.Name {
			continue
		}
		out.WriteString(line)
	}
	if out.Len() > 0 && !bytes.HasSuffix(out.Bytes(), []byte("\n")) {
		out.WriteByte('\n')
	}
	out.WriteString(e.String() + "\n")
	return writePrivate(path, out.Bytes())
}

// writePrivate writes data to path atomically, readable by its owner only, making
// its folder (0700) if missing.
func writePrivate(path string, data []byte) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("auth: %w", err)
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("auth: %w", err)
	}
	defer os.Remove(f.Name())
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("auth: write %s: %w", path, err)
	}
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return fmt.Errorf("auth: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("auth: write %s: %w", path, err)
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return fmt.Errorf("auth: %w", err)
	}
	return nil
}
