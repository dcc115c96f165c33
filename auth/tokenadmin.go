package auth

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"
	"time"
)

// The token administration of `gpupool token create|list|revoke`: whoever may
// write the tokens file (its owner, the local administrator) manages tokens
// with it. Every edit holds the file's lock (lockTokens: two edits at once both
// land), writes a temporary file in the same folder and renames it over the
// tokens file (0600: a reader never sees half a file), and refuses a file that
// others may read or change, or that belongs to another user (checkPrivate).

// CreateToken makes a new token for name with roles, expiring at expires (zero:
// never), adds its line to the tokens file at path (made, with its folder, if
// missing) and returns the token and its entry. The token itself is stored
// nowhere: the file holds its hash. A name already in the file is
// ErrTokenExists; a bad name or role, or an expiry not after now, is an error
// naming it.
func CreateToken(path, name string, roles []string, expires, now time.Time) (string, TokenEntry, error) {
	if !nameRe.MatchString(name) {
		return "", TokenEntry{}, fmt.Errorf("auth: token name %q: 1-128 letters, digits, '.', '_', '@' or '-', starting with a letter or digit", name)
	}
	if len(roles) == 0 {
		return "", TokenEntry{}, errors.New("auth: token " + name + ": no role; give at least one of admin, operator, finance, analyzer, agent, team:<name>")
	}
	rs, err := ParseRoles(roles)
	if err != nil {
		return "", TokenEntry{}, fmt.Errorf("auth: token %s: %w", name, err)
	}
	if !expires.IsZero() && !expires.After(now) {
		return "", TokenEntry{}, fmt.Errorf("auth: token %s: expiry %s is not after now (%s)", name, expires.UTC().Format(time.RFC3339), now.UTC().Format(time.RFC3339))
	}
	tok, err := NewToken()
	if err != nil {
		return "", TokenEntry{}, err
	}
	e := TokenEntry{Name: name, Roles: rs, Hash: HashToken(tok)}
	if !expires.IsZero() {
		e.Expires = expires.UTC().Truncate(time.Second)
	}
	err = editTokens(path, func(data []byte, entries []TokenEntry) ([]byte, error) {
		if slices.ContainsFunc(entries, func(o TokenEntry) bool { return o.Name == name }) {
			return nil, fmt.Errorf("%w: %q (gpupool token revoke %s first to replace it)", ErrTokenExists, name, name)
		}
		if len(data) == 0 {
			data = []byte(tokensHeader)
		}
		out := bytes.Clone(data)
		if !bytes.HasSuffix(out, []byte("\n")) {
			out = append(out, '\n')
		}
		return append(out, e.String()+"\n"...), nil
	})
	if err != nil {
		return "", TokenEntry{}, err
	}
	return tok, e, nil
}

// ListTokens returns the entries of the tokens file at path, in file order (a
// missing file: none).
func ListTokens(path string) ([]TokenEntry, error) {
	data, err := readTokens(path)
	if err != nil {
		return nil, err
	}
	es, err := ParseTokens(data)
	if err != nil {
		return nil, fmt.Errorf("auth: tokens file %s: %w", path, err)
	}
	return es, nil
}

// RevokeToken removes name's line from the tokens file at path (comments and
// the other lines kept as they are); a name not in it is ErrNoSuchToken. A
// running scheduler refuses the token from its next reload, within a second.
func RevokeToken(path, name string) error {
	return editTokens(path, func(data []byte, entries []TokenEntry) ([]byte, error) {
		if !slices.ContainsFunc(entries, func(o TokenEntry) bool { return o.Name == name }) {
			names := make([]string, len(entries))
			for i, o := range entries {
				names[i] = o.Name
			}
			return nil, fmt.Errorf("%w: %q (the file has: %s)", ErrNoSuchToken, name, strings.Join(names, ", "))
		}
		var out bytes.Buffer
		for _, line := range strings.SplitAfter(string(data), "\n") {
			if f := strings.Fields(line); len(f) > 0 && f[0] == name {
				continue
			}
			out.WriteString(line)
		}
		return out.Bytes(), nil
	})
}

// editTokens replaces the tokens file's content with edit's, holding its lock;
// the file must parse before and after, and be private (checkPrivate).
func editTokens(path string, edit func(data []byte, entries []TokenEntry) ([]byte, error)) error {
	if err := checkPrivate(path); err != nil {
		return err
	}
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
		return fmt.Errorf("auth: tokens file %s: %w (fix it by hand first)", path, err)
	}
	out, err := edit(data, entries)
	if err != nil {
		return fmt.Errorf("auth: tokens file %s: %w", path, err)
	}
	if _, err := ParseTokens(out); err != nil {
		return fmt.Errorf("auth: tokens file %s: the edit would not parse: %w", path, err)
	}
	return writePrivate(path, out)
}

// checkPrivate refuses a tokens file that is not a regular file, that its group
// or others may read or write, or that belongs to another user than the one
// running (renaming a new file over it would take it from its owner, the
// scheduler's user). A missing file is fine: it is made 0600.
func checkPrivate(path string) error {
	st, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("auth: tokens file: %w", err)
	}
	if !st.Mode().IsRegular() {
		return fmt.Errorf("%w: %s is not a regular file (%s); point auth.tokens_file at the file itself", ErrTokensFileExposed, path, st.Mode().Type())
	}
	if perm := st.Mode().Perm(); perm&0o077 != 0 {
		return fmt.Errorf("%w: %s is mode %04o, so others may read or change it; run chmod 600 %s (and, if others could read it, consider its tokens' hashes seen)", ErrTokensFileExposed, path, perm, path)
	}
	if uid, ok := fileOwner(st); ok && uid != os.Geteuid() {
		return fmt.Errorf("%w: %s belongs to uid %d, not to uid %d running this; run the command as its owner (e.g. sudo -u <the scheduler's user> gpupool token …) so that the file stays theirs", ErrTokensFileExposed, path, uid, os.Geteuid())
	}
	return nil
}
