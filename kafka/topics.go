package kafka

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	kafkago "github.com/segmentio/kafka-go"
)

// TopicSpec describes a topic EnsureTopics creates if it is missing.
type TopicSpec struct {
	Name              string
	Partitions        int               // used when creating; 0 takes the count of SamePartitionsAs
	ReplicationFactor int               // 0: broker default
	Configs           map[string]string // used when creating; cleanup.policy is also checked on an existing topic
	// SamePartitionsAs names a topic (listed earlier or existing) whose
	// partition count this one must equal, as the changelog must the input.
	SamePartitionsAs string
	// SameWhy says why the counts must be equal, for the error (default:
	// the state of SamePartitionsAs's partition N lives in this one's).
	SameWhy string
	// MinMessageBytes is the largest record batch lakewap writes to the
	// topic (0: not checked). A topic whose max.message.bytes, as the
	// broker reports it, is less would refuse such a write on every
	// attempt, so it is a *SmallTopicError; Need says what must fit.
	MinMessageBytes int
	Need            string
}

// SmallTopicError is EnsureTopics' and CheckTopics' answer for a topic
// that takes smaller messages than TopicSpec.MinMessageBytes.
type SmallTopicError struct {
	Topic           string
	MaxMessageBytes int    // the topic's max.message.bytes
	MinMessageBytes int    // what lakewap needs
	Need            string // what must fit, from the spec
}

func (e *SmallTopicError) Error() string {
	return fmt.Sprintf("topic %s takes messages of at most %d bytes (max.message.bytes), less than the %d bytes %s: raise its max.message.bytes",
		e.Topic, e.MaxMessageBytes, e.MinMessageBytes, cmp.Or(e.Need, "lakewap writes there"))
}

// MissingTopicError is CheckTopics' answer for a topic that does not exist.
type MissingTopicError struct{ Topic string }

func (e *MissingTopicError) Error() string { return "topic " + e.Topic + " does not exist" }

// EnsureTopics creates the topics that do not exist yet, then checks that
// partition counts that must match do, and that existing topics have the
// cleanup.policy their spec asks for.
func (c *Client) EnsureTopics(ctx context.Context, topics ...TopicSpec) error {
	return c.ensureTopics(ctx, true, topics)
}

// CheckTopics checks topics as EnsureTopics does but creates none: a
// missing one is a *MissingTopicError.
func (c *Client) CheckTopics(ctx context.Context, topics ...TopicSpec) error {
	return c.ensureTopics(ctx, false, topics)
}

func (c *Client) ensureTopics(ctx context.Context, create bool, topics []TopicSpec) error {
	client := c.admin
	names := make([]string, 0, len(topics))
	for _, t := range topics {
		names = append(names, t.Name)
		if t.SamePartitionsAs != "" {
			names = append(names, t.SamePartitionsAs)
		}
	}
	counts, err := partitionCounts(ctx, client, names)
	if err != nil {
		return err
	}
	var created []string
	for _, t := range topics {
		if t.Name == "" {
			return errors.New("ensure topics: a topic has no name")
		}
		_, exists := counts[t.Name]
		if !exists && !create {
			return &MissingTopicError{Topic: t.Name}
		}
		if !exists {
			parts := t.Partitions
			if parts == 0 && t.SamePartitionsAs != "" {
				parts = counts[t.SamePartitionsAs]
			}
			if parts <= 0 {
				return fmt.Errorf("ensure topics: cannot create %s: Partitions not set and %q does not exist to copy from", t.Name, t.SamePartitionsAs)
			}
			rf := t.ReplicationFactor
			if rf == 0 {
				rf = -1
			}
			tc := kafkago.TopicConfig{Topic: t.Name, NumPartitions: parts, ReplicationFactor: rf}
			for _, k := range slices.Sorted(maps.Keys(t.Configs)) {
				tc.ConfigEntries = append(tc.ConfigEntries, kafkago.ConfigEntry{ConfigName: k, ConfigValue: t.Configs[k]})
			}
			res, err := client.CreateTopics(ctx, &kafkago.CreateTopicsRequest{Topics: []kafkago.TopicConfig{tc}})
			if err == nil {
				err = res.Errors[t.Name]
			}
			if err == nil {
				counts[t.Name] = parts
				created = append(created, t.Name)
				continue
			}
			if !errors.Is(err, kafkago.TopicAlreadyExists) {
				return fmt.Errorf("ensure topics: creating %s: %w", t.Name, err)
			}
			// Someone else created it meanwhile; check it like an existing one.
			fresh, err := partitionCounts(ctx, client, []string{t.Name})
			if err != nil {
				return err
			}
			counts[t.Name] = fresh[t.Name]
		}
		if err := checkCleanupPolicy(ctx, client, t); err != nil {
			return err
		}
	}
	for _, t := range topics {
		if t.SamePartitionsAs == "" {
			continue
		}
		want, ok := counts[t.SamePartitionsAs]
		if !ok {
			return fmt.Errorf("ensure topics: %s must have as many partitions as %s, which does not exist", t.Name, t.SamePartitionsAs)
		}
		if got := counts[t.Name]; got != want {
			why := cmp.Or(t.SameWhy, fmt.Sprintf("the state of %s partition N lives in %s partition N", t.SamePartitionsAs, t.Name))
			return fmt.Errorf("ensure topics: %s has %d partitions but %s has %d: they must be equal, because %s (recreate %s with %d partitions)",
				t.Name, got, t.SamePartitionsAs, want, why, t.Name, want)
		}
	}
	if len(created) > 0 {
		// A restore right after creation would otherwise fail on Apache Kafka.
		ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		if err := Await(ctx, client, created...); err != nil {
			return fmt.Errorf("ensure topics: %w", err)
		}
	}
	return checkMessageBytes(ctx, client, topics)
}

// checkMessageBytes fails with a *SmallTopicError when a topic takes
// smaller messages than its spec's MinMessageBytes (a topic lakewap made
// has the broker's default, which may be lower too). A broker that does not
// report max.message.bytes, or a topic lakewap may not describe
// (DescribeConfigs), is not checked.
func checkMessageBytes(ctx context.Context, client *kafkago.Client, topics []TopicSpec) error {
	req := &kafkago.DescribeConfigsRequest{}
	want := map[string]TopicSpec{}
	for _, t := range topics {
		if t.MinMessageBytes > 0 {
			want[t.Name] = t
			req.Resources = append(req.Resources, kafkago.DescribeConfigRequestResource{
				ResourceType: kafkago.ResourceTypeTopic, ResourceName: t.Name, ConfigNames: []string{"max.message.bytes"}})
		}
	}
	if len(req.Resources) == 0 {
		return nil
	}
	res, err := client.DescribeConfigs(ctx, req)
	if err != nil {
		return fmt.Errorf("ensure topics: reading max.message.bytes: %w", err)
	}
	for _, r := range res.Resources {
		if errors.Is(r.Error, kafkago.TopicAuthorizationFailed) {
			continue // a principal without DescribeConfigs on the topic: it cannot tell, so it does not stop
		}
		if r.Error != nil {
			return fmt.Errorf("ensure topics: reading max.message.bytes of %s: %w", r.ResourceName, r.Error)
		}
		t, ok := want[r.ResourceName]
		if !ok {
			continue
		}
		for _, e := range r.ConfigEntries {
			n, err := strconv.Atoi(e.ConfigValue)
			if e.ConfigName != "max.message.bytes" || err != nil {
				continue
			}
			if n < t.MinMessageBytes {
				return &SmallTopicError{Topic: t.Name, MaxMessageBytes: n, MinMessageBytes: t.MinMessageBytes, Need: t.Need}
			}
		}
	}
	return nil
}

// partitionCounts returns the partition count of each named topic that exists.
func partitionCounts(ctx context.Context, client *kafkago.Client, names []string) (map[string]int, error) {
	md, err := client.Metadata(ctx, &kafkago.MetadataRequest{Topics: names})
	if err != nil {
		return nil, fmt.Errorf("ensure topics: reading metadata: %w", err)
	}
	counts := map[string]int{}
	for _, t := range md.Topics {
		switch {
		case t.Error == nil:
			counts[t.Name] = len(t.Partitions)
		case errors.Is(t.Error, kafkago.UnknownTopicOrPartition):
		default:
			return nil, fmt.Errorf("ensure topics: metadata of %s: %w", t.Name, t.Error)
		}
	}
	return counts, nil
}

// checkCleanupPolicy fails when an existing topic's cleanup.policy lacks what
// its spec asks for: a changelog that is not compacted grows without bound and
// its restores get slower forever.
func checkCleanupPolicy(ctx context.Context, client *kafkago.Client, t TopicSpec) error {
	want, ok := t.Configs["cleanup.policy"]
	if !ok {
		return nil
	}
	res, err := client.DescribeConfigs(ctx, &kafkago.DescribeConfigsRequest{
		Resources: []kafkago.DescribeConfigRequestResource{{
			ResourceType: kafkago.ResourceTypeTopic, ResourceName: t.Name, ConfigNames: []string{"cleanup.policy"},
		}},
	})
	if err != nil {
		return fmt.Errorf("ensure topics: reading cleanup.policy of %s: %w", t.Name, err)
	}
	for _, r := range res.Resources {
		if r.Error != nil {
			return fmt.Errorf("ensure topics: reading cleanup.policy of %s: %w", t.Name, r.Error)
		}
		for _, e := range r.ConfigEntries {
			if e.ConfigName != "cleanup.policy" {
				continue
			}
			if slices.ContainsFunc(strings.Split(e.ConfigValue, ","), func(p string) bool { return strings.TrimSpace(p) == want }) {
				return nil
			}
			return fmt.Errorf("ensure topics: %s has cleanup.policy=%s, want %s", t.Name, e.ConfigValue, want)
		}
	}
	return fmt.Errorf("ensure topics: %s: broker did not report cleanup.policy", t.Name)
}
