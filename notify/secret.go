package notify

import (
	"errors"
	"fmt"
	"os"
	"strings"
)

// ReadSecret returns the secret in the environment variable envVar or, when
// that is unset or empty, in file (e.g. a mounted Kubernetes secret), with
// surrounding whitespace trimmed. Errors name where it looked, never what
// it found.
func ReadSecret(envVar, file string) (string, error) {
	if envVar == "" && file == "" {
		return "", errors.New("secret: neither an environment variable nor a file is configured")
	}
	if envVar != "" {
		if v := strings.TrimSpace(os.Getenv(envVar)); v != "" {
			return v, nil
		}
	}
	if file == "" {
		return "", fmt.Errorf("secret: environment variable %s is unset or empty", envVar)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err // the path is already in our message
		}
		return "", fmt.Errorf("secret: read file %s: %w", file, err)
	}
	v := strings.TrimSpace(string(b))
	if v == "" {
		return "", fmt.Errorf("secret: file %s is empty", file)
	}
	return v, nil
}
