// Package runs reads the run state store (the changelog topic) as a whole,
// whoever owns its partitions, and renders for operators what the commands
// print: runs (`lakewap runs`), audit reports, the daemon's answers and the
// janitor's decisions. The janitor and the operator commands read runs here.
// Every text in them comes from events, lakeFS or audited data, so what
// reaches a terminal goes through Printable or WriteJSON.
package runs

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync/atomic"
	"text/tabwriter"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/lakewap/lakewap/kafka"

	"github.com/lakewap/lakewap/consumer"
	"github.com/lakewap/lakewap/internal/config"
	"github.com/lakewap/lakewap/internal/runstore"
	"github.com/lakewap/lakewap/pipeline"
	"github.com/lakewap/lakewap/schemas"
)

// Store is the run state store read as a whole; the daemon's runner only
// knows the partitions assigned to it.
type Store struct {
	changelog *consumer.Changelog
	client    *kafka.Client
	topic     string
	// checked, when set, reads each partition as its owner restores it
	// (OpenChecked).
	checked *runstore.Store
	input   string       // the input topic, whose partition count checked needs
	parts   atomic.Int64 // that count, asked at each Load
	log     *slog.Logger
}

// Stored is a run with the changelog partition that holds it. A record
// that does not decode as a run (read without checks) is Unreadable: why,
// under its Key, with no run.
type Stored struct {
	Partition  int    `json:"partition"`
	Key        string `json:"key,omitempty"`
	Unreadable string `json:"unreadable,omitempty"`
	pipeline.Run
}

// Close closes the store's Kafka connections.
func (s *Store) Close() {
	s.changelog.Close()
	s.client.Close()
}

func Open(k config.Kafka) (*Store, error) {
	sec, err := k.Security()
	if err != nil {
		return nil, err
	}
	client, err := kafka.NewClient(k.Brokers, sec)
	if err != nil {
		return nil, err
	}
	cl, err := consumer.NewChangelog(consumer.ChangelogConfig{Brokers: k.Brokers, Topic: k.ChangelogTopic, Security: sec})
	if err != nil {
		return nil, fmt.Errorf("kafka changelog: %w", err)
	}
	return &Store{changelog: cl, topic: cl.Topic(), client: client}, nil
}

// OpenChecked opens the store for a reader that acts on runs (the
// janitor): it reads only the records the runner itself would restore
// (runstore: authentic under cfg's state key, not replayed, matching the
// config), without taking any partition. The others are skipped, and their
// number logged on log at each Load.
func OpenChecked(cfg *config.Config, log *slog.Logger) (*Store, error) {
	key, err := cfg.StateKey()
	if err != nil {
		return nil, err
	}
	s, err := Open(cfg.Kafka)
	if err != nil {
		return nil, err
	}
	s.input, s.log = cfg.Kafka.InputTopic, cmp.Or(log, slog.New(slog.DiscardHandler))
	s.checked, err = runstore.New(runstore.Config{Inner: s.changelog, Key: key, Datasets: cfg.DatasetSpec,
		Partitions: func() int { return int(s.parts.Load()) }})
	if err != nil {
		return nil, err
	}
	return s, nil
}

// partitions asks Kafka how many partitions the changelog has.
func (s *Store) partitions(ctx context.Context) (int, error) {
	n, err := s.client.Partitions(ctx, s.topic)
	if err != nil {
		return 0, fmt.Errorf("changelog: %w", err)
	}
	return n, nil
}

// listed, when set (tests), is called with what the listing counts it
// holds as each record is scanned.
var listed func(held int)

// DefaultMaxListMiB bounds what a listing of the changelog read unchecked
// holds (lakewap runs' -max-mib): whoever may write wap.runs leaves records
// there that count until the daemon's next restore deletes them. lakewap's
// own runs are a few KiB each (at most runner.max_run_bytes).
const DefaultMaxListMiB = 512

// maxListBytes is DefaultMaxListMiB in bytes (tests lower it).
var maxListBytes = DefaultMaxListMiB << 20

// ErrListTooLarge: the changelog holds more live records to list than the
// listing's budget.
var ErrListTooLarge = errors.New("listing over its budget")

// listEntryOverhead is what an entry holds beside its strings: the entry
// (112 bytes), its slot in the map of keys, its place in the sorted slice.
const listEntryOverhead = 256

// entry is a live record of the changelog held as it is stored: it is
// decoded whole only when it is handed out, one at a time (a record of
// 2 MiB of JSON decodes to many times its bytes).
type entry struct {
	partition             int
	key                   string
	raw                   []byte // nil when the record does not decode
	batch, dataset, state string
	unreadable            string
}

func (e *entry) held() int {
	return schemas.HeldBytes(len(e.key)) + schemas.HeldBytes(len(e.raw)) + schemas.HeldBytes(len(e.batch)) +
		schemas.HeldBytes(len(e.dataset)) + schemas.HeldBytes(len(e.state)) + schemas.HeldBytes(len(e.unreadable)) + listEntryOverhead
}

// head is what a listing reads of a record before it hands it out.
type head struct {
	BatchID string         `json:"batch_id"`
	Dataset string         `json:"dataset"`
	State   pipeline.State `json:"state"`
}

// Listing is the runs of the changelog read unchecked that a filter kept,
// sorted by batch id, held as their records.
type Listing struct{ entries []*entry }

// Len is how many runs the listing holds.
func (l *Listing) Len() int { return len(l.entries) }

// Each hands fn the runs in order, each decoded as it is handed out.
func (l *Listing) Each(fn func(Stored) error) error {
	for _, e := range l.entries {
		st := Stored{Partition: e.partition, Key: schemas.Clip(e.key, 256), Unreadable: e.unreadable}
		if n := containers(e.raw); e.raw != nil && n*decodedContainerBytes > maxDecodedRecordBytes {
			st.Unreadable = fmt.Sprintf("a record of %d bytes holding %d objects and arrays, more than lakewap runs decodes (%d MiB as a run; lakewap's own hold a few thousand)",
				len(e.raw), n, maxDecodedRecordBytes>>20)
		} else if e.raw != nil {
			if err := json.Unmarshal(e.raw, &st.Run); err != nil {
				st = Stored{Partition: e.partition, Key: st.Key, Unreadable: schemas.Clip(err.Error(), 256)}
			} else {
				st.Key = ""
			}
		}
		if err := fn(st); err != nil {
			return err
		}
	}
	return nil
}

// decodedContainerBytes is what a JSON object or array of a run record
// may hold decoded at most (a check result is 176 bytes, and a slice's
// growth), and maxDecodedRecordBytes bounds what one record is decoded
// into: 2 MiB of empty check results ({},{},...) were 129 MB as a run.
const (
	decodedContainerBytes = 512
	maxDecodedRecordBytes = 32 << 20
)

// containers counts the objects and arrays of the JSON raw (its '{' and
// '[' outside strings).
func containers(raw []byte) int {
	n := 0
	inString, escaped := false, false
	for _, b := range raw {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case b == '\\':
				escaped = true
			case b == '"':
				inString = false
			}
		case b == '"':
			inString = true
		case b == '{' || b == '[':
			n++
		}
	}
	return n
}

// Stored is every run of the listing, decoded.
func (l *Listing) Stored() []Stored {
	out := make([]Stored, 0, len(l.entries))
	_ = l.Each(func(s Stored) error { out = append(out, s); return nil })
	return out
}

// list reads every partition of the changelog unchecked, keeping the live
// records keep takes (by batch id, dataset and state; a record that does
// not decode has none), and holds at most budget bytes of them, counted as
// the heap holds them: past it, it stops with ErrListTooLarge.
func (s *Store) list(ctx context.Context, keep func(batch, dataset, state string) bool, budget int) (*Listing, error) {
	n, err := s.partitions(ctx)
	if err != nil {
		return nil, err
	}
	var all []*entry
	held, records := 0, 0
	for p := range n {
		live := map[string]*entry{}
		var over error
		scan, stop := context.WithCancel(ctx)
		err := s.changelog.Scan(scan, p, func(key string, v []byte) {
			if over != nil {
				return
			}
			if listed != nil {
				defer func() { listed(held) }()
			}
			if old, ok := live[key]; ok {
				held -= old.held()
				delete(live, key)
			}
			if v == nil || runstore.IsMark(key) {
				return
			}
			e := &entry{partition: p, key: key}
			var h head
			if err := json.Unmarshal(v, &h); err != nil {
				e.unreadable = schemas.Clip(err.Error(), 256)
			} else {
				e.raw, e.batch, e.dataset, e.state = bytes.Clone(v), h.BatchID, h.Dataset, string(h.State)
			}
			if keep != nil && !keep(e.batch, e.dataset, e.state) {
				return
			}
			if held+e.held() > budget {
				over = fmt.Errorf("%w: the changelog topic %s holds more than %d MiB of live records to list (%d records held when partition %d of %d was read): "+
					"records another writer left there count until the daemon's next restore deletes them; "+
					"list fewer with -state or -dataset, or raise -max-mib", ErrListTooLarge, s.topic, budget>>20, records+len(live), p, n)
				stop()
				return
			}
			held += e.held()
			live[key] = e
		})
		stop()
		if over != nil {
			return nil, over
		}
		if err != nil {
			return nil, err
		}
		for _, e := range live {
			all = append(all, e)
		}
		records += len(live)
	}
	slices.SortFunc(all, func(a, b *entry) int {
		return cmp.Or(strings.Compare(a.batch, b.batch), strings.Compare(a.key, b.key))
	})
	return &Listing{entries: all}, nil
}

// Load returns every run of every partition, sorted by batch id. Read
// without checks, a value that does not decode is a Stored that says so,
// and what it holds is bounded as lakewap runs' listing is; read checked,
// only the runs the runner would restore are returned.
func (s *Store) Load(ctx context.Context) ([]Stored, error) {
	if s.checked == nil {
		l, err := s.list(ctx, nil, maxListBytes)
		if err != nil {
			return nil, err
		}
		return l.Stored(), nil
	}
	n, err := s.partitions(ctx)
	if err != nil {
		return nil, err
	}
	in, err := s.client.Partitions(ctx, s.input)
	if err != nil {
		return nil, fmt.Errorf("input topic: %w", err)
	}
	s.parts.Store(int64(in))
	var out []Stored
	aside := 0
	for p := range n {
		raw, skipped, err := s.checked.Read(ctx, p)
		aside += skipped
		if err != nil {
			return nil, err
		}
		for key, v := range raw {
			if runstore.IsMark(key) {
				continue // the partition's place in lakewap's order, not a run
			}
			var r pipeline.Run
			if err := json.Unmarshal(v, &r); err != nil {
				out = append(out, Stored{Partition: p, Key: schemas.Clip(key, 256), Unreadable: schemas.Clip(err.Error(), 256)})
				continue
			}
			out = append(out, Stored{Partition: p, Run: r})
		}
	}
	if aside > 0 {
		s.log.Warn("run records the runner would set aside are skipped (forged, altered, replayed, or not what the config gives)",
			"topic", s.topic, "records", aside)
	}
	slices.SortFunc(out, func(a, b Stored) int {
		return cmp.Or(strings.Compare(a.BatchID, b.BatchID), strings.Compare(a.Key, b.Key))
	})
	return out, nil
}

// Runs is the janitor's view of the store (janitor.Runs).
func (s *Store) Runs(ctx context.Context) ([]pipeline.Run, error) {
	stored, err := s.Load(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]pipeline.Run, 0, len(stored))
	for _, r := range stored {
		if r.Unreadable == "" {
			out = append(out, r.Run)
		}
	}
	return out, nil
}

// ErrNoSuchRun: the state store holds no run of the batch.
var ErrNoSuchRun = errors.New("no run in the state store")

// Find returns the run of batch (of dataset, when not empty).
func (s *Store) Find(ctx context.Context, batch, dataset string) (Stored, error) {
	var stored []Stored
	var err error
	if s.checked == nil {
		var l *Listing
		l, err = s.list(ctx, func(b, d, _ string) bool { return b == batch && (dataset == "" || d == dataset) }, maxListBytes)
		if l != nil {
			stored = l.Stored()
		}
	} else {
		stored, err = s.Load(ctx)
	}
	if err != nil {
		return Stored{}, err
	}
	found := slices.DeleteFunc(Filter(stored, "", dataset), func(r Stored) bool { return r.BatchID != batch || r.Unreadable != "" })
	switch len(found) {
	case 0:
		return Stored{}, fmt.Errorf("batch %s: %w", batch, ErrNoSuchRun)
	case 1:
		return found[0], nil
	}
	return Stored{}, fmt.Errorf("batch %s has runs in %d datasets: name one with -dataset", batch, len(found))
}

// Filter keeps the runs of stored (reusing it) in state (any when empty)
// of dataset (any when empty).
func Filter(stored []Stored, state, dataset string) []Stored {
	return slices.DeleteFunc(stored, func(r Stored) bool {
		return (state != "" && string(r.State) != state) || (dataset != "" && r.Dataset != dataset)
	})
}

// maxTableCellBytes bounds a cell of lakewap runs' table, escaped: the
// table reads the changelog unchecked, whose writer sets texts of any size,
// and tabwriter pads every row to its column's widest cell. lakewap's own
// runs hold no text that long (a batch id is at most 200 bytes).
const maxTableCellBytes = 512

// tableCell is s Printable, clipped to maxTableCellBytes.
func tableCell(s string) string { return schemas.Clip(Printable(s), maxTableCellBytes) }

// tableBlock is how many rows lakewap runs' table aligns at once: it
// prints as it decodes, holding at most a block of rows.
const tableBlock = 256

// WriteTable prints runs for people: a row a run, ages against now, every
// text from events and lakeFS made Printable.
func WriteTable(w io.Writer, runs []Stored, now time.Time) error {
	return writeTable(w, func(fn func(Stored) error) error {
		for _, r := range runs {
			if err := fn(r); err != nil {
				return err
			}
		}
		return nil
	}, now)
}

// WriteListing prints a listing as WriteTable does, or with asJSON as
// WriteJSON does, decoding one run at a time.
func WriteListing(w io.Writer, l *Listing, now time.Time, asJSON bool) error {
	if asJSON {
		return l.Each(func(r Stored) error { return WriteJSON(w, []Stored{r}) })
	}
	return writeTable(w, l.Each, now)
}

func writeTable(w io.Writer, each func(func(Stored) error) error, now time.Time) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "BATCH\tDATASET\tSTATE\tAGE\tIN STATE\tBRANCH\tREASON")
	n, rows := 0, 1
	err := each(func(r Stored) error {
		n++
		if r.Unreadable != "" {
			fmt.Fprintf(tw, "-\t-\tunreadable\t-\t-\t-\t%s\n", tableCell("record "+r.Key+": "+r.Unreadable))
		} else {
			since := r.LandedAt
			if since.IsZero() {
				since = r.StateSince
			}
			reason := r.Reason
			if r.Detail != "" {
				reason = strings.TrimSpace(reason + ": " + OneLine(r.Detail, 80))
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", tableCell(r.BatchID), tableCell(r.Dataset), tableCell(string(r.State)),
				Age(now, since), Age(now, r.StateSince), tableCell(Dash(r.Branch)), tableCell(Dash(reason)))
		}
		if rows++; rows == tableBlock {
			rows = 0
			return tw.Flush()
		}
		return nil
	})
	if err != nil {
		return err
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "%d run(s)\n", n)
	return nil
}

// Age is how long before now t was, to the second, minute or hour; "-" for
// the zero time.
func Age(now, t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	d := now.Sub(t)
	switch {
	case d < time.Minute:
		return d.Round(time.Second).String()
	case d < 48*time.Hour:
		return d.Round(time.Minute).String()
	}
	return fmt.Sprintf("%dd%dh", int(d.Hours())/24, int(d.Hours())%24)
}

// Short is a commit id cut to 12 characters, as lakeFS shows it.
func Short(id string) string { return id[:min(len(id), 12)] }

// Dash is s, or "-" when it is empty.
func Dash(s string) string { return cmp.Or(s, "-") }

// OneLine folds s onto one line of at most n bytes (and an ellipsis).
func OneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > n {
		s = s[:n] + "…"
	}
	return s
}

// WriteJSON prints one JSON object per value (a run, a janitor decision),
// through JSONTerminalSafe: encoding/json escapes only C0 controls, and a raw
// CSI (U+009B) or NEL (U+0085) from an event would reach the terminal.
func WriteJSON[T any](w io.Writer, vs []T) error {
	for _, r := range vs {
		b, err := json.Marshal(r)
		if err != nil {
			return err
		}
		if _, err := w.Write(append(JSONTerminalSafe(b), '\n')); err != nil {
			return err
		}
	}
	return nil
}

// TerminalDangerous is the one rule both outputs of lakewap runs share: the
// runes a terminal would act on rather than show (C0 and C1 controls, DEL)
// and the bidirectional overrides that reorder what is shown.
func TerminalDangerous(r rune) bool {
	return unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r)
}

// JSONTerminalSafe rewrites every TerminalDangerous rune left raw in encoded
// JSON as a \uXXXX escape. encoding/json already escapes C0 and puts no
// whitespace between tokens, so only runes from DEL up (all in the BMP, all
// inside strings) are left: the result decodes to the same values.
func JSONTerminalSafe(b []byte) []byte {
	out := make([]byte, 0, len(b))
	for len(b) > 0 {
		r, n := utf8.DecodeRune(b)
		if r >= 0x7f && TerminalDangerous(r) {
			out = fmt.Appendf(out, "\\u%04x", r)
		} else {
			out = append(out, b[:n]...)
		}
		b = b[n:]
	}
	return out
}

// Printable escapes what a terminal would act on (TerminalDangerous runes,
// tabs that would break the columns, invalid UTF-8): run texts come from
// events and lakeFS, not from the operator.
func Printable(s string) string {
	var b strings.Builder
	for i, r := range s {
		switch {
		case r == utf8.RuneError && !strings.HasPrefix(s[i:], "\uFFFD"):
			fmt.Fprintf(&b, "\\x%02x", s[i])
		case TerminalDangerous(r):
			if r < 0x100 {
				fmt.Fprintf(&b, "\\x%02x", r)
			} else {
				fmt.Fprintf(&b, "\\u%04x", r)
			}
		case r == '\\':
			b.WriteString("\\\\")
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// DatasetOf names the dataset a batch belongs to: the one given, the
// only one configured, or the one its run in the state store has. With the
// daemon's config the store is read as the runner restores it (OpenChecked:
// a record without the state key's seal, replayed, or of a dataset the
// config does not give is not taken); a client config names no datasets
// and holds no state key, so it reads the records as they are, and the
// daemon checks the request.
func DatasetOf(ctx context.Context, cfg *config.Config, batch, dataset string) (string, error) {
	if dataset == "" && len(cfg.Datasets) == 1 {
		for n := range cfg.Datasets {
			dataset = n
		}
	}
	if dataset == "" {
		open := func() (*Store, error) { return OpenChecked(cfg, nil) }
		if cfg.IsClient() {
			open = func() (*Store, error) { return Open(cfg.Kafka) }
		}
		store, err := open()
		if err != nil {
			return "", err
		}
		r, err := store.Find(ctx, batch, "")
		if errors.Is(err, ErrNoSuchRun) {
			return "", fmt.Errorf("%w (or name the dataset with -dataset)", err)
		} else if err != nil {
			return "", err
		}
		dataset = r.Dataset
	}
	if _, ok := cfg.Datasets[dataset]; !ok && !cfg.IsClient() {
		return "", fmt.Errorf("dataset %q is not in the config", dataset)
	}
	return dataset, nil
}

// List is the stored runs in state of dataset ("": any), read within two
// minutes, unchecked, holding at most DefaultMaxListMiB MiB.
func List(ctx context.Context, k config.Kafka, state, dataset string) ([]Stored, error) {
	l, err := ListWithin(ctx, k, state, dataset, DefaultMaxListMiB)
	if err != nil {
		return nil, err
	}
	return l.Stored(), nil
}

// ListWithin is the listing of lakewap runs: the stored runs in state of
// dataset ("": any), read within two minutes, unchecked, held as their
// records within maxMiB MiB (ErrListTooLarge past it, naming the bound).
func ListWithin(ctx context.Context, k config.Kafka, state, dataset string, maxMiB int) (*Listing, error) {
	if maxMiB <= 0 {
		return nil, fmt.Errorf("-max-mib %d: must be positive", maxMiB)
	}
	store, err := Open(k)
	if err != nil {
		return nil, err
	}
	defer store.Close()
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	budget := maxListBytes
	if maxMiB != DefaultMaxListMiB {
		budget = min(maxMiB, 1<<20) << 20
	}
	return store.list(ctx, func(_, d, st string) bool {
		return (state == "" || st == state) && (dataset == "" || d == dataset)
	}, budget)
}
