package config

import (
	"strings"
	"testing"
)

// TestDeploymentIDIsBounded (review 51): kafka.deployment_id, which
// operators' signatures name, is printable ASCII without spaces, at most
// 128 bytes; a bad one is a config error naming the field.
func TestDeploymentIDIsBounded(t *testing.T) {
	for id, ok := range map[string]bool{"": true, "prod-eu.1": true, strings.Repeat("d", 128): true,
		strings.Repeat("d", 129): false, "prod eu": false, "prod\nx": false, "prod\u00e9": false} {
		c := &Config{}
		c.Kafka.DeploymentID = id
		err := c.Validate()
		bad := err != nil && strings.Contains(err.Error(), "kafka.deployment_id")
		if bad == ok {
			t.Errorf("kafka.deployment_id %q: error %v; want accepted %v", id, err, ok)
		}
	}
}
