package cli

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/lakewap/lakewap/schemas"
)

// RegistryOptions are lakewap registry's flags.
type RegistryOptions struct {
	Config, Compatibility string
	JSON                  bool
}

// Registry registers the schemas' subjects of every topic lakewap writes
// or reads in the config's schema registry: 0 done, 1 the registry
// refused, 2 bad flags or config.
func Registry(ctx context.Context, o RegistryOptions, stdout, stderr io.Writer) int {
	level := strings.ToUpper(o.Compatibility)
	if level != "" && !slices.Contains(schemas.CompatibilityLevels, level) {
		failf(stderr, "lakewap registry: -compatibility %q is not one of %s", o.Compatibility, strings.Join(schemas.CompatibilityLevels, ", "))
		return 2
	}
	cfg, ok := LoadClientConfig(o.Config, stderr)
	if !ok {
		return 2
	}
	k := cfg.Kafka
	if k.SchemaRegistry == "" {
		failf(stderr, "lakewap registry: %s sets no kafka.schema_registry_url", o.Config)
		return 2
	}
	rc, err := k.RegistryClient()
	if err != nil {
		failf(stderr, "lakewap registry: %v", err)
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
		done, err := schemas.Register(ctx, rc, tt.topic, tt.types, level)
		all = append(all, done...)
		if err != nil {
			failf(stderr, "lakewap registry: %v (%d subjects registered before)", err, len(all))
			return 1
		}
	}
	if o.JSON {
		_ = writeIndented(stdout, all)
		return 0
	}
	for _, r := range all {
		fmt.Fprintf(stdout, "%s\tid %d\t%s\n", r.Subject, r.ID, r.Compatibility)
	}
	return 0
}
