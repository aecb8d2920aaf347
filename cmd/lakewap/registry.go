package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/lakewap/lakewap/schemas"
)

const registryUsage = `Usage:
  lakewap registry -config FILE [-compatibility LEVEL] [-json]

Registers lakewap's current schemas in the schema registry of the config
(kafka.schema_registry_url, with schema_registry_auth and
schema_registry_tls) ahead of time: under each topic's subjects
(<topic>-io.lakewap.events.<Type>, the ones lakewap writes with), after
setting each subject's compatibility level. Prints one line per subject,
or with -json a JSON array. A client config (only a kafka section) will do.
`

func cmdRegistry(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("registry")
	fs.Usage = func() { fmt.Fprint(fs.Output(), registryUsage+"\nFlags:\n"); fs.PrintDefaults() }
	path := fs.String("config", "lakewap.yaml", "config file: the daemon's, or a client config with only a kafka section")
	level := fs.String("compatibility", "BACKWARD", "compatibility level of each subject ("+strings.Join(schemas.CompatibilityLevels, ", ")+"; empty: leave it)")
	asJSON := fs.Bool("json", false, "print a JSON array")
	if code, ok := parseFlags(fs, args, stdout, stderr); !ok {
		return code
	}
	if *level != "" && !slices.Contains(schemas.CompatibilityLevels, strings.ToUpper(*level)) {
		fmt.Fprintf(stderr, "lakewap registry: -compatibility %q is not one of %s\n", *level, strings.Join(schemas.CompatibilityLevels, ", "))
		return 2
	}
	cfg, ok := loadClientConfig(*path, stderr)
	if !ok {
		return 2
	}
	k := cfg.Kafka
	if k.SchemaRegistry == "" {
		fmt.Fprintf(stderr, "lakewap registry: %s sets no kafka.schema_registry_url\n", *path)
		return 2
	}
	rc, err := k.RegistryClient()
	if err != nil {
		fmt.Fprintf(stderr, "lakewap registry: %v\n", err)
		return 2
	}
	inputs := schemas.InputTypes()
	var results []string
	for _, t := range schemas.EventTypes() {
		if !slices.Contains(inputs, t) {
			results = append(results, t)
		}
	}
	var all []schemas.Registered
	for _, tt := range []struct {
		topic string
		types []string
	}{{k.InputTopic, inputs}, {k.RequestsTopic, inputs}, {k.ResultsTopic, results}} {
		done, err := schemas.Register(ctx, rc, tt.topic, tt.types, strings.ToUpper(*level))
		all = append(all, done...)
		if err != nil {
			fmt.Fprintf(stderr, "lakewap registry: %v (%d subjects registered before)\n", err, len(all))
			return 1
		}
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(all)
		return 0
	}
	for _, r := range all {
		fmt.Fprintf(stdout, "%s\tid %d\t%s\n", r.Subject, r.ID, r.Compatibility)
	}
	return 0
}
