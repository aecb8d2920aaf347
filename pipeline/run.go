package pipeline

import (
	"crypto/sha256"
	"encoding/hex"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/lakewap/lakewap/schemas"
)

// State is where a Run is in the WAP cycle.
type State string

// Run states (named in schemas). Pending holds writes that arrived before
// their BatchLanded.
const (
	StatePending        State = schemas.StatePending
	StateLanded         State = schemas.StateLanded
	StateAwaitingWrites State = schemas.StateAwaitingWrites
	StateAuditing       State = schemas.StateAuditing
	StatePublishing     State = schemas.StatePublishing
	StatePublished      State = schemas.StatePublished
	StateAborted        State = schemas.StateAborted
	StateFailed         State = schemas.StateFailed
)

// Open reports whether a run in the state is in progress: it holds (or is
// about to make) a branch and work is still to come.
func (s State) Open() bool {
	return s == StateLanded || s == StateAwaitingWrites || s == StateAuditing || s == StatePublishing
}

// Terminal reports whether no further step will run for the state.
func (s State) Terminal() bool {
	return s == StatePublished || s == StateAborted || s == StateFailed
}

// PastDeadline reports whether the run is still in flight after its
// deadline (the write deadline, or the pending TTL of writes that came
// before their BatchLanded): a deadline that passed normally ends the run at
// the next tick, so a run that stays here is stuck.
func (r Run) PastDeadline(now time.Time) bool {
	return !r.State.Terminal() && !r.Deadline.IsZero() && now.After(r.Deadline)
}

// Step names the piece of work a state asks for; used in errors and retries.
type Step string

// Steps the runner executes.
const (
	StepBranch  Step = "branch"
	StepAudit   Step = "audit"
	StepPublish Step = "publish"
	StepCleanup Step = "cleanup"
	StepRevert  Step = "revert"
)

// Run is the durable state of one batch. It is what the changelog stores, so
// every field needed to resume after a crash lives here, deadlines included.
type Run struct {
	BatchID    string `json:"batch_id"`
	Dataset    string `json:"dataset"`
	Repository string `json:"repository,omitempty"`
	Branch     string `json:"branch,omitempty"`
	Source     string `json:"source,omitempty"` // ref the branch is created from
	// BranchFrom is the commit Source pointed at when the run first asked,
	// recorded before the branch is made from it: an existing branch is the
	// run's only when it points there.
	BranchFrom string `json:"branch_from,omitempty"`
	Target     string `json:"target,omitempty"` // branch the batch is published to
	State      State  `json:"state"`

	ExpectedWrites []string `json:"expected_writes,omitempty"`
	// ExpectedSums stand for ExpectedWrites once a finished run is shed
	// (Run.shed): the first 4 bytes of each name's SHA-256, sorted, enough to tell
	// a late write of another name (refused) from one of theirs (a no-op).
	ExpectedSums []uint32             `json:"expected_sums,omitempty"`
	Writes       map[string]time.Time `json:"writes,omitempty"` // write name -> when it completed
	Deadline     time.Time            `json:"deadline,omitempty"`
	KeepBranch   bool                 `json:"keep_branch,omitempty"` // keep the branch after an abort
	// Attributes are BatchLanded's attributes, copied into the publish
	// commit's metadata (keys under "wap." are lakewap's and are dropped).
	Attributes map[string]string `json:"attributes,omitempty"`

	LandedAt time.Time `json:"landed_at,omitempty"`
	// Trace is the W3C trace context the BatchLanded came with (at most
	// 55 + schemas.MaxTraceStateBytes bytes): on every result event's
	// message and in the merge commit's metadata.
	Trace      schemas.TraceContext `json:"trace,omitzero"`
	BatchTime  time.Time            `json:"batch_time,omitempty"` // occurred_at of BatchLanded, for freshness
	StateSince time.Time            `json:"state_since"`
	UpdatedAt  time.Time            `json:"updated_at"`
	// Floor is the newest batch time of a published run of this dataset
	// that its partition forgot over Policy.MaxFinishedRuns when the record was
	// written: the runner stamps it on the records it writes, so that it
	// outlives the forgotten runs (Landed.Floor).
	Floor time.Time `json:"floor,omitzero"`

	SealedCommit string `json:"sealed_commit,omitempty"` // commit audited and merged
	// Seals are the commits the audit step's attempts sealed the branch
	// with (Sealed), oldest first, at most MaxSeals: an attempt run again
	// after a restart seals on the seal the stopped one made, and only a
	// seal recorded here is taken for lakewap's own (a commit's committer
	// and metadata can be forged: lakeFS's createCommitRecord).
	Seals []string `json:"seals,omitempty"`
	// PublishSince is when publishing SealedCommit started: the merge that
	// publishes it is looked for among target commits made since then.
	PublishSince time.Time            `json:"publish_since,omitempty"`
	Report       *schemas.AuditReport `json:"report,omitempty"`
	// Suites is the digest of the suites Report's verdict was reached
	// under (the auditor's SuitesDigest: the dataset's and those of the
	// other datasets of its target, at most MaxSuitesBytes): a publish
	// whose config holds other suites rechecks the batch under them
	// first, whether or not the target moved.
	Suites string `json:"suites,omitempty"`
	// AuditedOnto is the target's head Report judged the batch merged into
	// (an Onto audit: the batch's branch is no snapshot of that head); empty
	// when Report judged the sealed commit itself. The publish rechecks
	// the batch onto any other head, even one that is the seal's
	// merge-base with the target (a hard reset onto it), since the seal
	// itself was never audited.
	AuditedOnto string `json:"audited_onto,omitempty"`
	// OntoRecorded says that the Audited that set Report recorded
	// AuditedOnto (this version's). A record without it, stored by a
	// version before AuditedOnto, of a batch not audited against its
	// branch point, may hold an Onto audit's verdict with no AuditedOnto:
	// the publish rechecks it onto any head, also the seal's merge-base.
	OntoRecorded bool   `json:"onto_recorded,omitempty"`
	CommitID     string `json:"commit_id,omitempty"` // merge commit on Target
	Reason       string `json:"reason,omitempty"`
	FailedStep   Step   `json:"failed_step,omitempty"` // the step whose failure ended the run
	Detail       string `json:"detail,omitempty"`

	// AuditOpen: an attempt of the audit step, of a publish's recheck, or of
	// a revert's audit (in published, counted afresh for each revert),
	// was recorded as begun (AuditBegun) and has not reported. A run
	// restored with it set had that attempt end with its process (out of
	// memory, a crash inside DuckDB); AuditLost counts such attempts.
	// AuditSolo: the open attempt runs as the only audit in its process, so
	// its loss is its own. A loss beside other audits makes the run
	// AuditSuspect: its attempts run alone from then on, and only a loss
	// alone that brings AuditLost to Policy.MaxAuditAttempts aborts the run
	// (audit_crashed), instead of auditing it again at every restore, on
	// every instance that takes its partition. A hostile batch's deaths are
	// thus not counted against the batches audited beside it.
	AuditOpen    bool `json:"audit_open,omitempty"`
	AuditSolo    bool `json:"audit_solo,omitempty"`
	AuditSuspect bool `json:"audit_suspect,omitempty"`
	AuditLost    int  `json:"audit_lost,omitempty"`

	// Retry bookkeeping for the current step.
	Attempts     int       `json:"attempts,omitempty"`
	FirstFailure time.Time `json:"first_failure,omitempty"`
	RetryAt      time.Time `json:"retry_at,omitempty"`
	LastError    string    `json:"last_error,omitempty"`
	// Looking is the failure of a publish that ends the run once the last
	// look (DoLook) does not find the sealed commit on the target.
	Looking *Failure `json:"looking,omitempty"`

	// CleanupPending: the branch is to be deleted (abort policy).
	CleanupPending bool `json:"cleanup_pending,omitempty"`

	// delivery is the outbox, receipts and re-notification; its fields are
	// stored inline, as when they were the run's own.
	delivery

	// Operator requests (lakewap retry, revert, cancel). Request is the id
	// of the one the run's course now answers: its result events carry it.
	// Retries counts the retries, which give later events ids of their own.
	// RetryAsked is when the last retry carried out was asked for (its
	// occurred_at): a retry asked for no later is a copy, refused.
	Request    string    `json:"request,omitempty"`
	Retries    int       `json:"retries,omitempty"`
	RetriedBy  string    `json:"retried_by,omitempty"`
	RetryAsked time.Time `json:"retry_asked,omitzero"`
	Revert     *Revert   `json:"revert,omitempty"`
}

// Revert is an operator's revert of a published run: asked for (Commit
// empty, the revert step runs) or done.
type Revert struct {
	RequestID   string    `json:"request_id"`
	By          string    `json:"by,omitempty"`
	Reason      string    `json:"reason"`
	RequestedAt time.Time `json:"requested_at"`
	// Force is the operator's -force: the revert is made without auditing
	// the target as it leaves it.
	Force bool `json:"force,omitempty"`
	// PublishCommit is the merge commit undone; Commit the revert commit on
	// the target, made At.
	PublishCommit string    `json:"publish_commit,omitempty"`
	Commit        string    `json:"commit,omitempty"`
	At            time.Time `json:"at,omitempty"`
	// Audited: the revert commit is lakewap's merge of its audited revert.
	Audited bool `json:"audited,omitempty"`
}

// Failure is a step failure that waits for the last look before it fails
// its run (see Run.Looking).
type Failure struct {
	Err      string `json:"error"`
	Attempts int    `json:"attempts"`
}

// revertPending reports whether a revert was asked for and is not done.
func (r Run) revertPending() bool { return r.Revert != nil && r.Revert.Commit == "" }

// Outgoing is one result event waiting in a run's outbox. Exactly one of
// the event fields is set.
type Outgoing struct {
	EventID     string                  `json:"event_id"`
	State       State                   `json:"state"`
	BranchReady *schemas.BranchReady    `json:"branch_ready,omitempty"`
	Published   *schemas.BatchPublished `json:"published,omitempty"`
	Aborted     *schemas.BatchAborted   `json:"aborted,omitempty"`
	Failed      *schemas.BatchFailed    `json:"failed,omitempty"`
	Reverted    *schemas.BatchReverted  `json:"reverted,omitempty"`
	Refused     *schemas.RequestRefused `json:"refused,omitempty"`
	// Change announces a commit on the target lakewap did not attest, or a
	// suite change, that the run's publish landed on.
	Change *schemas.UnattestedChange `json:"change,omitempty"`
	// RequestID is the operator request the event answers, if any.
	RequestID string `json:"request_id,omitempty"`
}

// ResultOnly reports whether o goes to the results topic only: the answers
// to operator requests are not part of a run's Slack message.
func (o Outgoing) ResultOnly() bool { return o.Reverted != nil || o.Refused != nil }

// Event returns the result event carried by o.
func (o Outgoing) Event() schemas.Event {
	switch {
	case o.BranchReady != nil:
		return *o.BranchReady
	case o.Published != nil:
		return *o.Published
	case o.Aborted != nil:
		return *o.Aborted
	case o.Failed != nil:
		return *o.Failed
	case o.Reverted != nil:
		return *o.Reverted
	case o.Refused != nil:
		return *o.Refused
	case o.Change != nil:
		return *o.Change
	}
	return nil
}

// RunEvent reports whether o tells of the run itself (what Slack's message
// of the run shows and a re-notification sends again): not an answer to
// an operator, nor an announcement about the target.
func (o Outgoing) RunEvent() bool { return o.Event() != nil && !o.ResultOnly() && o.Change == nil }

// EventID is stable for a (dataset, batch, kind) triple, so a result re-sent
// after a crash carries the same id and downstream consumers can drop
// duplicates, while the same batch id in two datasets never shares one.
func EventID(dataset, batchID, kind string) string {
	h := sha256.Sum256([]byte(dataset + "\x00" + batchID + "\x00" + kind))
	return hex.EncodeToString(h[:16])
}

// RunKey is the store key of a run: batch ids are unique per dataset only.
// Neither a batch id nor a dataset name can contain "/".
func RunKey(dataset, batchID string) string { return dataset + "/" + batchID }

// Key is the run's store key.
func (r Run) Key() string { return RunKey(r.Dataset, r.BatchID) }

// eventID is EventID for this run. After an operator's retry the run's
// events are new ones: the retry count is part of their ids.
func (r Run) eventID(kind string) string {
	if r.Retries > 0 {
		kind += " retry " + strconv.Itoa(r.Retries)
	}
	return EventID(r.Dataset, r.BatchID, kind)
}

// Clone returns a deep copy of r: what the caller changes in it leaves r
// as it is.
func (r Run) Clone() Run {
	c := r
	c.ExpectedWrites = append([]string(nil), r.ExpectedWrites...)
	c.ExpectedSums = slices.Clone(r.ExpectedSums)
	c.Seals = slices.Clone(r.Seals)
	c.Attributes, c.Writes = maps.Clone(r.Attributes), maps.Clone(r.Writes)
	c.delivery = r.delivery.clone()
	if r.Revert != nil {
		rv := *r.Revert
		c.Revert = &rv
	}
	if r.Looking != nil {
		f := *r.Looking
		c.Looking = &f
	}
	return c
}

// missingWrites lists expected writes not yet complete, in declared order.
func (r Run) missingWrites() []string {
	return slices.DeleteFunc(slices.Clone(r.ExpectedWrites), func(w string) bool {
		_, ok := r.Writes[w]
		return ok
	})
}
