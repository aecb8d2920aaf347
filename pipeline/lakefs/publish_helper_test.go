package lakefs

import (
	"context"
	"fmt"
	"time"

	"github.com/lakewap/lakewap/pipeline"
	"github.com/lakewap/lakewap/pipeline/runner"
)

// Publish is the runner's publish path over this client, for the tests:
// seal branch (the seal carries meta with the batch id under
// pipeline.MetaSealedBatchID, so only the merge commit is labelled with
// pipeline.MetaBatchID), then bring the sealed commit into target with
// runner.Publish.
func Publish(ctx context.Context, c *Client, repo, branch, target string, meta map[string]string) (string, error) {
	batch := meta[pipeline.MetaBatchID]
	label := "branch " + branch
	sealMeta := make(map[string]string, len(meta))
	for k, v := range meta {
		sealMeta[k] = v
	}
	if batch != "" {
		label = "batch " + batch
		delete(sealMeta, pipeline.MetaBatchID)
		sealMeta[pipeline.MetaSealedBatchID] = batch
	}
	since := time.Now()
	sealed, err := c.Seal(ctx, repo, branch, "lakewap: writes of "+label, sealMeta)
	if err != nil {
		return "", err
	}
	res, err := runner.Publish(ctx, c, runner.PublishRequest{Repository: repo, Target: target, Sealed: sealed, Since: since,
		Message: fmt.Sprintf("lakewap: publish %s into %s", label, target), Meta: meta}, func(string) {})
	return res.CommitID, err
}
