package schemas

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"time"
)

// TypeUnattestedChange is the result event announcing a change of a target
// or suite that lakewap's attestations do not vouch for.
const TypeUnattestedChange = "UnattestedChange"

// Kinds of UnattestedChange.
const (
	ChangeUnattestedCommit = "unattested_commit"
	ChangeSuiteChanged     = "suite_changed"
)

// UnattestedChange announces a commit on a target lakewap did not attest
// (a manual merge, a revert made with lakectl, a direct commit), or a
// change of a dataset's suite since its last publish: from then on, the
// dataset's next audit is full. The publish that lands on it sends it, so
// it is sent once per commit (or suite change), whatever number of batches
// meet it.
type UnattestedChange struct {
	EventID           string    `avro:"event_id" json:"event_id"`
	Kind              string    `avro:"kind" json:"kind"`
	BatchID           string    `avro:"batch_id" json:"batch_id"`
	Dataset           string    `avro:"dataset" json:"dataset"`
	Repository        string    `avro:"repository" json:"repository"`
	TargetRef         string    `avro:"target_ref" json:"target_ref"`
	CommitID          string    `avro:"commit_id" json:"commit_id"`
	Committer         string    `avro:"committer" json:"committer"`
	Message           string    `avro:"message" json:"message"`
	Detail            string    `avro:"detail" json:"detail"`
	Suite             string    `avro:"suite" json:"suite"`
	PreviousSuite     string    `avro:"previous_suite" json:"previous_suite"`
	PublishedCommitID string    `avro:"published_commit_id" json:"published_commit_id"`
	OccurredAt        time.Time `avro:"occurred_at" json:"occurred_at"`
}

func (UnattestedChange) EventType() string     { return TypeUnattestedChange }
func (e UnattestedChange) Batch() string       { return e.BatchID }
func (e UnattestedChange) DatasetName() string { return e.Dataset }
func (e UnattestedChange) ID() string          { return e.EventID }

// Byte budget of an UnattestedChange: its free texts are clipped to these
// (Clip), so the event stays under MaxUnattestedChangeBytes of JSON.
const (
	maxChangeMessage = 256
	maxChangeDetail  = 512
	// maxChangeCommitID bounds the announced commit's id: lakeFS makes ids
	// of 64 hex digits, but its createCommitRecord takes any from a writer.
	maxChangeCommitID = 128
	// MaxUnattestedChangeBytes bounds one UnattestedChange's JSON (the run
	// record's outbox holds it until it is sent): ids and names are bounded
	// by the inputs' validation, texts by Clip.
	MaxUnattestedChangeBytes = 4096
)

// Clip cuts the free texts of e (message, detail, committer) to their
// budget (schemas.Clip: at a rune boundary, saying how much was cut). A
// commit id lakeFS would not make (over maxChangeCommitID, or other than
// printable ASCII) is shown Go-quoted and clipped, so that it reads as no
// id; the event id (UnattestedChangeID) is the full id's.
func (e UnattestedChange) Clip() UnattestedChange {
	if len(e.CommitID) > maxChangeCommitID || !printable(e.CommitID) {
		e.CommitID = Clip(strconv.QuoteToASCII(e.CommitID), maxChangeCommitID)
	}
	e.Message = Clip(e.Message, maxChangeMessage)
	e.Detail = Clip(e.Detail, maxChangeDetail)
	e.Committer = Clip(e.Committer, maxChangeMessage)
	return e
}

// UnattestedChangeID is the stable event id of the announcement of kind
// about commit on repository's target: one id however many times, and by
// whichever publish, it is sent.
func UnattestedChangeID(repository, target, kind, commit string) string {
	h := sha256.Sum256([]byte(TypeUnattestedChange + "\x00" + repository + "\x00" + target + "\x00" + kind + "\x00" + commit))
	return hex.EncodeToString(h[:16])
}
