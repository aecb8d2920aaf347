package main

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/lakewap/lakewap/consumer"
	"github.com/lakewap/lakewap/internal/config"
)

const tailUsage = `Usage:
  lakewap tail [--brokers B | --config F] [--topic T] [--from-beginning] [--follow=false] [--max N]

Prints the events of a topic (default: the results topic) as JSON lines:
  {"topic","partition","offset","time","key","type","event":{...},"headers":{...}}
A value that does not decode is printed as value_base64 with decode_error;
dead letters (wap.dlq.* headers) always carry value_base64, the original bytes.
Without --from-beginning only new events are printed. With --follow=false
tail stops at the end of the topic as it was when tail started.

Flags:
`

func cmdTail(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var kf kafkaFlags
	var o tailOptions
	fs := newFlagSet("tail")
	fs.Usage = func() { fmt.Fprint(fs.Output(), tailUsage); fs.PrintDefaults() }
	kf.register(fs, "topic to read (default: the config's results topic, else "+defaultResultsTopic+")")
	fs.BoolVar(&o.FromBeginning, "from-beginning", false, "start at the oldest retained event instead of the end")
	fs.BoolVar(&o.Follow, "follow", true, "keep waiting for new events; false stops at the end")
	fs.IntVar(&o.Max, "max", 0, "stop after printing this many events (0: no limit)")
	if code, ok := parseFlags(fs, args, stdout, stderr); !ok {
		return code
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "lakewap tail: unexpected argument %q\n", fs.Arg(0))
		return 2
	}
	t, err := kf.connect()
	if err != nil {
		fmt.Fprintf(stderr, "lakewap tail: %v\n", err)
		return 2
	}
	defer t.close()
	o.Topic = t.topic(kf.topic, func(k config.Kafka) string { return k.ResultsTopic }, defaultResultsTopic)
	if err := tailTopic(ctx, t, o, stdout); err != nil {
		fmt.Fprintf(stderr, "lakewap tail: %v\n", err)
		return 1
	}
	return 0
}

type tailOptions struct {
	Topic         string
	FromBeginning bool
	Follow        bool
	Max           int
}

// tailTopic prints the messages of every partition of o.Topic until ctx
// ends, o.Max were printed, or (without Follow) every partition reached the
// end it had when tail started. Partitions are read concurrently, so lines
// of different partitions interleave; each partition's are in order.
func tailTopic(ctx context.Context, t *kafkaTarget, o tailOptions, out io.Writer) error {
	first, next, err := offsets(ctx, t, o.Topic)
	if err != nil {
		return err
	}
	from, until := map[int]int64{}, next
	for partition, end := range next {
		if from[partition] = end; o.FromBeginning {
			from[partition] = first[partition]
		}
	}
	if o.Follow {
		until = nil
	}
	printed := 0
	var werr error
	err = readPartitions(ctx, t, o.Topic, from, until, func(m kafka.Message) bool {
		dctx, dcancel := context.WithTimeout(ctx, 10*time.Second)
		_, isDeadLetter := headerValue(m.Headers, consumer.HeaderDLQReason)
		line, err := json.Marshal(recordOf(dctx, m, t.codec, isDeadLetter))
		dcancel()
		if err == nil {
			_, err = fmt.Fprintf(out, "%s\n", line)
		}
		werr = err
		printed++
		return err != nil || (o.Max > 0 && printed >= o.Max)
	})
	return cmp.Or(werr, err) // done, or interrupted: both are a normal end
}

// readPartitions reads every partition of topic in from, each from its
// offset there, and hands the messages to fn one at a time, each
// partition's in order, until fn says stop, ctx ends, or (with until) every
// partition reached its offset in until. It returns the first read error;
// the end of ctx is none.
func readPartitions(ctx context.Context, t *kafkaTarget, topic string, from, until map[int]int64, fn func(kafka.Message) (stop bool)) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	msgs := make(chan kafka.Message)
	errc := make(chan error, len(from))
	var wg sync.WaitGroup
	for partition, start := range from {
		end, bounded := until[partition]
		if until != nil && start >= end {
			continue
		}
		r := kafka.NewReader(kafka.ReaderConfig{Brokers: t.brokers, Topic: topic, Partition: partition, Dialer: t.dialer,
			MinBytes: 1, MaxBytes: 10 << 20, MaxWait: 250 * time.Millisecond})
		if err := r.SetOffset(start); err != nil { // only fails on a reader in a group
			_ = r.Close()
			return err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer r.Close()
			for {
				m, err := r.ReadMessage(ctx)
				if err != nil {
					if ctx.Err() == nil {
						errc <- fmt.Errorf("reading %s/%d: %w", topic, partition, err)
						cancel()
					}
					return
				}
				select {
				case msgs <- m:
				case <-ctx.Done():
					return
				}
				if bounded && m.Offset+1 >= end {
					return
				}
			}
		}()
	}
	go func() { wg.Wait(); close(msgs) }()
	for m := range msgs {
		if fn(m) {
			break
		}
	}
	cancel()
	for range msgs { // let the readers stop
	}
	select {
	case err := <-errc:
		return err
	default:
		return nil
	}
}

// offsets returns the first offset of every partition of topic and the
// offset its next message will have.
func offsets(ctx context.Context, t *kafkaTarget, topic string) (first, next map[int]int64, err error) {
	client := &kafka.Client{Addr: kafka.TCP(t.brokers...), Transport: t.transport, Timeout: 10 * time.Second}
	md, err := client.Metadata(ctx, &kafka.MetadataRequest{Topics: []string{topic}})
	if err != nil {
		return nil, nil, fmt.Errorf("metadata of %s: %w", topic, err)
	}
	if len(md.Topics) != 1 || md.Topics[0].Error != nil || len(md.Topics[0].Partitions) == 0 {
		var terr error
		if len(md.Topics) == 1 {
			terr = md.Topics[0].Error
		}
		return nil, nil, fmt.Errorf("topic %s: not found (%v)", topic, terr)
	}
	var reqs []kafka.OffsetRequest
	for _, p := range md.Topics[0].Partitions {
		reqs = append(reqs, kafka.FirstOffsetOf(p.ID), kafka.LastOffsetOf(p.ID))
	}
	offs, err := client.ListOffsets(ctx, &kafka.ListOffsetsRequest{Topics: map[string][]kafka.OffsetRequest{topic: reqs}})
	if err != nil {
		return nil, nil, fmt.Errorf("offsets of %s: %w", topic, err)
	}
	first, next = map[int]int64{}, map[int]int64{}
	for _, po := range offs.Topics[topic] {
		if po.Error != nil {
			return nil, nil, fmt.Errorf("offsets of %s/%d: %w", topic, po.Partition, po.Error)
		}
		first[po.Partition], next[po.Partition] = po.FirstOffset, po.LastOffset
	}
	return first, next, nil
}

func headerValue(hs []kafka.Header, key string) (string, bool) {
	for _, h := range hs {
		if h.Key == key {
			return string(h.Value), true
		}
	}
	return "", false
}
