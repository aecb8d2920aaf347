package config

import (
	"bytes"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"
)

// clientSections are the top-level keys of a client config: what a
// producer, consumer or operator needs to reach lakewap's topics.
var clientSections = []string{"kafka", "operators"}

// IsClient reports whether cfg came from a client config (LoadClient): it
// names no dataset, so dataset names are the daemon's to check.
func (c *Config) IsClient() bool { return len(c.Datasets) == 0 }

// LoadClient reads a config for the command-line clients (emit, tail, runs,
// retry, cancel, revert). A file with only a kafka section (and operators,
// to sign requests) is a client config: it needs no lakeFS secret, webhook
// token or datasets, and only its Kafka settings are validated. Any other
// file is loaded as the daemon's config (Load), so operators can point the
// clients at the daemon's file too.
func LoadClient(path string) (*Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var top map[string]yaml.Node
	if err := yaml.Unmarshal(b, &top); err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	if len(top) == 0 || slices.ContainsFunc(slices.Collect(maps.Keys(top)), func(k string) bool { return !slices.Contains(clientSections, k) }) {
		return Load(path)
	}
	return ParseClient(b, os.LookupEnv)
}

// ParseClient is LoadClient on the bytes of a client config.
func ParseClient(src []byte, lookup func(string) (string, bool)) (*Config, error) {
	src, err := Expand(src, lookup)
	if err != nil {
		return nil, err
	}
	var client struct {
		Kafka     Kafka      `yaml:"kafka"`
		Operators []Operator `yaml:"operators"`
	}
	dec := yaml.NewDecoder(bytes.NewReader(src))
	dec.KnownFields(true)
	if err := dec.Decode(&client); err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	c := Config{Kafka: client.Kafka, Operators: client.Operators}
	c.Defaults()
	// The daemon's validation, less what only the daemon's sections (and the
	// missing datasets) would say.
	var errs Errors
	if err := c.Validate(); err != nil {
		var all Errors
		if e, ok := err.(Errors); ok {
			all = e
		} else {
			all = Errors{err}
		}
		for _, e := range all {
			if field, _, _ := strings.Cut(e.Error(), ":"); slices.ContainsFunc(clientSections, func(s string) bool {
				return field == s || strings.HasPrefix(field, s+".") || strings.HasPrefix(field, s+"[")
			}) {
				errs = append(errs, e)
			}
		}
	}
	if len(errs) > 0 {
		return nil, errs
	}
	if _, err := c.OperatorKeys(); err != nil {
		return nil, err
	}
	return &c, nil
}
