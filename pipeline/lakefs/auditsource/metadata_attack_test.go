package auditsource

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/treeverse/lakefs/pkg/api/apigen"
)

// TestWritersUserMetadataDoesNotFillTheListingsPages, on the real lakeFS
// server: lakeFS lists each object's user metadata unless asked not to,
// and takes metadata of any size from a writer linking an object. lakewap
// keeps none of it, yet its listings read it: a page of the answer is read
// to 64 MiB at most, so two objects of 31.75 MiB of metadata each, merged by
// their writer's batch (its own listing fits), left a page of the table no room:
// another writer's batch adding honest files to the table was refused, and
// every listing decoded the 63.5 MiB. Listings now ask lakeFS to leave user
// metadata out (and refuse a content type, which lakeFS always lists, over
// lakefs.MaxContentTypeBytes).
func TestWritersUserMetadataDoesNotFillTheListingsPages(t *testing.T) {
	ctx := context.Background()
	s := startRelinkStack(t)
	if err := s.lake.Upload(ctx, "lake", "main", "other/seed", strings.NewReader("z")); err != nil {
		t.Fatal(err)
	}
	s.commit(t, "main", "seed")
	// The writer's objects, as its merged batch left them on main: lakeFS
	// commits an entry of up to 40 MiB (committed.MaxValueComponentBytes).
	no := false
	for i := range 2 {
		p := fmt.Sprintf("%sbatch=1/part-%d.csv", relinkPrefix, i)
		loc, err := s.api.GetPhysicalAddressWithResponse(ctx, "lake", "main", &apigen.GetPhysicalAddressParams{Path: p, Presign: &no})
		if err != nil || loc.JSON200 == nil || loc.JSON200.PhysicalAddress == nil {
			t.Fatalf("physical address: %v %s", err, loc.Body)
		}
		file := strings.TrimPrefix(*loc.JSON200.PhysicalAddress, "local://")
		if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(file, []byte(relinkGood), 0o644); err != nil {
			t.Fatal(err)
		}
		meta := map[string]string{"x-note": strings.Repeat("m", 127<<18)} // 31.75 MiB
		link, err := s.api.LinkPhysicalAddressWithResponse(ctx, "lake", "main", &apigen.LinkPhysicalAddressParams{Path: p},
			apigen.LinkPhysicalAddressJSONRequestBody{Staging: apigen.StagingLocation{PhysicalAddress: loc.JSON200.PhysicalAddress},
				Checksum: "abc", SizeBytes: int64(len(relinkGood)), UserMetadata: &apigen.StagingMetadata_UserMetadata{AdditionalProperties: meta}})
		if err != nil || link.StatusCode() != http.StatusOK {
			t.Fatalf("lakeFS refused 31.75 MiB of user metadata (the premise): %v HTTP %d %.300s", err, link.StatusCode(), link.Body)
		}
	}
	head := s.commit(t, "main", "the writer's batch")
	if objs, err := s.src.List(ctx, "lake", head, relinkPrefix); err != nil || len(objs) != 2 {
		t.Fatalf("the writer's batch's table: %d objects, err %.300v; want its 2 objects (its own listing fits)", len(objs), err)
	}

	// Another writer's batch: honest files in the same table.
	if _, err := s.lake.EnsureBranch(ctx, "lake", "honest", "main"); err != nil {
		t.Fatal(err)
	}
	for i := range 1000 {
		if err := s.lake.Upload(ctx, "lake", "honest", fmt.Sprintf("%sbatch=2/part-%04d-%s.csv", relinkPrefix, i, strings.Repeat("h", 900)), strings.NewReader(relinkGood)); err != nil {
			t.Fatal(err)
		}
	}
	sealed := s.commit(t, "honest", "the honest batch")
	objs, err := s.src.List(ctx, "lake", sealed, relinkPrefix)
	if err != nil || len(objs) != 1002 {
		t.Errorf("the honest batch's table: %d objects, err %.300v; want its 1,000 objects and the writer's 2", len(objs), err)
	}
}
