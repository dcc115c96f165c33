package auth

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
)

// ClientToken is the token a command sends: the content of tokenFile when given
// (an error if it cannot be read or is empty), else envToken (GPUPOOL_TOKEN) when
// set, else the content of defaultFile (the admin token the scheduler wrote) when
// it exists and is readable, else "" (the API then answers 401 and says how to
// get a token).
func ClientToken(tokenFile, envToken, defaultFile string) (string, error) {
	if tokenFile != "" {
		data, err := os.ReadFile(tokenFile)
		if err != nil {
			return "", fmt.Errorf("token file: %w", err)
		}
		tok := strings.TrimSpace(string(data))
		if tok == "" {
			return "", fmt.Errorf("token file %s is empty", tokenFile)
		}
		return tok, nil
	}
	if tok := strings.TrimSpace(envToken); tok != "" {
		return tok, nil
	}
	if defaultFile == "" {
		return "", nil
	}
	data, err := os.ReadFile(defaultFile)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("token file: %w", err)
	}
	return strings.TrimSpace(string(data)), nil
}
