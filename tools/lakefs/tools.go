//go:build tools

// Package tools pins the lakeFS server and lakectl so that the embedded
// stack can build them from the lakeFS Go module at a fixed version.
package tools

import (
	_ "github.com/treeverse/lakefs/cmd/lakectl"
	_ "github.com/treeverse/lakefs/cmd/lakefs"
	_ "github.com/treeverse/lakefs/contrib/auth/acl/cmd/acl"
)
