package image

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
)

// File is one regular file of an image's flattened filesystem.
type File struct {
	Mode     os.FileMode
	UID, GID int
	Size     int64
}

// Summary is what the checks look at in one platform's image.
type Summary struct {
	Platform   v1.Platform
	Digest     v1.Hash
	Config     v1.Config
	Compressed int64 // config and layers as a node downloads them
	Files      map[string]File
	// Executables are the regular files with any execute bit set.
	Executables []string
}

// Summarize reads one image: its config, its compressed size and the files of
// its flattened filesystem (names without a leading slash).
func Summarize(img v1.Image) (Summary, error) {
	var s Summary
	var err error
	if s.Digest, err = img.Digest(); err != nil {
		return s, err
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return s, err
	}
	s.Config = cfg.Config
	s.Platform = v1.Platform{OS: cfg.OS, Architecture: cfg.Architecture, Variant: cfg.Variant}
	m, err := img.Manifest()
	if err != nil {
		return s, err
	}
	s.Compressed = m.Config.Size
	for _, l := range m.Layers {
		s.Compressed += l.Size
	}
	s.Files = map[string]File{}
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return s, err
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		name := strings.TrimPrefix(path.Clean("/"+h.Name), "/")
		f := File{Mode: h.FileInfo().Mode(), UID: h.Uid, GID: h.Gid, Size: h.Size}
		s.Files[name] = f
		if f.Mode&0o111 != 0 {
			s.Executables = append(s.Executables, name)
		}
	}
	return s, nil
}

// ReadFile returns one file of an image's flattened filesystem.
func ReadFile(img v1.Image, name string) ([]byte, error) {
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	want := strings.TrimPrefix(path.Clean("/"+name), "/")
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%s: not in the image", name)
		}
		if err != nil {
			return nil, err
		}
		if strings.TrimPrefix(path.Clean("/"+h.Name), "/") == want && h.Typeflag == tar.TypeReg {
			return io.ReadAll(tr)
		}
	}
}

// Export writes an image's flattened filesystem under dir (which must be
// empty or missing), as a container runtime unpacks it: modes, owners and
// symlinks as in the layers. It needs root to set owners other than its own.
func Export(img v1.Image, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	type dirMode struct {
		path string
		mode os.FileMode
	}
	var dirs []dirMode
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		clean := path.Clean("/" + h.Name)
		if clean == "/" {
			continue
		}
		target := filepath.Join(dir, filepath.FromSlash(clean))
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			return err
		}
		mode := h.FileInfo().Mode()
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(target, 0o700); err != nil {
				return err
			}
			// Modes last: a read-only directory must still take its files.
			dirs = append(dirs, dirMode{target, mode})
		case tar.TypeReg:
			f, err := os.OpenFile(target, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
			if err != nil {
				return err
			}
			_, err = io.Copy(f, tr)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return err
			}
			if err := os.Chmod(target, mode.Perm()|mode&(os.ModeSetuid|os.ModeSetgid|os.ModeSticky)); err != nil {
				return err
			}
		case tar.TypeSymlink:
			if err := os.Symlink(h.Linkname, target); err != nil {
				return err
			}
		case tar.TypeLink:
			src := filepath.Join(dir, filepath.FromSlash(path.Clean("/"+h.Linkname)))
			if err := os.Link(src, target); err != nil {
				return err
			}
		default:
			return fmt.Errorf("%s: unexpected tar entry type %q", h.Name, h.Typeflag)
		}
		if err := os.Lchown(target, h.Uid, h.Gid); err != nil {
			return err
		}
	}
	for i := len(dirs) - 1; i >= 0; i-- {
		d := dirs[i]
		if err := os.Chmod(d.path, d.mode.Perm()|d.mode&(os.ModeSetuid|os.ModeSetgid|os.ModeSticky)); err != nil {
			return err
		}
	}
	return nil
}

// PlatformImage returns the image of platform p in idx.
func PlatformImage(idx v1.ImageIndex, p v1.Platform) (v1.Image, error) {
	m, err := idx.IndexManifest()
	if err != nil {
		return nil, err
	}
	for _, d := range m.Manifests {
		if d.Platform != nil && d.Platform.OS == p.OS && d.Platform.Architecture == p.Architecture {
			return idx.Image(d.Digest)
		}
	}
	return nil, fmt.Errorf("no %s image in the index", p)
}
