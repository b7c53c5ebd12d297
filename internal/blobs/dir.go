package blobs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"mime"
	"os"
	"path"
	"path/filepath"
	"syscall"
	"time"
)

// Local files: each file is stored at <root>/<key>, its content type in a sidecar
// <root>/<key>.attrs (a JSON object whose "user.content_type" names it: the layout
// gocloud.dev's fileblob wrote, so data folders made by earlier versions stay readable).
//
// A write goes to a fresh file under <root>/.tmp and is renamed (or, for Create, hard
// linked) into place, so a reader never sees half a file. A crash mid-write can leave a
// file only under .tmp, and opening the folder removes the stale ones there: nothing
// partial lingers.
// Keys never start a segment with a dot (CheckKey), so .tmp is never a key.
//
// Folders are created 0700 and files 0600: stored files are account data, readable by
// the service's own user only.

const (
	attrsSuffix = ".attrs"
	tmpDirName  = ".tmp"
	dirPerm     = 0o700
	filePerm    = 0o600
)

type dirBackend struct {
	root string
	tmp  string
}

type dirAttrs struct {
	ContentType string `json:"user.content_type"`
}

func openDir(dir string) (*dirBackend, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("blobs: %w", err)
	}
	if err := os.MkdirAll(abs, dirPerm); err != nil {
		return nil, fmt.Errorf("blobs: %w", err)
	}
	d := &dirBackend{root: abs, tmp: filepath.Join(abs, tmpDirName)}
	if err := os.MkdirAll(d.tmp, dirPerm); err != nil {
		return nil, fmt.Errorf("blobs: %w", err)
	}
	d.sweep(time.Now())
	return d, nil
}

// staleTmpAge is how old a file under .tmp must be before opening the folder removes
// it. A write in progress keeps touching its file; one untouched this long belongs to a
// process that died mid-write. (Not "everything": several processes may share a folder,
// and another one's write may be under way.)
const staleTmpAge = time.Hour

// sweep removes the temporary files that writes which never finished left behind.
func (d *dirBackend) sweep(now time.Time) {
	entries, err := os.ReadDir(d.tmp)
	if err != nil {
		return
	}
	for _, e := range entries {
		info, err := e.Info()
		if err == nil && now.Sub(info.ModTime()) > staleTmpAge {
			_ = os.RemoveAll(filepath.Join(d.tmp, e.Name()))
		}
	}
}

func (d *dirBackend) path(key string) string { return filepath.Join(d.root, filepath.FromSlash(key)) }

// writeTemp copies r into a new file under .tmp, synced, and returns its name and size.
func (d *dirBackend) writeTemp(ctx context.Context, r io.Reader) (string, int64, error) {
	f, err := os.CreateTemp(d.tmp, "put-*")
	if err != nil {
		return "", 0, err
	}
	name := f.Name()
	n, err := io.Copy(f, ctxReader{ctx: ctx, r: r})
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(name)
		return "", 0, err
	}
	return name, n, nil
}

func (d *dirBackend) writeAttrs(key, contentType string) error {
	data, _ := json.Marshal(dirAttrs{ContentType: contentType})
	f, err := os.CreateTemp(d.tmp, "attrs-*")
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), d.path(key)+attrsSuffix)
	}
	if err != nil {
		_ = os.Remove(f.Name())
	}
	return err
}

func (d *dirBackend) put(ctx context.Context, key, contentType string, r io.Reader, exclusive bool) (Info, error) {
	final := d.path(key)
	if err := os.MkdirAll(filepath.Dir(final), dirPerm); err != nil {
		return Info{}, err
	}
	if exclusive {
		if _, err := os.Lstat(final); err == nil {
			return Info{}, ErrExists // cheap early refusal; the link below decides
		}
	}
	tmp, n, err := d.writeTemp(ctx, r)
	if err != nil {
		return Info{}, err
	}
	defer os.Remove(tmp) // after a rename or link this is a no-op or drops the extra name
	if exclusive {
		// link(2) fails when the name exists: exactly one Create of a key wins, and only
		// the winner writes the attributes (a loser must not relabel the winner's file).
		if err := os.Link(tmp, final); err != nil {
			if errors.Is(err, fs.ErrExist) {
				return Info{}, ErrExists
			}
			return Info{}, err
		}
		if err := d.writeAttrs(key, contentType); err != nil {
			_ = os.Remove(final)
			return Info{}, err
		}
	} else {
		// The attributes go first: a replaced file never shows another's content type
		// for long. A crash between the two leaves an attrs file with no data, which
		// reads as absent.
		if err := d.writeAttrs(key, contentType); err != nil {
			return Info{}, err
		}
		if err := os.Rename(tmp, final); err != nil {
			return Info{}, err
		}
	}
	return Info{ContentType: contentType, Size: n, ModTime: time.Now().UTC()}, nil
}

// contentType reads the sidecar; without one (the moment between a Create's link and
// its attributes) the key's extension decides.
func (d *dirBackend) contentType(key string) string {
	data, err := os.ReadFile(d.path(key) + attrsSuffix)
	if err != nil {
		return mime.TypeByExtension(path.Ext(key))
	}
	var a dirAttrs
	_ = json.Unmarshal(data, &a)
	return a.ContentType
}

func (d *dirBackend) open(_ context.Context, key string) (io.ReadCloser, Info, error) {
	f, err := os.Open(d.path(key))
	if err != nil {
		return nil, Info{}, notFound(err)
	}
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() {
		f.Close()
		return nil, Info{}, ErrNotFound
	}
	return f, Info{ContentType: d.contentType(key), Size: st.Size(), ModTime: st.ModTime().UTC()}, nil
}

func (d *dirBackend) stat(_ context.Context, key string) (Info, error) {
	st, err := os.Stat(d.path(key))
	if err != nil {
		return Info{}, notFound(err)
	}
	if !st.Mode().IsRegular() {
		return Info{}, ErrNotFound
	}
	return Info{ContentType: d.contentType(key), Size: st.Size(), ModTime: st.ModTime().UTC()}, nil
}

func (d *dirBackend) delete(_ context.Context, key string) error {
	if err := os.Remove(d.path(key)); err != nil {
		return notFound(err)
	}
	_ = os.Remove(d.path(key) + attrsSuffix)
	return nil
}

func (d *dirBackend) close() error { return nil }

func notFound(err error) error {
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return ErrNotFound
	}
	return err
}

// ctxReader stops a copy when ctx ends (a client that hangs up mid-upload).
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}
