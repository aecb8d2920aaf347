// Package blockstore reads lakeFS's blockstore directly, not through
// lakeFS: the stored size of an object at a physical address, which
// lakeFS's API does not report (it serves the size a writer claimed). The
// audit's check stored_sizes compares the two (audit.Blockstore).
//
// It may import audit (the interface and error classes it implements).
package blockstore

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/lakewap/lakewap/audit"
)

// Local is lakeFS's local blockstore, a directory lakewap can read:
// Root is lakeFS's blockstore.local.path, and an object's physical
// address is local://<Root>/<namespace>/data/....
type Local struct{ Root string }

var _ audit.Blockstore = Local{}

// StoredSize is the size of the file at address, which must lie under
// Root. A missing file wraps audit.ErrNotStored.
func (l Local) StoredSize(_ context.Context, address string) (int64, error) {
	p, ok := strings.CutPrefix(address, "local://")
	if !ok || !filepath.IsAbs(p) {
		return 0, fmt.Errorf("blockstore: %q is not an address of the local blockstore (local:///...)", address)
	}
	p = filepath.Clean(p)
	if root := filepath.Clean(l.Root); !strings.HasPrefix(p, root+string(filepath.Separator)) {
		return 0, fmt.Errorf("blockstore: %s is not under the blockstore's path %s", p, root)
	}
	st, err := os.Stat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, fmt.Errorf("blockstore: %s: %w", p, audit.ErrNotStored)
	}
	if err != nil {
		return 0, fmt.Errorf("blockstore: %w", err)
	}
	if !st.Mode().IsRegular() {
		return 0, fmt.Errorf("blockstore: %s is not a regular file", p)
	}
	return st.Size(), nil
}
