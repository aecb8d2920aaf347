package audit

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// DirSource is a Source over local directories instead of lakeFS: the
// objects of ref are the files under Root/<ref>/ (lakewap audit -local).
// An object's checksum and address stand for its path, size and
// modification time, so the engine's download cache keeps a copy while the
// file is unchanged.
type DirSource struct{ Root string }

// List returns the files under prefix at ref; a ref without a directory has none.
func (s DirSource) List(ctx context.Context, repo, ref, prefix string) ([]Object, error) {
	dir, err := s.refDir(ref)
	if err != nil {
		return nil, err
	}
	var out []Object
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || ctx.Err() != nil {
			return ctx.Err()
		}
		rel, _ := filepath.Rel(dir, p)
		if rel = filepath.ToSlash(rel); !strings.HasPrefix(rel, prefix) {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		// A version stamp, not a content hash: enough for the download
		// cache to reuse its copy while the file is unchanged.
		stamp := sha256.Sum256([]byte(fmt.Sprintf("%s\x00%d\x00%d", p, info.Size(), info.ModTime().UnixNano())))
		v := hex.EncodeToString(stamp[:16])
		out = append(out, Object{Path: rel, Size: info.Size(), Checksum: v, Address: "file://" + filepath.ToSlash(p) + "?v=" + v})
		return nil
	})
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, err
}

// Changed returns the files under prefix at ref that base lacks or has
// with other content.
func (s DirSource) Changed(ctx context.Context, repo, base, ref, prefix string) ([]Object, error) {
	objs, err := s.List(ctx, repo, ref, prefix)
	if err != nil {
		return nil, err
	}
	var out []Object
	for _, o := range objs {
		a, err := s.sum(ref, o.Path)
		if err != nil {
			return nil, err
		}
		b, err := s.sum(base, o.Path)
		if errors.Is(err, fs.ErrNotExist) || err == nil && a != b {
			out = append(out, o)
		} else if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Download copies the file of path at ref to w.
func (s DirSource) Download(ctx context.Context, repo, ref, path string, w io.Writer) error {
	f, err := s.open(ref, path)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = io.Copy(w, f)
	return err
}

func (s DirSource) refDir(ref string) (string, error) {
	if ref == "" || strings.ContainsAny(ref, `/\`) || ref == "." || ref == ".." {
		return "", errors.New("local ref " + ref + " is not a directory name")
	}
	return filepath.Join(s.Root, ref), nil
}

func (s DirSource) open(ref, path string) (*os.File, error) {
	dir, err := s.refDir(ref)
	if err != nil {
		return nil, err
	}
	if !filepath.IsLocal(filepath.FromSlash(path)) {
		return nil, errors.New("object path " + path + " leaves the ref's directory")
	}
	return os.Open(filepath.Join(dir, filepath.FromSlash(path)))
}

func (s DirSource) sum(ref, path string) (string, error) {
	f, err := s.open(ref, path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
